import { test } from "node:test";
import assert from "node:assert/strict";
import { branchesOf, forkPointFor } from "../../src/chat/branches";
import type { TreeEntry, TreeResult } from "../../src/protocol/types";

const msg = (id: string, parentId: string | null, role: string, preview: string): TreeEntry => ({ id, parentId, type: "message", role, preview });
const br = (id: string, parentId: string): TreeEntry => ({ id, parentId, type: "branch" });

// u1 a1 u2 a2, then "edit and resend" of u2: a branch entry back to a1, then u2' a2'.
const linear: TreeEntry[] = [msg("u1", null, "user", "first question"), msg("a1", "u1", "assistant", "first answer"), msg("u2", "a1", "user", "second question"), msg("a2", "u2", "assistant", "second answer")];
const forked: TreeResult = { tip: "a2b", entries: [...linear, br("b1", "a1"), msg("u2b", "b1", "user", "second, edited"), msg("a2b", "u2b", "assistant", "another answer")] };

test("edit and resend goes back to the parent of the chosen user message, counted from the end", () => {
  const tree: TreeResult = { tip: "a2", entries: linear };
  assert.deepEqual(forkPointFor(tree, 0, "second question"), { entryId: "a1" });
  assert.deepEqual(forkPointFor(tree, 1, "first  question"), { entryId: null }, "the first message has nothing before it (whitespace is collapsed as the preview is)");
  assert.equal(forkPointFor(tree, 0, "something else"), undefined, "a text that does not match the entry changes nothing");
  assert.equal(forkPointFor(tree, 2, "x"), undefined);
});

test("after a fork, the count follows the current branch only", () => {
  assert.deepEqual(forkPointFor(forked, 0, "second, edited"), { entryId: "b1" });
  assert.deepEqual(forkPointFor(forked, 1, "first question"), { entryId: null });
});

test("a long message matches its cut preview", () => {
  const long = "word ".repeat(100).trim();
  const tree: TreeResult = { tip: "u", entries: [msg("u", null, "user", long.slice(0, 79) + "…")] };
  assert.deepEqual(forkPointFor(tree, 0, long), { entryId: null });
  assert.equal(forkPointFor(tree, 0, "other " + long), undefined);
});

test("branches: one per leaf, named by their first own user message, the tip's marked current", () => {
  assert.deepEqual(branchesOf({ tip: "a2", entries: linear }), [{ entryId: "a2", current: true, title: "first question", messages: 4 }]);
  assert.deepEqual(branchesOf(forked), [
    { entryId: "a2", current: false, title: "second question", messages: 4 },
    { entryId: "a2b", current: true, title: "second, edited", messages: 4 },
  ]);
});

test("just after going back (the tip is a branch entry nothing followed), the current branch ends where it went back to", () => {
  const tree: TreeResult = { tip: "b1", entries: [...linear, br("b1", "a1")] };
  const b = branchesOf(tree);
  assert.deepEqual(b.map((x) => [x.entryId, x.current]), [["a2", false], ["a1", true]]);
  assert.equal(branchesOf({ tip: null, entries: [] }).length, 0);
});

test("three branches: a message two of them share is neither's own, and a damaged file's cycle ends the walk", () => {
  // u1 a1, then three ways on from a1: u2 a2 u3 a3 (the first), u3' a3' from a2 (shares u2 with
  // the first), and u2'' a2'' from a1.
  const entries: TreeEntry[] = [
    ...linear,
    msg("u3", "a2", "user", "third question"),
    msg("a3", "u3", "assistant", "third answer"),
    br("b1", "a2"),
    msg("u3x", "b1", "user", "third, edited"),
    msg("a3x", "u3x", "assistant", "another third answer"),
    br("b2", "a1"),
    msg("u2y", "b2", "user", "second, edited"),
    msg("a2y", "u2y", "assistant", "another second answer"),
  ];
  assert.deepEqual(branchesOf({ tip: "a2y", entries }), [
    { entryId: "a3", current: false, title: "third question", messages: 6 },
    { entryId: "a3x", current: false, title: "third, edited", messages: 6 },
    { entryId: "a2y", current: true, title: "second, edited", messages: 4 },
  ]);
  // u1's parent is a2: a cycle (refused by the server; here it must not hang the chat).
  const looped = entries.map((e) => (e.id === "u1" ? { ...e, parentId: "a2" } : e));
  assert.deepEqual(branchesOf({ tip: "a3", entries: looped }).map((b) => [b.entryId, b.messages]), [["a3", 6], ["a3x", 6], ["a2y", 6]]);
});
