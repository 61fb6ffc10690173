/** The files a run changed, under that run in the chat: where the list goes, what it keeps, what Undo all sends. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { initialState, reduce, type ChatItem, type ChatState } from "../../src/chat/state";
import { changesSummary, keepAllPaths, lineCounts, shownFiles, undoAllPaths, type ChangesItem } from "../../src/chat/runChanges";
import { parseViewMessage } from "../../src/chat/protocol";
import type { ChangedFile, EventParams, Message } from "../../src/protocol/types";

const S = "s1";
const edited: ChangedFile = { path: "a.py", status: "modified", byTool: ["c1"], restorable: true, before: "1".repeat(64), after: "2".repeat(64) };
const created: ChangedFile = { path: "b.txt", status: "added", byTool: ["c2"], restorable: true, after: "3".repeat(64) };
const later: ChangedFile = { path: "z.md", status: "modified", byTool: ["k1"], restorable: true, before: "4".repeat(64), after: "5".repeat(64) };

const call = (id: string, command: string): Message => ({ role: "assistant", content: [{ type: "toolCall", id, name: "bash", arguments: { command } }] }) as unknown as Message;
const result = (id: string): Message => ({ role: "toolResult", toolCallId: id, toolName: "bash", content: "ok", isError: false }) as unknown as Message;
const user = (text: string): Message => ({ role: "user", content: text }) as unknown as Message;
const done = (text: string): Message => ({ role: "assistant", content: [{ type: "text", text }], stopReason: "stop" }) as unknown as Message;

/** Two runs: the first runs c1 and c2 and ends with "done"; the second runs k1. */
const transcript: Message[] = [user("change a and b"), call("c1", "sed -i s/x/y/ a.py"), result("c1"), call("c2", "echo > b.txt"), result("c2"), done("done"), user("and z"), call("k1", "sed z"), result("k1"), done("ok")];

function read(s: ChatState = initialState()): ChatState {
  return reduce(s, { type: "transcript", messages: transcript, sessionId: S });
}
const kinds = (s: ChatState) => s.items.map((it) => (it.kind === "changes" ? `changes:${it.id}` : it.kind));
const changesOf = (s: ChatState, id: string) => s.items.find((it): it is ChangesItem & ChatItem => it.kind === "changes" && it.id === id)!;

test("after a reload each run's list goes under that run: after its last reply, before the next message typed", () => {
  const s = reduce(read(), { type: "allRunChanges", runs: [{ runId: "r1", files: [edited, created] }, { runId: "r2", files: [later] }] });
  assert.deepEqual(kinds(s), ["user", "assistant", "tool", "assistant", "tool", "assistant", "changes:r1", "user", "assistant", "tool", "assistant", "changes:r2"]);
});

test("a run whose tool cards are not in the chat (another branch) shows no list; a list with no files is none", () => {
  const other: ChangedFile = { ...edited, byTool: ["elsewhere"] };
  const s = reduce(read(), { type: "allRunChanges", runs: [{ runId: "gone", files: [other] }, { runId: "r1", files: [] }] });
  assert.ok(!s.items.some((it) => it.kind === "changes"));
});

test("a run that settles gets its list at the end; read again after an Undo it replaces the old one where it is", () => {
  const ev = (seq: number, event: EventParams["event"]): EventParams => ({ workspace: "w", sessionId: S, runId: "r9", seq, event });
  let s = reduce(initialState(), { type: "event", params: ev(0, { type: "agent_start" }) });
  s = reduce(s, { type: "event", params: ev(1, { type: "tool_execution_start", toolCallId: "c1", toolName: "bash", arguments: { command: "x" } }) });
  s = reduce(s, { type: "event", params: ev(2, { type: "agent_settled" }) });
  s = reduce(s, { type: "runChanges", runId: "r9", files: [edited, created], settled: true });
  assert.deepEqual(kinds(s), ["tool", "changes:r9"]);
  const first = changesOf(s, "r9");

  const undone = { ...edited, revertedBy: "revert-1" };
  s = reduce(s, { type: "runChanges", runId: "r9", files: [undone, created], conflicts: [{ path: "b.txt", reason: "changed since the run" }] });
  const second = changesOf(s, "r9");
  assert.notEqual(second, first, "a new item, so the page draws it again");
  assert.deepEqual(kinds(s), ["tool", "changes:r9"]);
  assert.deepEqual(second.conflicts, [{ path: "b.txt", reason: "changed since the run" }]);
  assert.deepEqual(undoAllPaths(second), ["b.txt"], "Undo all leaves out what is put back already");
  assert.equal(changesSummary(second), "2 files changed, 1 undone");
});

test("reading the same session's transcript again keeps the lists in their places; another session's drops them", () => {
  const s = reduce(read(), { type: "allRunChanges", runs: [{ runId: "r1", files: [edited, created] }] });
  const again = read(s);
  assert.deepEqual(kinds(again), kinds(s));
  assert.equal(changesOf(again, "r1"), changesOf(s, "r1"), "the same item: its DOM is kept");
  const other = reduce(s, { type: "transcript", messages: transcript, sessionId: "s2" });
  assert.ok(!other.items.some((it) => it.kind === "changes"));
});

test("a file that cannot be put back is not in Undo all", () => {
  const big: ChangedFile = { path: "big.bin", status: "modified", byTool: ["c1"], restorable: false, reason: "binary: not restorable" };
  assert.deepEqual(undoAllPaths({ kind: "changes", id: "r", files: [big, created] }), ["b.txt"]);
  assert.equal(changesSummary({ kind: "changes", id: "r", files: [created] }), "1 file changed");
});

test("the same list read again (every refresh reads them) keeps its item, so the page does not redraw it", () => {
  const s = reduce(read(), { type: "allRunChanges", runs: [{ runId: "r1", files: [edited, created] }] });
  const again = reduce(s, { type: "allRunChanges", runs: [{ runId: "r1", files: [{ ...edited }, { ...created }] }] });
  assert.equal(changesOf(again, "r1"), changesOf(s, "r1"));
  const settledAgain = reduce(s, { type: "runChanges", runId: "r1", files: [edited, created] });
  assert.equal(settledAgain.items, s.items);
});

test("a kept file leaves the rows and Keep all / Undo all, the summary counts it; read again after a reload it stays out", () => {
  const kept: ChangedFile = { ...edited, kept: true };
  const item: ChangesItem = { kind: "changes", id: "r1", files: [kept, created, later] };
  assert.deepEqual(shownFiles(item).map((f) => f.path), ["b.txt", "z.md"]);
  assert.deepEqual(keepAllPaths(item), ["b.txt", "z.md"]);
  assert.deepEqual(undoAllPaths(item), ["b.txt", "z.md"]);
  assert.equal(changesSummary(item), "3 files changed, 1 kept");
  const undone: ChangesItem = { ...item, files: [kept, { ...created, revertedBy: "revert-1" }, later] };
  assert.deepEqual(keepAllPaths(undone), ["z.md"], "a file put back has no change to keep");
  assert.equal(changesSummary(undone), "3 files changed, 1 undone, 1 kept");
  assert.equal(changesSummary({ ...item, files: [kept, { ...created, kept: true }] }), "2 files changed, all kept");
  // After a reload the server's list says kept: the row is not back.
  const s = reduce(read(), { type: "allRunChanges", runs: [{ runId: "r1", files: [kept, created] }] });
  assert.deepEqual(shownFiles(changesOf(s, "r1")).map((f) => f.path), ["b.txt"]);
});

test("a file's +/- lines read as the server counted them, nothing when it did not", () => {
  assert.equal(lineCounts({ ...edited, linesAdded: 3, linesRemoved: 1 }), "+3 -1");
  assert.equal(lineCounts({ ...created, linesAdded: 2, linesRemoved: 0 }), "+2 -0");
  assert.equal(lineCounts(edited), "");
});

test("the page's Keep and Redo messages are checked like Undo's", () => {
  assert.deepEqual(parseViewMessage({ type: "keepChanges", runId: "r1", paths: ["a.py"] }), { type: "keepChanges", runId: "r1", paths: ["a.py"] });
  assert.equal(parseViewMessage({ type: "keepChanges", runId: "r1", paths: [] }), undefined);
  assert.equal(parseViewMessage({ type: "keepChanges", runId: "", paths: ["a.py"] }), undefined);
  assert.deepEqual(parseViewMessage({ type: "redoChange", runId: "r1", revertId: "revert-1", path: "a.py" }), { type: "redoChange", runId: "r1", revertId: "revert-1", path: "a.py" });
  assert.equal(parseViewMessage({ type: "redoChange", runId: "r1", path: "a.py" }), undefined);
  assert.deepEqual(parseViewMessage({ type: "undoChanges", runId: "r1", paths: ["a.py"], force: true }), { type: "undoChanges", runId: "r1", paths: ["a.py"], force: true });
  assert.equal(parseViewMessage({ type: "undoChanges", runId: "r1", paths: ["a.py"], force: "yes" }), undefined);
});
