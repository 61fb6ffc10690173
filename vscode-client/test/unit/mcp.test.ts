import { test } from "node:test";
import assert from "node:assert/strict";
import { MCP_ACTIONS, mcpRows, runMcpAction, type McpClient } from "../../src/chat/mcp";
import { parseViewMessage } from "../../src/chat/protocol";
import { initialState, reduce } from "../../src/chat/state";
import type { McpServerState, StateResult } from "../../src/protocol/types";

const everything: McpServerState = { name: "everything", source: "editor", transport: "stdio", state: "ready", tools: ["mcp__everything__add", "mcp__everything__echo"], pid: 4242 };

test("the MCP line: a ready server is running with Restart and Disable; disabled has Enable; starting only Disable", () => {
  const [ready, off, starting] = mcpRows([everything, { ...everything, name: "off", state: "disabled", tools: [], pid: undefined }, { ...everything, name: "slow", state: "starting", tools: [] }]);
  assert.equal(ready.label, "running");
  assert.equal(ready.detail, "2 tools · editor");
  assert.equal(ready.pid, 4242);
  assert.match(ready.title, /pid 4242/);
  assert.deepEqual(ready.actions.map((a) => a.action), ["restart", "disable"]);
  assert.deepEqual(off.actions.map((a) => a.label), ["Enable"]);
  assert.equal(off.pid, undefined);
  assert.deepEqual(starting.actions.map((a) => a.action), ["disable"]);
  assert.deepEqual(mcpRows(undefined), []);
});

test("a failed server's row: the error's first line, the stderr tail the server kept after it, and Restart", () => {
  const error = "MCP server 'odd' exited (status 3); its stderr ends with:\nTraceback (most recent call last):\nRuntimeError: boom (restarting in 1 s)";
  const [row] = mcpRows([{ ...everything, name: "odd", state: "failed", tools: [], pid: undefined, error }]);
  assert.equal(row.label, "failed");
  assert.equal(row.error, "MCP server 'odd' exited (status 3); its stderr ends with:");
  assert.equal(row.stderr, "Traceback (most recent call last):\nRuntimeError: boom (restarting in 1 s)");
  assert.deepEqual(row.actions.map((a) => a.label), ["Restart", "Disable"]);
  const [plain] = mcpRows([{ ...everything, state: "failed", error: "not found" }]);
  assert.equal(plain.error, "not found");
  assert.equal(plain.stderr, undefined);
});

test("the page's mcpServer request is checked: a name and one of the actions crank/mcpServer takes", () => {
  for (const action of MCP_ACTIONS) assert.deepEqual(parseViewMessage({ type: "mcpServer", name: "everything", action }), { type: "mcpServer", name: "everything", action });
  for (const bad of [{ type: "mcpServer", name: "everything", action: "kill" }, { type: "mcpServer", name: "", action: "restart" }, { type: "mcpServer", action: "restart" }, { type: "mcpServer", name: 3, action: "restart" }]) {
    assert.equal(parseViewMessage(bad), undefined, JSON.stringify(bad));
  }
});

// A stand-in for the extension's CrankClient: runMcpAction's own logic (what the page is
// told for an answer and for a refusal) is what is tested here; the request itself runs
// against a real crank serve in the e2e suite ("MCP in the chat").
function client(answer: () => Promise<{ servers: McpServerState[] }>): McpClient & { calls: unknown[] } {
  const calls: unknown[] = [];
  return { calls, mcpServer: (t) => (calls.push(t), answer()) };
}

test("the host sends crank/mcpServer and passes the answer's servers on; the page's line takes them", async () => {
  const c = client(async () => ({ servers: [{ ...everything, state: "disabled", tools: [], pid: undefined }] }));
  const action = await runMcpAction(c, "file:///w", "everything", "disable");
  assert.deepEqual(c.calls, [{ workspace: "file:///w", name: "everything", action: "disable" }]);
  assert.equal(action.type, "mcp");
  const s = reduce({ ...initialState(), mcp: [everything] }, action);
  assert.deepEqual(s.mcp?.map((m) => m.state), ["disabled"]);
});

test("a refused crank/mcpServer is an error line naming the server and the action", async () => {
  const c = client(async () => {
    throw Object.assign(new Error("no MCP server 'gone' here; known: everything"), { code: -32602 });
  });
  const action = await runMcpAction(c, undefined, "gone", "restart");
  assert.deepEqual(action, { type: "notice", level: "error", text: "MCP server gone: restart failed: no MCP server 'gone' here; known: everything" });
});

test("crank/state without mcp (none configured here) empties the line: another folder's servers are not shown", () => {
  const base: StateResult = { sessionId: "s", running: false, model: { api: "openai", id: "m" }, permissionMode: "ask", trusted: true, queue: { steering: [], followUp: [] }, sessionFile: "/s.jsonl" } as unknown as StateResult;
  let s = reduce(initialState(), { type: "state", state: { ...base, mcp: [everything] } });
  assert.equal(s.mcp?.length, 1);
  s = reduce(s, { type: "state", state: base });
  assert.deepEqual(s.mcp, []);
});
