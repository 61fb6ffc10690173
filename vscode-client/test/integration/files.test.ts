/**
 * One truth for files (issue 14) through the extension's own protocol code (CrankClient
 * and answerSave from src/protocol) against the real `crank serve` and the loopback
 * model server. The editor here is a stand-in (no VS Code can run in this test): its
 * buffers apply `workspace/applyEdit` and send didChange, and its documents save by
 * writing the buffer and sending didSave, as vscode-languageclient does around
 * `TextDocument.save()`. Runs with CRANK_INTEGRATION=1 (test.sh).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient } from "../../src/protocol/client";
import { answerServerRequests, initializeCrank, loopbackOptions, startCrankServe, startModelServer, stopServers } from "../e2e/harness";
import { answerSave, type SaveHost } from "../../src/protocol/save";
import type { EventParams, SaveDocumentParams } from "../../src/protocol/types";

const CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n";
let tmp = "";
let calc = "";
let conn: MessageConnection;
let crank: CrankClient;
let stderr = "";
const events: EventParams[] = [];
const saves: SaveDocumentParams[] = [];
const told: string[] = [];

/** The stand-in editor's buffers, by URI. */
const buffers = new Map<string, { text: string; version: number }>();

function offsetAt(text: string, pos: { line: number; character: number }): number {
  let at = 0;
  for (let l = 0; l < pos.line; l++) at = text.indexOf("\n", at) + 1;
  return at + pos.character;
}

const host: SaveHost = {
  find(uri) {
    const buffer = buffers.get(uri);
    if (!buffer) return undefined;
    return {
      name: path.basename(fileURLToPath(uri)),
      save: async () => {
        writeFileSync(fileURLToPath(uri), buffer.text);
        await conn.sendNotification("textDocument/didSave", { textDocument: { uri } });
        return true;
      },
    };
  },
  inform: (message) => told.push(message),
};

function userTypes(uri: string, text: string): Promise<void> {
  const buffer = buffers.get(uri)!;
  buffer.text = text;
  buffer.version++;
  return conn.sendNotification("textDocument/didChange", { textDocument: { uri, version: buffer.version }, contentChanges: [{ text }] });
}

const edit = (id: string, oldText: string, newText: string) => ({ id, name: "edit", arguments: { path: "calc.py", oldText, newText } });
const bash = (id: string, command: string) => ({ id, name: "bash", arguments: { command } });

/** Prompt and wait for the run's agent_settled (a hang guard fails after 60 s); results by call id. */
async function run(text: string): Promise<Map<string, { content: string; isError: boolean }>> {
  const from = events.length;
  const { runId } = await crank.prompt({ text });
  const deadline = Date.now() + 60_000;
  while (!events.slice(from).some((p) => p.runId === runId && p.event.type === "agent_settled")) {
    if (Date.now() > deadline) throw new Error(`the run never settled\nserver log:\n${stderr.slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const results = new Map<string, { content: string; isError: boolean }>();
  for (const p of events.slice(from)) if (p.event.type === "tool_execution_end") results.set(p.event.toolCallId, p.event.result);
  return results;
}

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "crank-files-"));
  const ws = path.join(tmp, "project");
  mkdirSync(ws);
  calc = path.join(ws, "calc.py");
  writeFileSync(calc, CALC);
  const scriptFile = path.join(tmp, "script.json");
  const replies = [
    // 1. a clean buffer
    { toolCalls: [edit("e1", "def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b")] },
    { toolCalls: [bash("g1", "grep -n return calc.py")] },
    { text: "fixed" },
    // 2. the user's unsaved edits in it
    { toolCalls: [edit("e2", "def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a - b  # checked")] },
    { toolCalls: [bash("g2", "cat calc.py")] },
    { text: "checked" },
  ];
  writeFileSync(scriptFile, JSON.stringify({ replies }));
  const port = await startModelServer(scriptFile, (d) => (stderr += d));
  conn = startCrankServe(ws, (d) => (stderr += d));
  crank = new CrankClient(conn);
  crank.onEvent((p) => events.push(p));
  crank.onSaveDocument(async (p) => {
    saves.push(p);
    return answerSave(p, host);
  });
  answerServerRequests(conn);
  conn.onRequest("workspace/applyEdit", async (p: { edit: { documentChanges: { textDocument: { uri: string; version: number }; edits: { range: any; newText: string }[] }[] } }) => {
    for (const change of p.edit.documentChanges) {
      const buffer = buffers.get(change.textDocument.uri);
      if (!buffer || buffer.version !== change.textDocument.version) return { applied: false, failureReason: "version mismatch" };
      for (const e of change.edits) buffer.text = buffer.text.slice(0, offsetAt(buffer.text, e.range.start)) + e.newText + buffer.text.slice(offsetAt(buffer.text, e.range.end));
      buffer.version++;
      await conn.sendNotification("textDocument/didChange", { textDocument: { uri: change.textDocument.uri, version: buffer.version }, contentChanges: [{ text: buffer.text }] });
    }
    return { applied: true };
  });
  conn.listen();
  await initializeCrank(conn, ws, loopbackOptions(port, tmp, { permissionMode: "auto" }));
  const uri = pathToFileURL(calc).toString();
  buffers.set(uri, { text: CALC, version: 1 });
  await conn.sendNotification("textDocument/didOpen", { textDocument: { uri, languageId: "python", version: 1, text: CALC } });
});

after(async () => {
  await stopServers(conn);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("the agent's edit to an open document is saved before its next command reads the file", async () => {
  const results = await run("fix add");
  assert.equal(results.get("e1")?.isError, false, results.get("e1")?.content);
  const uri = pathToFileURL(calc).toString();
  assert.deepEqual(saves, [{ uri, unsavedChanges: false }]);
  assert.match(results.get("g1")!.content, /^2:    return a \+ b\n6:    return a - b/);
  const fixed = CALC.replace("a - b", "a + b");
  assert.equal(buffers.get(uri)!.text, fixed);
  assert.equal(readFileSync(calc, "utf8"), fixed);
  assert.deepEqual(told, []);
});

test("with the user's unsaved edits in it, both are saved and the user is told", async () => {
  const uri = pathToFileURL(calc).toString();
  const typed = buffers.get(uri)!.text + "\n\ndef mul(a, b):\n    return a * b\n";
  await userTypes(uri, typed);
  const results = await run("check sub");
  assert.equal(results.get("e2")?.isError, false, results.get("e2")?.content);
  assert.match(results.get("e2")!.content, /The user had unsaved changes in calc.py; the editor saved them/);
  assert.deepEqual(saves.at(-1), { uri, unsavedChanges: true });
  const both = typed.replace("def sub(a, b):\n    return a - b", "def sub(a, b):\n    return a - b  # checked");
  assert.equal(readFileSync(calc, "utf8"), both);
  assert.equal(results.get("g2")!.content, both.trimEnd());
  assert.equal(told.length, 1);
  assert.match(told[0], /Crank saved calc.py together with your unsaved changes/);
});
