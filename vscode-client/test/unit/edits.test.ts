import { test } from "node:test";
import assert from "node:assert/strict";
import { diffSides, editOf, openDiffSides, planUndo, previousFileOf, proposedSides, snippetDiff } from "../../src/chat/edits";

test("editOf recognises edit and write calls under common argument names, and nothing else", () => {
  assert.deepEqual(editOf("edit", { path: "a.py", oldText: "x", newText: "y" }), { path: "a.py", mode: "replace", oldText: "x", newText: "y" });
  assert.deepEqual(editOf("Edit", { file_path: "b.py", old_string: "1", new_string: "2" }), { path: "b.py", mode: "replace", oldText: "1", newText: "2" });
  assert.equal(editOf("write", { path: "c.py", content: "z" })?.mode, "write");
  assert.equal(editOf("bash", { command: "ls" }), undefined);
  assert.equal(editOf("read", { path: "a.py" }), undefined);
});

test("editOf reads what the server says each tool is, not its name", () => {
  const tools = [
    { name: "save_file", kind: "edit" as const, label: "Save", shows: "path", result: "first_line" as const, editsFiles: true },
    { name: "write_notes", kind: "other" as const, label: "Notes", result: "first_line" as const, editsFiles: false },
  ];
  assert.equal(editOf("save_file", { path: "c.py", content: "z" }, tools)?.mode, "write");
  assert.equal(editOf("write_notes", { path: "n.md", content: "z" }, tools), undefined);
});

test("undo puts the old text back at the one place the new text is", () => {
  const e = editOf("edit", { path: "a.py", oldText: "a - b", newText: "a + b" })!;
  const current = "def add(a, b):\n    return a + b\n";
  const plan = planUndo(current, e);
  assert.ok(plan.ok);
  const reverted = current.slice(0, plan.offset) + plan.replacement + current.slice(plan.offset + plan.length);
  assert.equal(reverted, "def add(a, b):\n    return a - b\n");
});

test("undo refuses, naming why, when the edit is gone or ambiguous", () => {
  const e = editOf("edit", { path: "a.py", oldText: "1", newText: "2" })!;
  const gone = planUndo("x = 3", e);
  assert.ok(!gone.ok && /no longer in a.py/.test(gone.reason));
  const twice = planUndo("2 + 2", e);
  assert.ok(!twice.ok && /2 times/.test(twice.reason));
});

test("undo of a write needs the previous file and an unchanged file", () => {
  const e = editOf("write", { path: "n.py", content: "new\n" })!;
  assert.ok(!planUndo("new\n", e).ok);
  assert.ok(!planUndo("changed later\n", e, "old\n").ok);
  const plan = planUndo("new\n", e, "old\n");
  assert.ok(plan.ok && plan.replacement === "old\n" && plan.length === 4);
});

test("diffSides gives whole files when the edit is found and the snippets otherwise", () => {
  const e = editOf("edit", { path: "a.py", oldText: "b = 1", newText: "b = 2" })!;
  assert.deepEqual(diffSides("a = 0\nb = 2\n", e), { before: "a = 0\nb = 1\n", after: "a = 0\nb = 2\n" });
  assert.deepEqual(diffSides("moved on", e), { before: "b = 1", after: "b = 2" });
  assert.deepEqual(diffSides(undefined, e), { before: "b = 1", after: "b = 2" });
});

test("Open diff on a pending question: the whole file as it is beside the whole file as it would be", () => {
  // a write: before, both sides were the file on disk (the change is not applied yet)
  const disk = "old line\n";
  const write = editOf("write", { path: "n.py", content: "new line\n" })!;
  const asked = { edit: write, previousFile: disk, proposed: proposedSides({ oldText: disk, newText: "new line\n" }) };
  assert.deepEqual(openDiffSides(asked, disk), { before: "old line\n", after: "new line\n" });
  // an edit: before, only the old/new snippets; now the whole files
  const file = "a = 0\nb = 1\nc = 2\n";
  const edit = editOf("edit", { path: "a.py", oldText: "b = 1", newText: "b = 2" })!;
  const sides = openDiffSides({ edit, proposed: proposedSides({ oldText: file, newText: "a = 0\nb = 2\nc = 2\n" }) }, file);
  assert.deepEqual(sides, { before: file, after: "a = 0\nb = 2\nc = 2\n" });
  // once applied (no proposal kept), the diff is read from the file again
  assert.deepEqual(openDiffSides({ edit }, "a = 0\nb = 2\nc = 2\n"), { before: file, after: "a = 0\nb = 2\nc = 2\n" });
  // an old file too large to load is not shown as if it were empty text of the file
  assert.equal(proposedSides({ oldText: "", newText: "x", oldTextOmitted: 9 }).before, "");
});

test("snippetDiff keeps the common head and tail as context", () => {
  const d = snippetDiff("a\nb\nc", "a\nB\nc");
  assert.deepEqual(d, [
    { sign: " ", text: "a" },
    { sign: "-", text: "b" },
    { sign: "+", text: "B" },
    { sign: " ", text: "c" },
  ]);
  assert.deepEqual(snippetDiff("", "x"), [{ sign: "+", text: "x" }]);
});

test("a write over a file the server did not load has no previous file to restore", () => {
  assert.equal(previousFileOf({ oldText: "old\n" }), "old\n");
  assert.equal(previousFileOf({ oldText: "", oldTextOmitted: 2147483648 }), undefined);
  const plan = planUndo("new\n", { path: "big.log", mode: "write", oldText: "", newText: "new\n" }, previousFileOf({ oldText: "", oldTextOmitted: 5 }));
  assert.ok(!plan.ok && plan.reason.includes("before this write is not known"));
});
