/**
 * answerSave (crank/saveDocument) with a host of plain objects: these check the answers
 * and the notice; test/integration/files.test.ts runs it against the real server.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { answerSave, unsavedNotice, type SavableDocument, type SaveHost } from "../../src/protocol/save";

function host(docs: Record<string, SavableDocument>): SaveHost & { told: string[] } {
  const told: string[] = [];
  return { told, find: (uri) => docs[uri], inform: (m) => told.push(m) };
}

const doc = (saved: boolean | Error): SavableDocument & { saves: number } => {
  const d = {
    name: "calc.py",
    saves: 0,
    save: async () => {
      d.saves++;
      if (saved instanceof Error) throw saved;
      return saved;
    },
  };
  return d;
};

test("a clean document is saved without a word to the user", async () => {
  const d = doc(true);
  const h = host({ "file:///p/calc.py": d });
  assert.deepEqual(await answerSave({ uri: "file:///p/calc.py" }, h), { saved: true });
  assert.equal(d.saves, 1);
  assert.deepEqual(h.told, []);
});

test("with the user's unsaved changes the user is told they were saved too", async () => {
  const h = host({ "file:///p/calc.py": doc(true) });
  assert.deepEqual(await answerSave({ uri: "file:///p/calc.py", unsavedChanges: true }, h), { saved: true });
  assert.deepEqual(h.told, [unsavedNotice("calc.py")]);
  assert.match(h.told[0], /together with your unsaved changes/);
});

test("every failure is an answer with a reason, and nobody is told of a save that did not happen", async () => {
  const h = host({ "file:///p/no.py": doc(false), "file:///p/err.py": doc(new Error("EACCES")) });
  assert.deepEqual(await answerSave({ uri: "file:///p/no.py", unsavedChanges: true }, h), { saved: false, reason: "the editor did not save calc.py" });
  assert.deepEqual(await answerSave({ uri: "file:///p/err.py" }, h), { saved: false, reason: "EACCES" });
  assert.equal((await answerSave({ uri: "file:///p/closed.py" }, h)).saved, false);
  assert.equal((await answerSave({} as never, h)).reason, "crank/saveDocument needs a uri");
  assert.deepEqual(h.told, []);
});
