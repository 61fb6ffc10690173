/**
 * CrankClient over a real vscode-jsonrpc connection pair (in-memory streams). The far
 * end is a small JSON-RPC peer written here, standing in for `crank serve`, which is
 * exercised for real by test/integration.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { CancellationTokenSource, createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient } from "../../src/protocol/client";
import type { EventParams, PermissionResponse } from "../../src/protocol/types";

function pair(): { client: MessageConnection; server: MessageConnection; close(): void } {
  const a = new PassThrough();
  const b = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(a), new StreamMessageWriter(b));
  const server = createMessageConnection(new StreamMessageReader(b), new StreamMessageWriter(a));
  client.listen();
  server.listen();
  return { client, server, close: () => (client.dispose(), server.dispose()) };
}

test("requests go out under the protocol's method names, without undefined fields", async () => {
  const { client, server, close } = pair();
  const seen: [string, unknown][] = [];
  server.onRequest((method, params) => {
    seen.push([method, params]);
    return method === "crank/prompt" ? { sessionId: "s1", runId: "r1" } : { stopReason: "idle" };
  });
  const crank = new CrankClient(client);
  assert.deepEqual(await crank.prompt({ workspace: "file:///w", text: "hi", context: undefined }), { sessionId: "s1", runId: "r1" });
  assert.deepEqual(await crank.abort({ workspace: "file:///w" }), { stopReason: "idle" });
  assert.deepEqual(seen, [
    ["crank/prompt", { workspace: "file:///w", text: "hi" }],
    ["crank/abort", { workspace: "file:///w" }],
  ]);
  close();
});

test("a server error reaches the caller with its Crank code", async () => {
  const { client, server, close } = pair();
  const { ResponseError } = await import("vscode-jsonrpc/node");
  server.onRequest("crank/prompt", () => new ResponseError(1001, "run in progress"));
  await assert.rejects(new CrankClient(client).prompt({ text: "x" }), (e: { code: number }) => e.code === 1001);
  close();
});

test("removeQueued sends crank/removeQueued with the index and the text, and returns the queues", async () => {
  const { client, server, close } = pair();
  let asked: unknown;
  server.onRequest("crank/removeQueued", (p: unknown) => {
    asked = p;
    return { steering: ["s0", "s1"], followUp: ["f1"], removed: "f0" };
  });
  const after = await new CrankClient(client).removeQueued({ workspace: "w" }, "followUp", 0, "f0");
  assert.deepEqual(asked, { workspace: "w", queue: "followUp", index: 0, text: "f0" });
  assert.deepEqual(after, { steering: ["s0", "s1"], followUp: ["f1"] });
  close();
});

test("crank/event notifications and crank/requestPermission requests reach their handlers", async () => {
  const { client, server, close } = pair();
  const crank = new CrankClient(client);
  const got: EventParams[] = [];
  const arrived = new Promise<void>((resolve) =>
    crank.onEvent((p) => {
      got.push(p);
      resolve();
    }),
  );
  crank.onPermissionRequest(async (p) => ({ decision: p.toolName === "bash" ? "reject" : "allow", reason: "no shells" }));
  await server.sendNotification("crank/event", { workspace: "w", sessionId: "s", seq: 0, event: { type: "agent_start" } });
  await arrived;
  assert.equal(got[0].event.type, "agent_start");
  const answer = await server.sendRequest<PermissionResponse>("crank/requestPermission", { toolName: "bash", toolCallId: "c", arguments: {} });
  assert.deepEqual(answer, { decision: "reject", reason: "no shells" });
  close();
});

test("a crank/requestPermission the server cancels ($/cancelRequest) tells the handler", { timeout: 10_000 }, async () => {
  const { client, server, close } = pair();
  const crank = new CrankClient(client);
  let withdrawn!: () => void;
  let asked!: () => void;
  const heard = new Promise<void>((r) => (withdrawn = r));
  const asking = new Promise<void>((r) => (asked = r));
  crank.onPermissionRequest(
    (_p, cancelled) =>
      new Promise<PermissionResponse>((resolve) => {
        cancelled(() => {
          withdrawn();
          resolve({ decision: "reject", reason: "withdrawn" });
        });
        asked();
      }),
  );
  const source = new CancellationTokenSource();
  const answer = server.sendRequest<PermissionResponse>("crank/requestPermission", { toolName: "bash", toolCallId: "c", arguments: {} }, source.token);
  // Cancel only once the question is being asked (as an abort during a prompt does).
  await asking;
  source.cancel();
  await heard;
  assert.deepEqual(await answer.catch((e: Error) => ({ error: e.message })), { decision: "reject", reason: "withdrawn" });
  close();
});
