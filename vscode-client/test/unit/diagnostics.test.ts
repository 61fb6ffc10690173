/** answerDiagnostics (crank/diagnostics) with a table for vscode.languages.getDiagnostics. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { answerDiagnostics } from "../../src/protocol/diagnostics";

const range = { start: { line: 1, character: 11 }, end: { line: 1, character: 16 } };

test("VS Code's diagnostics are answered as LSP ones, severities counted from 1", () => {
  const table: Record<string, { range: typeof range; severity: number; message: string; source?: string; code?: string | number | { value: string } }[]> = {
    "file:///p/calc.py": [
      { range, severity: 0, message: "bad operand", source: "Pylance", code: { value: "reportOperatorIssue" } },
      { range, severity: 1, message: "unused", code: 7 },
    ],
  };
  const answer = answerDiagnostics({ uris: ["file:///p/calc.py", "file:///p/other.py"] }, (uri) => table[uri] ?? []);
  assert.deepEqual(answer, {
    items: [
      {
        uri: "file:///p/calc.py",
        diagnostics: [
          { range, severity: 1, message: "bad operand", source: "Pylance", code: "reportOperatorIssue" },
          { range, severity: 2, message: "unused", code: 7 },
        ],
      },
      { uri: "file:///p/other.py", diagnostics: [] },
    ],
  });
});

test("malformed params get an empty answer, never a thrown error", () => {
  assert.deepEqual(answerDiagnostics({} as never, () => []), { items: [] });
});
