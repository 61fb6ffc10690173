import { test } from "node:test";
import assert from "node:assert/strict";
import { parseViewMessage } from "../../src/chat/protocol";

test("well-formed page messages pass through unchanged", () => {
  const ok = [
    { type: "ready" },
    { type: "send", text: "fix it", mode: "steer" },
    { type: "removeQueued", kind: "followUp", index: 0, text: "later" },
    { type: "permission", id: "perm-1", decision: "allowSession" },
    { type: "permission", id: "perm-2", decision: "reject", reason: "not that file" },
    { type: "setPermissionMode", mode: "readOnly" },
    { type: "setModel", api: "anthropic", id: "claude/x" },
    { type: "undoEdit", toolCallId: "t1" },
    { type: "removeContext", index: 2 },
    { type: "loadEarlier", before: 400, sessionId: "s1" },
    { type: "loadEarlier", before: 1 },
  ];
  for (const m of ok) assert.deepEqual(parseViewMessage(m), m, JSON.stringify(m));
});

test("a page message with an unknown type or a wrong field is refused, not half-applied", () => {
  const bad: unknown[] = [
    null,
    "abort",
    { type: "eval", code: "x" },
    { type: "send", text: 3, mode: "prompt" },
    { type: "send", text: "hi", mode: "run" },
    { type: "permission", id: "perm-1", decision: "allowEverything" },
    { type: "permission", id: 1, decision: "allow" },
    { type: "permission", id: "perm-1", decision: "reject", reason: { html: "<b>" } },
    { type: "setPermissionMode", mode: "yolo" },
    { type: "removeQueued", kind: "steering", index: -1 },
    { type: "removeContext", index: 1.5 },
    { type: "openSession", sessionId: "" },
    { type: "openFile" },
    { type: "loadEarlier", before: 0 },
    { type: "loadEarlier", before: 2.5 },
    { type: "loadEarlier", before: "400" },
    { type: "loadEarlier", before: 4, sessionId: 7 },
  ];
  for (const m of bad) assert.equal(parseViewMessage(m), undefined, JSON.stringify(m));
});

test("extra fields a page adds are dropped before the host sees the message", () => {
  assert.deepEqual(parseViewMessage({ type: "abort", workspace: "file:///elsewhere" }), { type: "abort" });
  assert.deepEqual(parseViewMessage({ type: "openSession", sessionId: "s1", workspace: "file:///x" }), { type: "openSession", sessionId: "s1" });
});
