/**
 * Images through the extension's own client code (CrankClient) against the real
 * `crank serve` and the loopback model server: the agent reads a PNG over 8 KB, the
 * tool result carries it inline live, the replayed transcript holds only its hash, and
 * `crank/image` gives back exactly the file's bytes (and clear errors for a bad or an
 * unknown hash). Runs with CRANK_INTEGRATION=1 (test.sh).
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import type { MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient } from "../../src/protocol/client";
import { answerServerRequests, initializeCrank, loopbackOptions, startCrankServe, startModelServer, stopServers } from "../e2e/harness";
import { errorCodesFrom, type EventParams, type ShownImage, type Message } from "../../src/protocol/types";
import { noisePng } from "../fixtures/png";

const PNG = noisePng(96);
let tmp = "";
let conn: MessageConnection;
let crank: CrankClient;
let workspace = "";
let codes: ReturnType<typeof errorCodesFrom> = {};
let stderr = "";
const events: EventParams[] = [];

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "crank-int-img-"));
  const ws = path.join(tmp, "project");
  mkdirSync(ws);
  writeFileSync(path.join(ws, "pixels.png"), PNG);
  const scriptFile = path.join(tmp, "script.json");
  writeFileSync(scriptFile, JSON.stringify({ replies: [{ toolCalls: [{ id: "img-1", name: "read", arguments: { path: "pixels.png" } }] }, { text: "Noise." }] }));
  const port = await startModelServer(scriptFile, (d) => (stderr += d));
  conn = startCrankServe(ws, (d) => (stderr += d));
  crank = new CrankClient(conn);
  crank.onEvent((p) => events.push(p));
  crank.onPermissionRequest(async () => ({ decision: "allowSession" }));
  answerServerRequests(conn);
  conn.listen();
  workspace = pathToFileURL(ws).toString();
  const init = await initializeCrank(conn, ws, loopbackOptions(port, tmp, { trusted: true, permissionMode: "ask" }));
  codes = errorCodesFrom(init);
});

after(async () => {
  await stopServers(conn);
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A hang guard (not a speed check): the event that `pred` picks, within 60 s. */
function settled(): Promise<void> {
  const deadline = Date.now() + 60_000;
  return new Promise((resolve, reject) => {
    const check = () => {
      if (events.some((p) => p.event.type === "agent_settled")) resolve();
      else if (Date.now() > deadline) reject(new Error(`no agent_settled; server log:\n${stderr.slice(-4000)}`));
      else setTimeout(check, 20);
    };
    check();
  });
}

const toolImages = (m: Message | undefined): ShownImage[] => (m && m.role === "toolResult" ? (m.images ?? []) : []);

test("a read PNG comes on the tool result by hash, live as replayed, and crank/image gives back its exact bytes", async () => {
  const { sessionId } = await crank.prompt({ workspace, text: "look at pixels.png" });
  await settled();
  const sha = createHash("sha256").update(PNG).digest("hex");
  const live = events.map((p) => p.event).find((e) => e.type === "message_end" && e.message.role === "toolResult");
  assert.ok(live && live.type === "message_end");
  const [inline] = toolImages(live.message);
  assert.ok(inline && inline.data === undefined && inline.sha256 === sha, "live, the reference a replay gives (issue 34.7)");
  assert.equal(inline?.name, "pixels.png");

  // Read back from the session file, as after a reload: another session, then this one again.
  await crank.newSession({ workspace });
  await crank.openSession({ workspace, sessionId });
  const { messages } = await crank.messages({ workspace });
  const [stored] = toolImages(messages.find((m) => m.role === "toolResult"));
  assert.ok(stored, JSON.stringify(messages));
  assert.ok(stored.data === undefined, "replayed, only the reference"); // (not equal: a failure would print 36 KB of base64)
  assert.equal(stored.sha256, sha);
  assert.equal(stored.bytes, PNG.length);

  const got = await crank.image({ workspace, sha256: sha });
  assert.equal(got.mimeType, "image/png");
  assert.equal(got.bytes, PNG.length);
  assert.ok(Buffer.from(got.data, "base64").equals(PNG), "the blob's bytes, unchanged");
});

test("crank/image refuses a malformed hash (-32602) and one no message refers to (no_such_image), each saying why", async () => {
  await assert.rejects(crank.image({ workspace, sha256: "../etc/passwd" }), (err: { code?: number; message?: string }) => err.code === -32602 && /sha256: expected 64 lowercase hex digits/.test(err.message ?? ""));
  const unknown = "0".repeat(64);
  assert.ok(codes.noSuchImage, `initialize advertises noSuchImage: ${JSON.stringify(codes)}`);
  await assert.rejects(crank.image({ workspace, sha256: unknown }), (err: { code?: number; message?: string }) => err.code === codes.noSuchImage && (err.message ?? "").includes(unknown.slice(0, 12)));
});
