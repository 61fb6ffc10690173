/** The review of a run's changes: items per file, and what a revert is summed up as. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { changeItems, revertSummary } from "../../src/protocol/review";

test("each changed file is an item saying what happened, and why it cannot be put back", () => {
  const items = changeItems([
    { path: "a.py", status: "modified", byTool: ["c1"], restorable: true, before: "1", after: "2" },
    { path: "build/", status: "modified", byTool: ["c2"], restorable: false, reason: "an ignored folder: not restorable" },
    { path: "b.txt", status: "added", byTool: ["c3"], restorable: true, after: "3", linesAdded: 2, linesRemoved: 0, kept: true },
  ]);
  assert.deepEqual(
    items.map((i) => [i.label, i.description, i.detail]),
    [
      ["$(diff-modified) a.py", "modified", undefined],
      ["$(diff-modified) build/", "modified", "not restorable: an ignored folder: not restorable"],
      ["$(diff-added) b.txt", "added +2 -0 kept", undefined],
    ],
  );
});

test("a revert with conflicts names each file and reason", () => {
  assert.deepEqual(revertSummary({ reverted: ["a.py"], conflicts: [] }), { text: "Crank put back 1 file(s).", warn: false });
  const s = revertSummary({ reverted: [], conflicts: [{ path: "d.py", reason: "changed since the run" }] });
  assert.equal(s.warn, true);
  assert.match(s.text, /d\.py: changed since the run/);
});
