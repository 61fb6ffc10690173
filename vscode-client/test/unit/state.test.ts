import { test } from "node:test";
import assert from "node:assert/strict";
import { contextFraction, initialState, itemsFromMessages, pendingPermissions, persistable, reduce, restoredState, sandboxLine, SAVED_ITEMS, type AssistantItem, type ChatState, type PermissionItem, type ToolItem } from "../../src/chat/state";
import type { CrankEvent, EventParams, Message, PermissionRequest } from "../../src/protocol/types";
import { eventsOf, loadRun } from "./fixture";

const run = loadRun();
const feed = (s: ChatState, evs: EventParams[]) => evs.reduce((acc, params) => reduce(acc, { type: "event", params }), s);
const at = (seq: number, event: CrankEvent, sessionId = run.sessionId): EventParams => ({ workspace: run.workspace, sessionId, runId: "r", seq, event });

test("a recorded run becomes user, assistant, tool, notice and edit items in order", () => {
  const s = feed(initialState(), eventsOf(run.untilPermission));
  assert.deepEqual(
    s.items.map((i) => i.kind),
    ["user", "assistant", "tool", "notice", "assistant", "tool"],
  );
  const bash = s.items[2] as ToolItem;
  assert.equal(bash.name, "bash");
  assert.equal(bash.status, "failed");
  assert.match(bash.output, /FAILED test_calc.py::test_add/);
  const edit = s.items[5] as ToolItem;
  assert.equal(edit.status, "running");
  assert.deepEqual(edit.edit?.path, "calc.py");
  assert.equal(s.running, true);
  assert.equal(s.usage?.contextTokens, 11117);
  assert.equal(s.gap, false);
  assert.match((s.items[3] as { text: string }).text, /Retrying \(attempt 1\).*529/);
});

test("deltas stream into the open assistant bubble and message_end gives the final blocks", () => {
  const evs = eventsOf(run.untilPermission);
  const firstEnd = evs.findIndex((p) => p.event.type === "message_end" && p.event.message.role === "assistant");
  const mid = feed(initialState(), evs.slice(0, firstEnd - 1));
  const open = mid.items[mid.items.length - 1] as AssistantItem;
  assert.equal(open.streaming, true);
  const thinking = open.blocks[0];
  assert.equal(thinking.type === "thinking" && thinking.thinking, "The user says add() is wrong. Run the tests first to see the failure.");
  const done = feed(mid, evs.slice(firstEnd - 1, firstEnd + 1));
  const closed = done.items.find((i) => i.kind === "assistant") as AssistantItem;
  assert.equal(closed.streaming, false);
  assert.equal(closed.blocks.length, 3);
  assert.ok(done.items.some((i) => i.kind === "tool" && i.id === "call_bash_1"));
});

test("an item the event did not touch keeps its identity (so the view redraws only one bubble)", () => {
  const evs = eventsOf(run.untilPermission);
  const before = feed(initialState(), evs.slice(0, 8));
  const after = reduce(before, { type: "event", params: evs[8] });
  assert.equal(after.items[0], before.items[0]);
});

test("a duplicate seq is ignored and a skipped seq raises the gap flag", () => {
  const s1 = feed(initialState(), [at(0, { type: "agent_start" }), at(1, { type: "turn_start", turn: 1 })]);
  assert.equal(reduce(s1, { type: "event", params: at(1, { type: "agent_settled" }) }), s1);
  const s2 = reduce(s1, { type: "event", params: at(5, { type: "turn_start", turn: 2 }) });
  assert.equal(s2.gap, true);
  const s3 = reduce(s2, { type: "transcript", messages: [], sessionId: run.sessionId });
  assert.equal(s3.gap, false);
});

test("events of another session do not leak into the chat", () => {
  const s1 = feed(initialState(), [at(0, { type: "agent_start" })]);
  const s2 = reduce(s1, { type: "event", params: at(1, { type: "message_start", message: { role: "user", timestamp: 0, content: "other" } }, "s-other") });
  assert.equal(s2, s1);
});

test("a /command's user message shows what was typed, not its expansion, streamed and replayed", () => {
  const message = { role: "user" as const, timestamp: 0, content: '<skill name="review">SKILL BODY</skill>\n\nsrc/', typed: "/skill:review src/" };
  const s = feed(initialState(), [at(0, { type: "agent_start" }), at(1, { type: "message_start", message }), at(2, { type: "message_end", message })]);
  const users = s.items.filter((i) => i.kind === "user");
  assert.deepEqual(users.map((u) => (u as { text: string }).text), ["/skill:review src/"], "one bubble, as typed");
  assert.deepEqual(itemsFromMessages([message]).map((i) => (i as { text: string }).text), ["/skill:review src/"]);
  assert.deepEqual(itemsFromMessages([{ role: "user", timestamp: 0, content: "plain" }]).map((i) => (i as { text: string }).text), ["plain"]);
});

test("agent_settled ends the run and marks a tool that never finished as interrupted", () => {
  const s = feed(initialState(), [...eventsOf(run.untilPermission), at(1000, { type: "agent_settled" })]);
  assert.equal(s.running, false);
  const edit = s.items.find((i) => i.kind === "tool" && i.id === "call_edit_1") as ToolItem;
  assert.equal(edit.status, "failed");
  assert.equal(edit.result, "(interrupted)");
});

test("compaction and a failed compaction are both shown", () => {
  const s = feed(initialState(), [
    at(0, { type: "compaction_start", reason: "threshold" }),
    at(1, { type: "compaction_end", compacted: true }),
    at(2, { type: "compaction_start", reason: "overflow" }),
    at(3, { type: "compaction_end", compacted: false, error: "summary request failed" }),
  ]);
  const texts = s.items.map((i) => (i.kind === "notice" ? `${i.level}:${i.text}` : ""));
  assert.match(texts[1], /^info:.*compacted/);
  assert.match(texts[3], /^error:.*summary request failed/);
  assert.equal(s.compacting, false);
});

test("a transcript from crank/messages pairs each tool result with its card and keeps the stop reason", () => {
  const messages: Message[] = [
    { role: "user", timestamp: 0, content: "hi" },
    { role: "assistant", timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "text", text: "Reading." }, { type: "toolCall", id: "c1", name: "read", arguments: { path: "a.py" } }], stopReason: "toolUse" },
    { role: "toolResult", timestamp: 0, toolCallId: "c1", toolName: "read", content: "print(1)", isError: false },
    { role: "assistant", timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "text", text: "Long answer" }], stopReason: "length" },
  ];
  const items = itemsFromMessages(messages);
  assert.deepEqual(items.map((i) => i.kind), ["user", "assistant", "tool", "assistant"]);
  const tool = items[2] as ToolItem;
  assert.equal(tool.status, "done");
  assert.equal(tool.result, "print(1)");
  assert.equal((items[3] as AssistantItem).stopReason, "length");
});

test("a transcript's cards: one per call id (its first call's), a failed result marks it, a result with no card is left out", () => {
  const usage = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  const reply = (...ids: string[]): Message => ({ role: "assistant", timestamp: 0, model: "m", usage, content: ids.map((id) => ({ type: "toolCall" as const, id, name: "bash", arguments: { command: id } })), stopReason: "toolUse" });
  const result = (id: string, content: string, isError = false): Message => ({ role: "toolResult", timestamp: 0, toolCallId: id, toolName: "bash", content, isError });
  const items = itemsFromMessages([
    { role: "user", timestamp: 0, content: "go" },
    reply("c1", "c2"),
    result("c2", "two", true),
    result("c1", "one"),
    result("nobody", "orphan"),
    reply("c1"),
    result("c1", "again"),
  ]);
  assert.deepEqual(items.map((i) => `${i.kind}:${i.id}`), ["user:m0", "assistant:m1", "tool:c1", "tool:c2", "assistant:m5"]);
  const [one, two] = [items[2] as ToolItem, items[3] as ToolItem];
  assert.deepEqual([one.status, one.result, one.args], ["done", "again", { command: "c1" }]);
  assert.deepEqual([two.status, two.result], ["failed", "two"]);
});

test("permission cards are pending until resolved, and a dead server closes them", () => {
  const req = run.untilPermission.find((s) => "request" in s)!.params as never;
  let s = reduce(initialState(), { type: "permissionRequest", id: "p1", request: req });
  s = reduce(s, { type: "permissionRequest", id: "p2", request: req });
  assert.equal(pendingPermissions(s).length, 2);
  s = reduce(s, { type: "permissionResolved", id: "p1", decision: "allowSession" });
  assert.deepEqual(pendingPermissions(s).map((p) => p.id), ["p2"]);
  s = reduce(s, { type: "server", status: "down", message: "exited" });
  assert.equal(pendingPermissions(s).length, 0);
  assert.equal(s.server.status, "down");
});

test("queue_update and usage_update feed the queue list and the meter", () => {
  const s = feed(initialState(), [
    at(0, { type: "queue_update", steering: ["a"], followUp: ["b", "c"] }),
    at(1, { type: "usage_update", contextTokens: 150000, contextWindow: 200000, input: 1, output: 2, cacheRead: 3, cacheWrite: 4, cost: 1.5 }),
  ]);
  assert.deepEqual(s.queue, { steering: ["a"], followUp: ["b", "c"] });
  assert.equal(contextFraction(s), 0.75);
  assert.equal(contextFraction(initialState()), undefined);
});

test("session_changed empties the chat and asks for a re-read", () => {
  const s1 = feed(initialState(), eventsOf(run.untilPermission));
  const s2 = reduce(s1, { type: "event", params: at(999, { type: "session_changed", sessionId: "s-new" }) });
  assert.equal(s2.sessionId, "s-new");
  assert.equal(s2.items.length, 0);
  assert.equal(s2.gap, true);
});

test("agent_settled closes the open questions of its own run, not another run's", () => {
  const req = run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest;
  let s = reduce(initialState(), { type: "permissionRequest", id: "p1", request: { ...req, runId: "r" } });
  s = reduce(s, { type: "permissionRequest", id: "p2", request: { ...req, runId: "other" } });
  s = reduce(s, { type: "event", params: at(0, { type: "agent_settled" }) });
  assert.deepEqual(pendingPermissions(s).map((p) => p.id), ["p2"]);
  const closed = s.items.find((i) => i.kind === "permission" && i.id === "p1") as PermissionItem;
  assert.equal(closed.withdrawn, true);
  // A late answer for a withdrawn card does not rewrite what it says.
  s = reduce(s, { type: "permissionResolved", id: "p1", decision: "allow" });
  assert.equal((s.items.find((i) => i.kind === "permission" && i.id === "p1") as PermissionItem).decision, "reject");
});

test("a reloaded page shows each open question once and closes cards the host no longer holds", () => {
  const req = run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest;
  let s = reduce(initialState(), { type: "permissionRequest", id: "old-1", request: req });
  s = reduce(s, { type: "permissionRequest", id: "new-1", request: req });
  s = reduce(s, { type: "permissionsOpen", ids: ["new-1"] });
  s = reduce(s, { type: "permissionRequest", id: "new-1", request: req });
  assert.equal(s.items.filter((i) => i.kind === "permission").length, 2);
  assert.deepEqual(pendingPermissions(s).map((p) => p.id), ["new-1"]);
});

test("re-reading the transcript (resync after a gap) keeps the card of an open question", () => {
  const req = run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest;
  let s = feed(initialState(), eventsOf(run.untilPermission));
  s = reduce(s, { type: "permissionRequest", id: "p1", request: req });
  s = reduce(s, { type: "transcript", messages: [{ role: "user", content: "fix add", timestamp: 1 }] });
  assert.deepEqual(s.items.map((i) => i.kind), ["user", "permission"]);
  assert.deepEqual(pendingPermissions(s).map((p) => p.id), ["p1"]);
});

test("a page restored on another session keeps an open question when the state names the server's session", () => {
  // A cold start: the page comes back with the session of the last window, the fix's run
  // asks before the first crank/state answer arrives, and that answer names a new session.
  const req = run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest;
  const state = (sessionId: string) => ({ type: "state" as const, state: { sessionId, running: false, model: { api: "a", id: "m" }, permissionMode: "ask" as const, trusted: true, sandbox: { mode: "off" as const, network: true, available: false, confined: false, detail: "" }, queue: { steering: [], followUp: [] }, usage: { contextTokens: 0, contextWindow: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }, sessionFile: "/s.jsonl", seq: 0 } });
  let s = feed(reduce(initialState(), state("last-window")), eventsOf(run.untilPermission).map((p) => ({ ...p, sessionId: "last-window" })));
  s = reduce(s, { type: "permissionRequest", id: "p1", request: req });
  s = reduce(s, state("server-now"));
  assert.deepEqual(s.items.map((i) => i.kind), ["permission"], "the old session's items go, the open question stays");
  assert.deepEqual(pendingPermissions(s).map((p) => p.id), ["p1"]);
});

test("the sandbox line says plainly whether commands are confined", () => {
  const sb = { mode: "workspace-write" as const, network: false, available: true, confined: true, detail: "bubblewrap (/usr/bin/bwrap)" };
  assert.deepEqual(sandboxLine(sb), { text: "Sandbox: workspace-write, network off", level: "ok", title: sb.detail });
  const none = { ...sb, available: false, confined: false, detail: "bubblewrap (bwrap) is not installed" };
  assert.deepEqual(sandboxLine(none), { text: "No sandbox: every command asks first", level: "warning", title: none.detail });
  assert.equal(sandboxLine({ ...sb, mode: "off", confined: false })?.level, "warning");
  assert.equal(sandboxLine(undefined), undefined);
  const s = reduce(initialState(), { type: "state", state: { sessionId: "s", running: false, model: { api: "a", id: "m" }, permissionMode: "ask", trusted: true, sandbox: none, queue: { steering: [], followUp: [] }, usage: { contextTokens: 0, contextWindow: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }, sessionFile: "/s.jsonl", seq: 0 } });
  assert.deepEqual(s.sandbox, none);
});

test("an edit asked about shows its diff once: on the question, not on its own card, until answered", () => {
  const s0 = feed(initialState(), eventsOf(run.untilPermission));
  const edit = s0.items[5] as ToolItem;
  assert.ok(edit.edit, "the recorded run has an edit card");
  const req = { ...(run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest), toolCallId: edit.id };
  const asked = reduce(s0, { type: "permissionRequest", id: "p1", request: req });
  const card = (st: ChatState) => st.items.find((it) => it.kind === "tool" && it.id === edit.id) as ToolItem;
  assert.equal(card(asked).asked, true);
  const bash = asked.items[2];
  assert.equal(bash, s0.items[2], "a card the question is not about keeps its identity");
  const answered = reduce(asked, { type: "permissionResolved", id: "p1", decision: "allow" });
  assert.equal(card(answered).asked, false);
  const withdrawn = reduce(asked, { type: "server", status: "down" });
  assert.equal(card(withdrawn).asked, false, "a closed question gives the diff back to the edit card");
});

test("a reloaded page does not take its saved word that a server runs: it waits for the host's", () => {
  const before = feed(reduce(initialState(), { type: "server", status: "running" }), eventsOf(run.untilPermission));
  const loaded = restoredState(JSON.parse(JSON.stringify(persistable(before))));
  assert.equal(loaded.server.status, "starting", "Send and the run lists' buttons wait for the new server");
  assert.equal(loaded.items.length, before.items.length, "the chat itself comes back as it was");
  assert.equal(reduce(loaded, { type: "server", status: "running" }).server.status, "running");
});

test("a new server process counts seq from 0 again: after a page load or a restart its events are let in", () => {
  const before = feed(reduce(initialState(), { type: "server", status: "running" }), eventsOf(run.untilPermission));
  assert.ok(before.lastSeq > 5, "the old server's events raised lastSeq");
  // The page reloaded (a window reload starts a new server): its saved state comes back.
  const loaded = reduce(restoredState(before), { type: "event", params: at(1, { type: "agent_start" }, before.sessionId) });
  assert.equal(loaded.running, true, "the new server's first event is applied, not dropped as a duplicate");
  assert.equal(loaded.gap, false);
  // The server restarted under the same page: down, then running again.
  const restarted = reduce(reduce(before, { type: "server", status: "down" }), { type: "server", status: "running" });
  const started = reduce(restarted, { type: "event", params: at(1, { type: "agent_start" }, before.sessionId) });
  assert.equal(started.running, true);
  assert.equal(started.gap, false);
  // The same server said running again (every refresh says so) changes nothing.
  assert.equal(reduce(before, { type: "server", status: "running" }).lastSeq, before.lastSeq);
});

test("a crank/state answer read before events the page applied since neither lowers seq nor undoes what they said", () => {
  // The host reads the state, then the transcript, then passes both on: the first prompt's
  // events (seq 1-3) came first, then this answer, read at seq 0.
  let s = reduce(initialState(), { type: "server", status: "running" });
  s = reduce(s, { type: "event", params: at(1, { type: "agent_start" }) });
  s = reduce(s, { type: "event", params: at(2, { type: "message_start", message: { role: "user", timestamp: 0, content: "hi" } }) });
  s = reduce(s, { type: "event", params: at(3, { type: "message_end", message: { role: "user", timestamp: 0, content: "hi" } }) });
  const st = {
    sessionId: run.sessionId,
    running: false,
    model: { api: "openai", id: "m2" },
    permissionMode: "auto" as const,
    trusted: true,
    queue: { steering: [], followUp: [] },
    usage: { contextTokens: 0, contextWindow: 1, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
    seq: 0,
    sandbox: { mode: "workspace-write" as const, network: false, available: true, confined: true, detail: "" },
    sessionFile: "/s.jsonl",
  };
  s = reduce(s, { type: "state", state: st });
  assert.equal(s.lastSeq, 3);
  assert.equal(s.running, true, "the run the events started is still running");
  assert.equal(s.model?.id, "m2", "what no event tells still comes from the answer");
  assert.equal(s.permissionMode, "auto");
  s = reduce(s, { type: "event", params: at(4, { type: "turn_start", turn: 1 }) });
  s = reduce(s, { type: "event", params: at(5, { type: "message_start", message: { role: "assistant", timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [], stopReason: "stop" } }) });
  s = reduce(s, { type: "event", params: at(6, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "Hel" } }) });
  assert.equal(s.gap, false, "no gap: the page does not re-read the transcript (which would drop the streaming reply)");
  const streaming = s.items.at(-1);
  assert.ok(streaming && streaming.kind === "assistant" && streaming.streaming);
  // An answer as new as the events is taken whole.
  s = reduce(s, { type: "state", state: { ...st, running: false, seq: 6 } });
  assert.equal(s.running, false);
});


test("mcp_changed: a chat line per server whose state changed, none while starting; crank/state fills it", () => {
  const everything = { name: "everything", source: "editor" as const, transport: "stdio" as const, tools: [] as string[] };
  let s = reduce(initialState(), { type: "state", state: { ...baseState(), mcp: [{ ...everything, state: "starting" }] } });
  assert.equal(s.mcp?.[0].state, "starting");
  s = feed(s, [at(1, { type: "mcp_changed", servers: [{ ...everything, state: "starting" }] })]);
  assert.equal(s.items.length, 0, "starting says nothing");
  s = feed(s, [at(2, { type: "mcp_changed", servers: [{ ...everything, state: "ready", tools: ["mcp__everything__echo"] }] })]);
  s = feed(s, [at(3, { type: "mcp_changed", servers: [{ ...everything, state: "failed", error: "exited (status 3)" }] })]);
  const texts = s.items.map((i) => (i as { text: string }).text);
  assert.deepEqual(texts, ["MCP server everything (editor) is ready: 1 tool.", "MCP server everything (editor) failed: exited (status 3)"]);
  assert.equal((s.items[1] as { level: string }).level, "error");
});

function baseState() {
  return {
    sessionId: run.sessionId,
    running: false,
    model: { api: "openai", id: "m" },
    permissionMode: "ask" as const,
    trusted: true,
    queue: { steering: [], followUp: [] },
    usage: { contextTokens: 0, contextWindow: 1, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
    sandbox: { mode: "workspace-write" as const, network: false, available: true, confined: true, detail: "" },
    sessionFile: "/s.jsonl",
    seq: 0,
  };
}

test("an overflow learned, compacted and retried is one line, not the refusal and four notices", () => {
  const refused = {
    role: "assistant" as const,
    content: [],
    stopReason: "error" as const,
    errorMessage: "maximum context length is 4096 tokens",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
    model: "m",
    timestamp: 0,
  };
  const s = feed(initialState(), [
    at(0, { type: "agent_start" }),
    at(1, { type: "message_end", message: refused }),
    at(2, { type: "retry_start", attempt: 1, delayMs: 0, error: refused.errorMessage }),
    at(3, { type: "compaction_start", reason: "overflow" }),
    at(4, { type: "compaction_end", compacted: true }),
    at(5, { type: "notice", kind: "window_learned", message: "the server's window is 4,096 tokens: compacted and retried" }),
  ]);
  assert.deepEqual(
    s.items.map((i) => [i.kind, i.kind === "notice" ? i.text : ""]),
    [["notice", "the server's window is 4,096 tokens: compacted and retried"]],
  );
  const other = feed(initialState(), [at(0, { type: "notice", kind: "tools_unsupported", message: "this server cannot call tools: the agent can only talk" })]);
  assert.equal(other.items.length, 1);
});

test("a question sits just before the card of its call, answered or not, live and after a re-read", () => {
  const s0 = feed(initialState(), eventsOf(run.untilPermission));
  const edit = s0.items[5] as ToolItem;
  const req = { ...(run.untilPermission.find((s) => "request" in s)!.params as PermissionRequest), toolCallId: edit.id };
  const order = (st: ChatState) => st.items.map((it) => `${it.kind}:${it.id}`);
  const asked = reduce(s0, { type: "permissionRequest", id: "p1", request: req });
  assert.equal(order(asked).indexOf("permission:p1") + 1, order(asked).indexOf(`tool:${edit.id}`));
  let done = reduce(asked, { type: "permissionResolved", id: "p1", decision: "allow" });
  done = reduce(done, { type: "event", params: at(900, { type: "tool_execution_end", toolCallId: edit.id, result: { content: "ok", isError: false } }) });
  assert.equal(order(done).indexOf("permission:p1") + 1, order(done).indexOf(`tool:${edit.id}`), "the answer stays before the result");
  const reread = reduce(asked, { type: "transcript", messages: [] });
  assert.deepEqual(order(reread), ["permission:p1"], "without its call's card, the open question is still shown");
});

test("a replayed compaction summary is a summary, not a message 'You' typed (and has no Edit)", () => {
  const items = itemsFromMessages([
    { role: "user", content: "Previous conversation summary:\n\nWe fixed calc.py.", timestamp: 0 },
    { role: "user", content: "Summary of an abandoned branch:\n\nTried sed.", timestamp: 0 },
    { role: "user", content: "Previous conversation summary: is what I typed", typed: "Previous conversation summary: is what I typed", timestamp: 0 },
  ] as Message[]);
  const [compacted, branch, typed] = items as import("../../src/chat/state").UserItem[];
  assert.equal(compacted.summary, "compaction");
  assert.equal(compacted.text, "We fixed calc.py.");
  assert.equal(branch.summary, "branch");
  assert.equal(typed.summary, undefined, "what the user typed stays theirs");
});

test("system_prompt_changed is announced only when it differs from what the last run was sent", () => {
  const ev = (seq: number, hash: string): EventParams => at(seq, { type: "system_prompt_changed", hash, sources: [] });
  const notices = (st: ChatState) => st.items.filter((it) => it.kind === "notice").length;
  // after a reload: the new server rebuilds what the resumed session already had
  const fresh = feed(initialState(), [ev(0, "aaa")]);
  assert.equal(notices(fresh), 0, "no run since the page loaded: nothing the model was sent changed");
  const ran = feed(fresh, [at(1, { type: "agent_start" }), at(2, { type: "agent_settled" })]);
  assert.equal(notices(feed(ran, [ev(3, "aaa")])), 0, "same bytes: no notice");
  const changed = feed(ran, [ev(3, "bbb")]);
  assert.equal(notices(changed), 1);
  assert.equal(notices(feed(changed, [ev(4, "bbb")])), 1, "announced once");
  // changed and changed back before the next run: the run is sent what the last one was
  const back = feed(ran, [ev(3, "ccc"), ev(4, "aaa")]);
  assert.equal(notices(back), 1, "only the change away is announced, not the return");
});

test("a transcript read while a reply streams keeps the bubble: the rest of the stream lands in it, and no reply shows twice", () => {
  const user = { role: "user" as const, timestamp: 0, content: "say hello" };
  const reply = { role: "assistant" as const, timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "text" as const, text: "Hello there" }], stopReason: "stop" as const };
  let s = reduce(initialState(), { type: "server", status: "running" });
  s = feed(s, [
    at(1, { type: "agent_start" }),
    at(2, { type: "message_start", message: user }),
    at(3, { type: "message_end", message: user }),
    at(4, { type: "message_start", message: { ...reply, content: [] } }),
    at(5, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "Hello" } }),
  ]);
  // The host's refresh (the server came up as the prompt went out) read the session: the user message only.
  s = reduce(s, { type: "transcript", messages: [user], sessionId: run.sessionId });
  const open = s.items.at(-1) as AssistantItem;
  assert.equal(open.kind, "assistant");
  assert.equal(open.streaming, true, "the streaming reply survived the transcript");
  assert.deepEqual(open.blocks, [{ type: "text", text: "Hello" }]);
  s = feed(s, [at(6, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: " there" } }), at(7, { type: "message_end", message: reply })]);
  assert.deepEqual(s.items.map((i) => i.kind), ["user", "assistant"]);
  assert.deepEqual((s.items[1] as AssistantItem).blocks, reply.content);

  // Read after the reply was saved but before its message_end arrived: the transcript has it, the event does not add it again.
  let t = feed(reduce(initialState(), { type: "server", status: "running" }), [at(1, { type: "agent_start" }), at(2, { type: "message_start", message: user }), at(3, { type: "message_start", message: { ...reply, content: [] } })]);
  t = reduce(t, { type: "transcript", messages: [user, reply], sessionId: run.sessionId });
  assert.deepEqual(t.items.map((i) => i.kind), ["user", "assistant"], "the saved reply, not beside its bubble too");
  t = reduce(t, { type: "event", params: at(4, { type: "message_end", message: reply }) });
  assert.deepEqual(t.items.map((i) => i.kind), ["user", "assistant"], "one reply, not two");

  // The same with the whole text streamed before the read: still one reply, then and after.
  let u = feed(reduce(initialState(), { type: "server", status: "running" }), [
    at(1, { type: "agent_start" }),
    at(2, { type: "message_start", message: user }),
    at(3, { type: "message_start", message: { ...reply, content: [] } }),
    at(4, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "Hello there" } }),
  ]);
  u = reduce(u, { type: "transcript", messages: [user, reply], sessionId: run.sessionId });
  assert.equal(u.items.filter((i) => i.kind === "assistant").length, 1);
  u = reduce(u, { type: "event", params: at(5, { type: "message_end", message: reply }) });
  assert.equal(u.items.filter((i) => i.kind === "assistant").length, 1);

  // A bubble for a reply the transcript does not end with is kept.
  let v = feed(reduce(initialState(), { type: "server", status: "running" }), [
    at(1, { type: "agent_start" }),
    at(2, { type: "message_start", message: { ...reply, content: [] } }),
    at(3, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "Another" } }),
  ]);
  v = reduce(v, { type: "transcript", messages: [user, reply], sessionId: run.sessionId });
  assert.equal((v.items.at(-1) as AssistantItem).streaming, true);

  // Another session's transcript replaces everything.
  const other = reduce(s, { type: "transcript", messages: [user], sessionId: "another" });
  assert.deepEqual(other.items.map((i) => i.kind), ["user"]);
});

test("a notice the host posts after a transcript does not hide the saved reply from its message_end", () => {
  // An untrusted window: every refresh posts "ignored: crank.server.python" after the
  // transcript, so a reply read saved is no longer the chat's last item when its
  // message_end arrives (the code-server e2e saw two bubbles until the next refresh).
  const user = { role: "user" as const, timestamp: 0, content: "say hello" };
  const reply = { role: "assistant" as const, timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "text" as const, text: "Hello there" }], stopReason: "stop" as const };
  const started = [at(1, { type: "agent_start" }), at(2, { type: "message_start", message: user }), at(3, { type: "message_start", message: { ...reply, content: [] } })] as const;
  for (const streamed of ["", "Hello"]) {
    let s = feed(reduce(initialState(), { type: "server", status: "running" }), [...started]);
    if (streamed) s = reduce(s, { type: "event", params: at(4, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: streamed } }) });
    s = reduce(s, { type: "transcript", messages: [user, reply], sessionId: run.sessionId });
    s = reduce(s, { type: "notice", level: "warning", text: "ignored: this folder's crank.server.python", once: true });
    s = reduce(s, { type: "event", params: at(5, { type: "message_end", message: reply }) });
    assert.deepEqual(s.items.map((i) => i.kind), ["user", "assistant", "notice"], `one reply (streamed before the read: "${streamed}")`);
  }
  // A bubble the transcript kept (its text is not the saved reply's) with a notice after it: still one reply.
  let t = feed(reduce(initialState(), { type: "server", status: "running" }), [...started, at(4, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "Another" } })]);
  t = reduce(t, { type: "transcript", messages: [user], sessionId: run.sessionId });
  t = reduce(t, { type: "notice", level: "warning", text: "ignored", once: true });
  t = reduce(t, { type: "event", params: at(5, { type: "message_end", message: reply }) });
  assert.deepEqual(t.items.map((i) => i.kind), ["user", "assistant", "notice"]);
  assert.deepEqual((t.items[1] as AssistantItem).blocks, reply.content);
});

test("a transcript read while a tool runs keeps what its events told the card", () => {
  const user = { role: "user" as const, timestamp: 0, content: "run it" };
  const call = { role: "assistant" as const, timestamp: 0, model: "m", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, content: [{ type: "toolCall" as const, id: "c1", name: "bash", arguments: { command: "make" } }], stopReason: "toolUse" as const };
  let s = feed(reduce(initialState(), { type: "server", status: "running" }), [
    at(1, { type: "agent_start" }),
    at(2, { type: "message_start", message: user }),
    at(3, { type: "message_end", message: user }),
    at(4, { type: "message_start", message: { ...call, content: [] } }),
    at(5, { type: "message_end", message: call }),
    at(6, { type: "tool_execution_start", toolCallId: "c1", toolName: "bash", arguments: { command: "make" } }),
    at(7, { type: "tool_execution_update", toolCallId: "c1", output: "half way\n" }),
  ]);
  s = reduce(s, { type: "transcript", messages: [user, call], sessionId: run.sessionId });
  const card = s.items.find((i) => i.kind === "tool" && i.id === "c1") as ToolItem;
  assert.equal(card.status, "running");
  assert.equal(card.output, "half way\n");
  s = reduce(s, { type: "event", params: at(8, { type: "tool_execution_update", toolCallId: "c1", output: "done\n" }) });
  assert.equal((s.items.find((i) => i.kind === "tool" && i.id === "c1") as ToolItem).output, "half way\ndone\n");
  assert.equal(s.items.filter((i) => i.kind === "tool").length, 1);
});

test("a notice sent with once is shown once, and again after a transcript read replaced it", () => {
  const line = { type: "notice" as const, level: "warning" as const, text: "This workspace is not trusted (Restricted Mode), so its crank.permissionMode was ignored", once: true };
  let s = reduce(initialState(), line);
  s = reduce(s, line);
  assert.equal(s.items.filter((i) => i.kind === "notice").length, 1, "not twice while shown");
  s = reduce(s, { type: "transcript", messages: [{ role: "user", content: "hi", timestamp: 1 }], sessionId: run.sessionId });
  assert.equal(s.items.filter((i) => i.kind === "notice").length, 0, "the transcript replaced it");
  s = reduce(s, line);
  assert.equal(s.items.filter((i) => i.kind === "notice").length, 1, "shown again after the read");
  const plain = reduce(reduce(initialState(), { ...line, once: undefined }), { ...line, once: undefined });
  assert.equal(plain.items.filter((i) => i.kind === "notice").length, 2, "a notice without once is added each time");
});

test("the recorded run streamed and its crank/messages replay give the same cards", () => {
  const streamed = feed(initialState(), [...eventsOf(run.untilPermission), ...eventsOf(run.afterAllow), ...eventsOf(run.afterStop)]);
  const replayed = itemsFromMessages(run.answers.messages.messages);
  const shape = (items: ChatState["items"]) =>
    items
      .filter((i) => i.kind !== "notice")
      .map((i) => (i.kind === "tool" ? `tool:${i.id}:${i.status}:${i.result}` : i.kind === "assistant" ? `assistant:${JSON.stringify(i.blocks)}` : i.kind));
  assert.deepEqual(shape(streamed.items), shape(replayed));
  assert.equal(streamed.running, false);
  const aborted = streamed.items.find((i) => i.kind === "tool" && i.id === "call_bash_2") as ToolItem;
  assert.equal(aborted.status, "failed");
  assert.deepEqual(streamed.queue, { steering: [], followUp: [] }, "the cleared queue is empty");
});

test("the page saves the last SAVED_ITEMS items of a long chat, so a save costs the same at any length", () => {
  const messages: Message[] = [];
  for (let i = 0; i < 1000; i++) {
    messages.push({ role: "user", content: `question ${i}`, timestamp: i });
    messages.push({ role: "assistant", content: [{ type: "text", text: `answer ${i}` }], stopReason: "stop", timestamp: i } as Message);
  }
  const long = reduce(initialState(), { type: "transcript", messages, sessionId: "s" });
  assert.equal(long.items.length, 2000);
  const saved = persistable(long);
  assert.equal(saved.items.length, SAVED_ITEMS);
  assert.deepEqual(saved.items, long.items.slice(-SAVED_ITEMS), "the tail, as it is");
  assert.equal(long.items.length, 2000, "the live chat is untouched");
  const restored = restoredState(JSON.parse(JSON.stringify(saved)));
  const last = restored.items[restored.items.length - 1] as AssistantItem;
  assert.equal(last.blocks[0].type === "text" && last.blocks[0].text, "answer 999");
  const short = reduce(initialState(), { type: "transcript", messages: messages.slice(0, 10), sessionId: "s" });
  assert.equal(persistable(short), short, "a chat within the bound is saved as it is");
});

test("a transcript read a page at a time: the newest page, then the one before it in front, stale pages dropped", () => {
  const call = (id: string): Message => ({ role: "assistant", content: [{ type: "toolCall", id, name: "ls", arguments: { path: "." } }], stopReason: "toolUse", timestamp: 0 } as unknown as Message);
  const result = (id: string): Message => ({ role: "toolResult", toolCallId: id, toolName: "ls", content: `listing ${id}`, isError: false, timestamp: 0 } as Message);
  const ask = (text: string): Message => ({ role: "user", content: text, timestamp: 0 });
  const whole = [ask("one"), call("c1"), result("c1"), ask("two"), call("c2"), result("c2")];
  const sessionId = run.sessionId;
  let s = reduce(initialState(), { type: "transcript", messages: whole.slice(3), sessionId, start: 3 });
  assert.equal(s.transcriptStart, 3);
  assert.deepEqual(s.items.map((i) => i.id), ["m3", "m4", "c2"]);
  // A page for another session, or for a start the chat no longer has, goes nowhere.
  assert.equal(reduce(s, { type: "earlierTranscript", messages: whole.slice(0, 3), sessionId: "other", before: 3, start: 0 }), s);
  assert.equal(reduce(s, { type: "earlierTranscript", messages: whole.slice(0, 3), sessionId, before: 5, start: 0 }), s);
  s = reduce(s, { type: "earlierTranscript", messages: whole.slice(0, 3), sessionId, before: 3, start: 0 });
  assert.equal(s.transcriptStart, 0);
  assert.deepEqual(s.items.map((i) => i.id), ["m0", "m1", "c1", "m3", "m4", "c2"], "the same items as the whole transcript read at once");
  assert.deepEqual(s.items, itemsFromMessages(whole));
  assert.equal((s.items[2] as ToolItem).result, "listing c1");
  // The same page arriving twice is taken once.
  assert.equal(reduce(s, { type: "earlierTranscript", messages: whole.slice(0, 3), sessionId, before: 3, start: 0 }), s);

  // After a compaction the transcript starts at its summary: nothing earlier to read.
  const paged = reduce(initialState(), { type: "transcript", messages: whole.slice(3), sessionId, start: 3 });
  assert.equal(feed(paged, [at(1, { type: "compaction_end", compacted: true })]).transcriptStart, 0);
  assert.equal(feed(paged, [at(1, { type: "compaction_end", compacted: false, error: "no" })]).transcriptStart, 3);
  // A saved page whose items were cut reads nothing earlier until the transcript is read again.
  const many = Array.from({ length: SAVED_ITEMS + 10 }, (_, i) => ask(`q${i}`));
  const long = reduce(initialState(), { type: "transcript", messages: many, sessionId, start: 50 });
  assert.equal(persistable(long).transcriptStart, 0);
  assert.equal(persistable(paged).transcriptStart, 3);
});
