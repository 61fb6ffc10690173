/**
 * Drives the real `crank serve` from Node with the same CrankClient the extension uses,
 * against the project's loopback model server (tests/support/model_server.py), over
 * real stdio and real HTTP. Off by default: test.sh runs it only with CRANK_INTEGRATION=1
 * (the server is being built in parallel). Needs CRANK_PYTHON, a Python with crank.
 *
 * The model server's script is {"replies": [{text?, toolCalls?: [{id?, name, arguments}]}]}
 * (see the docstring of tests/support/model_server.py), served one reply per request.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import type { MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient } from "../../src/protocol/client";
import { answerServerRequests, initializeCrank, loopbackOptions, startCrankServe, startModelServer, stopServers } from "../e2e/harness";
import type { CrankEvent, EventParams, PermissionRequest } from "../../src/protocol/types";

let tmp = "";
let conn: MessageConnection;
let crank: CrankClient;
let workspace = "";
const events: EventParams[] = [];
const permissions: PermissionRequest[] = [];
let stderr = "";

type Block = { type: "text"; text: string } | { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> };
const text = (t: string): Block => ({ type: "text", text: t });
const bash = (id: string, command: string): Block => ({ type: "toolCall", id, name: "bash", arguments: { command } });

/** Replies in the order the agent will ask for them across all the tests below. */
function script(): unknown {
  const replies: Block[][] = [
    // 1. prompt: a bash call, then a final answer
    [text("Running it."), bash("c1", "echo hello-from-bash")],
    [text("The command printed hello-from-bash.")],
    // 2. steer: a slow command, during which the client steers; then two answers
    [bash("c2", "sleep 2; echo slept")],
    [text("Steered: saying hi.")],
    // 3. abort: a command that would take long
    [bash("c3", "sleep 30")],
    [text("never reached")],
  ];
  return {
    replies: replies.map((content) => {
      const said = content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("");
      const toolCalls = content
        .filter((b) => b.type === "toolCall")
        .map((b) => {
          const call = b as { id: string; name: string; arguments: Record<string, unknown> };
          return { id: call.id, name: call.name, arguments: call.arguments };
        });
      return { ...(said ? { text: said } : {}), ...(toolCalls.length ? { toolCalls } : {}) };
    }),
  };
}

/** The first event from index `from` on that matches; a hang guard (not a speed check) fails after 60 s. */
function waitFor(pred: (e: CrankEvent, p: EventParams) => boolean, from = 0): Promise<EventParams> {
  const deadline = Date.now() + 60_000;
  return new Promise((resolve, reject) => {
    const check = () => {
      const hit = events.slice(from).find((p) => pred(p.event, p));
      if (hit) resolve(hit);
      else if (Date.now() > deadline)
        reject(new Error(`event never came; saw ${events.slice(from).map((p) => p.event.type).join(", ")}\nserver log:\n${stderr.slice(-4000)}`));
      else setTimeout(check, 20);
    };
    check();
  });
}

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "crank-int-"));
  const ws = path.join(tmp, "project");
  rmSync(ws, { recursive: true, force: true });
  mkdirSync(ws);
  writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a - b\n");
  const scriptFile = path.join(tmp, "script.json");
  writeFileSync(scriptFile, JSON.stringify(script()));
  const port = await startModelServer(scriptFile, (d) => (stderr += d));

  conn = startCrankServe(ws, (d) => (stderr += d));
  crank = new CrankClient(conn);
  crank.onEvent((p) => events.push(p));
  crank.onPermissionRequest(async (p) => {
    permissions.push(p);
    return { decision: "allowSession" };
  });
  answerServerRequests(conn);
  conn.listen();
  workspace = pathToFileURL(ws).toString();
  const init = await initializeCrank(conn, ws, loopbackOptions(port, tmp, { trusted: true, permissionMode: "ask" }));
  assert.equal(init.serverInfo?.name, "crank");
  assert.equal(init.capabilities.experimental.crank.protocolVersion, 1);
});

after(async () => {
  await stopServers(conn);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("prompt streams text, runs a permitted bash call with a tool card's data, and settles once", async () => {
  const from = events.length;
  const res = await crank.prompt({ workspace, text: "run echo" });
  assert.ok(res.sessionId && res.runId, `accepted with ids: ${JSON.stringify(res)}`);
  await waitFor((e) => e.type === "agent_settled", from);
  const mine = events.slice(from).filter((p) => p.runId === res.runId || p.runId === undefined);
  const start = mine.find((p) => p.event.type === "tool_execution_start")!.event as Extract<CrankEvent, { type: "tool_execution_start" }>;
  assert.equal(start.toolName, "bash");
  assert.equal(start.arguments.command, "echo hello-from-bash");
  const end = mine.find((p) => p.event.type === "tool_execution_end")!.event as Extract<CrankEvent, { type: "tool_execution_end" }>;
  assert.match(end.result.content, /hello-from-bash/);
  assert.equal(end.result.isError, false);
  assert.equal(permissions.at(-1)?.toolName, "bash");
  const deltas = mine.filter((p) => p.event.type === "message_update" && p.event.delta.kind === "text").map((p) => (p.event as any).delta.text).join("");
  assert.match(deltas, /hello-from-bash\./);
  assert.equal(mine.filter((p) => p.event.type === "agent_settled").length, 1);
  const seqs = mine.map((p) => p.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "seq strictly increases");
  const { messages } = await crank.messages({ workspace });
  assert.equal(messages[0].role, "user");
});

test("steering while a command runs is queued, reported, and enters the transcript", async () => {
  const from = events.length;
  await crank.prompt({ workspace, text: "sleep a bit" });
  await waitFor((e) => e.type === "tool_execution_start", from);
  const queued = await crank.prompt({ workspace, text: "then say hi", whileRunning: "steer" });
  assert.equal(queued.queued, "steer");
  await waitFor((e) => e.type === "queue_update" && e.steering.includes("then say hi"), from);
  await waitFor((e) => e.type === "agent_settled", from);
  const { messages } = await crank.messages({ workspace });
  assert.ok(messages.some((m) => m.role === "user" && m.content === "then say hi"));
});

test("abort stops a long command and answers only after agent_settled", async () => {
  const from = events.length;
  await crank.prompt({ workspace, text: "wait long" });
  await waitFor((e) => e.type === "tool_execution_start", from);
  const res = await crank.abort({ workspace });
  assert.equal(res.stopReason, "aborted");
  assert.ok(events.slice(from).some((p) => p.event.type === "agent_settled"), "agent_settled before the abort response");
  const state = await crank.state({ workspace });
  assert.equal(state.running, false);
});

test("crank/commands lists the built-ins; /model answers {command, result} with no run; an unknown /name is refused with the list", async () => {
  const { commands } = await crank.commands({ workspace });
  const builtins = commands.filter((c) => c.kind === "builtin").map((c) => c.name);
  assert.deepEqual(builtins, ["compact", "model", "new", "undo"]);
  assert.ok(commands.every((c) => !c.name.startsWith("/") && typeof c.description === "string"), JSON.stringify(commands));
  const from = events.length;
  const res = await crank.prompt({ workspace, text: "/model" });
  assert.equal(res.command, "model");
  assert.equal(res.runId, undefined, "a built-in starts no run");
  assert.ok(Array.isArray((res.result as { models?: unknown }).models), JSON.stringify(res));
  assert.ok(!events.slice(from).some((p) => p.event.type === "agent_start"));
  await assert.rejects(crank.prompt({ workspace, text: "/nosuch-int x" }), (err: Error) => /nosuch-int/.test(err.message) && /\/compact/.test(err.message));
});
