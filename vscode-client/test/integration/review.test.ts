/**
 * A run's changes, reviewed through the extension's protocol code (CrankClient,
 * answerDiagnostics, changeItems) against the real `crank serve` and the loopback model
 * server: a run edits a.py (the editor reports a type error for it, which the edit's
 * result carries), creates b.txt and deletes c.txt with commands and rewrites d.py with
 * sed -i; crank/changes lists the four, crank/fileContent gives d.py's old text for the
 * diff, and Undo on one file (crank/revert with its path) puts only it back.
 * Runs with CRANK_INTEGRATION=1 (test.sh).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import type { MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient } from "../../src/protocol/client";
import { answerDiagnostics } from "../../src/protocol/diagnostics";
import { changeItems } from "../../src/protocol/review";
import type { EventParams } from "../../src/protocol/types";
import { answerServerRequests, initializeCrank, loopbackOptions, startCrankServe, startModelServer, stopServers } from "../e2e/harness";

let tmp = "";
let ws = "";
let conn: MessageConnection;
let crank: CrankClient;
let stderr = "";
const events: EventParams[] = [];

const call = (id: string, name: string, args: Record<string, unknown>) => ({ toolCalls: [{ id, name, arguments: args }] });

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "crank-review-"));
  ws = path.join(tmp, "project");
  mkdirSync(ws);
  writeFileSync(path.join(ws, "a.py"), "x = a - b\n");
  writeFileSync(path.join(ws, "c.txt"), "gone\n");
  writeFileSync(path.join(ws, "d.py"), "y = 2\n");
  const scriptFile = path.join(tmp, "script.json");
  const replies = [
    call("c1", "edit", { path: "a.py", oldText: "a - b", newText: "a + '1'" }),
    call("c2", "bash", { command: "printf 'made\\n' > b.txt" }),
    call("c3", "bash", { command: "rm c.txt" }),
    call("c4", "bash", { command: "sed -i 's/y = 2/y = 3/' d.py" }),
    { text: "done" },
  ];
  writeFileSync(scriptFile, JSON.stringify({ replies }));
  const port = await startModelServer(scriptFile, (d) => (stderr += d));
  conn = startCrankServe(ws, (d) => (stderr += d));
  crank = new CrankClient(conn);
  crank.onEvent((p) => events.push(p));
  answerServerRequests(conn);
  const a = pathToFileURL(path.join(ws, "a.py")).toString();
  const range = { start: { line: 0, character: 4 }, end: { line: 0, character: 11 } };
  crank.onDiagnostics((p) => answerDiagnostics(p, (uri) => (uri === a ? [{ range, severity: 0, message: 'Operator "+" not supported', source: "Pylance" }] : [])));
  conn.listen();
  await initializeCrank(conn, ws, loopbackOptions(port, tmp, { permissionMode: "auto", diagnostics: { settleMs: 50 } }));
});

after(async () => {
  await stopServers(conn);
  rmSync(tmp, { recursive: true, force: true });
});

test("the run's four files are listed, diffed and one is undone; the edit carried the editor's error", async () => {
  const { runId } = await crank.prompt({ text: "change four files" });
  const deadline = Date.now() + 60_000;
  while (!events.some((p) => p.runId === runId && p.event.type === "agent_settled")) {
    if (Date.now() > deadline) throw new Error(`the run never settled\n${stderr.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const edit = events.find((p) => p.event.type === "tool_execution_end" && p.event.toolCallId === "c1");
  assert.ok(edit && edit.event.type === "tool_execution_end");
  assert.match(edit.event.result.content, /The editor now reports 1 error\(s\) and 0 warning\(s\) in a\.py:\n- 1:5 error: Operator "\+" not supported \[Pylance\]/);

  const { files } = await crank.changes({ runId: runId! });
  assert.deepEqual(
    changeItems(files).map((i) => [i.file.path, i.description]),
    [["a.py", "modified +1 -1"], ["b.txt", "added +1 -0"], ["c.txt", "deleted +0 -1"], ["d.py", "modified +1 -1"]],
  );
  const d = files.find((f) => f.path === "d.py")!;
  assert.equal((await crank.fileContent({ sha256: d.before! })).text, "y = 2\n");

  const undone = await crank.revert({ runId: runId!, paths: ["d.py"] });
  assert.deepEqual([undone.reverted, undone.conflicts], [["d.py"], []]);
  assert.equal(readFileSync(path.join(ws, "d.py"), "utf8"), "y = 2\n");
  assert.equal(readFileSync(path.join(ws, "a.py"), "utf8"), "x = a + '1'\n", "the other files are kept");
  assert.ok(existsSync(path.join(ws, "b.txt")) && !existsSync(path.join(ws, "c.txt")));
});
