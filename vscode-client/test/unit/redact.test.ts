/**
 * Keys out of the output channel. The trace is produced by the real vscode-jsonrpc
 * tracer at `Trace.Verbose` (what `crank.trace.server: verbose` turns on), written the
 * way vscode-languageclient writes it (`[Trace - time] message`, then the data), into
 * a channel wrapped by `redactingChannel`. The channel itself is a recording stand-in:
 * VS Code's OutputChannel cannot run outside VS Code.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { PassThrough } from "node:stream";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, Trace, TraceFormat } from "vscode-jsonrpc/node";
import { initOptions, redacted, type CrankSettings } from "../../src/protocol/launch";
import { redactingChannel, redactSecrets } from "../../src/protocol/redact";

const KEY = "sk-ant-api03-stored-in-secret-storage-0123";
const OPAQUE = "opaque-key-with-no-shape-7f3a";
const settings: CrankSettings = { command: [], python: "", api: "anthropic", baseUrl: "", model: "", permissionMode: undefined, sessionDir: "" };

class Recording {
  readonly name = "Crank";
  text = "";
  append(value: string): void {
    this.text += value;
  }
  appendLine(value: string): void {
    this.text += value + "\n";
  }
  info(message: string, ...args: unknown[]): void {
    this.text += [message, ...args.map(String)].join(" ") + "\n";
  }
}

async function tracedInitialize(format: TraceFormat, key: string): Promise<{ shown: string; unwrapped: string }> {
  const recording = new Recording();
  const plain = new Recording();
  const wrapped = redactingChannel(recording, () => [key]);
  const channel = {
    append: (v: string) => (wrapped.append(v), plain.append(v)),
    appendLine: (v: string) => (wrapped.appendLine(v), plain.appendLine(v)),
  };
  const a = new PassThrough();
  const b = new PassThrough();
  const client = createMessageConnection(new StreamMessageReader(a), new StreamMessageWriter(b));
  const server = createMessageConnection(new StreamMessageReader(b), new StreamMessageWriter(a));
  server.onRequest("initialize", () => ({ capabilities: {} }));
  client.listen();
  server.listen();
  // vscode-languageclient's tracer: a string message and its data, or a data object (JSON format)
  const tracer = {
    log(message: unknown, data?: string) {
      if (typeof message === "string") {
        channel.appendLine(`[Trace - 10:00:00] ${message}`);
        if (data) channel.appendLine(data);
      } else {
        channel.append("[LSP   - 10:00:00] ");
        channel.appendLine(JSON.stringify(message));
      }
    },
  };
  await client.trace(Trace.Verbose, tracer, { traceFormat: format });
  await client.sendRequest("initialize", { processId: 1, rootUri: null, capabilities: {}, initializationOptions: { crank: initOptions(settings, key, true) } });
  client.dispose();
  server.dispose();
  return { shown: recording.text, unwrapped: plain.text };
}

test("a verbose trace of initialize shows no key, in text and JSON trace formats", async () => {
  for (const format of [TraceFormat.Text, TraceFormat.JSON]) {
    for (const key of [KEY, OPAQUE]) {
      const { shown: text, unwrapped } = await tracedInitialize(format, key);
      assert.ok(unwrapped.includes(key), "the tracer itself writes the key (what verbose used to log)");
      assert.match(text, /initialize/, "the trace was written");
      assert.match(text, /<redacted>/);
      assert.ok(!text.includes(key), `the key is in the ${format} trace:\n${text}`);
    }
  }
});

test("redactSecrets takes out key fields, bearer tokens and sk- tokens, and leaves the rest", () => {
  assert.equal(redactSecrets('{"apiKey": "abc\\"def", "model": "m"}'), '{"apiKey": "<redacted>", "model": "m"}');
  assert.equal(redactSecrets("authorization: Bearer abc.def"), "authorization: Bearer <redacted>");
  assert.equal(redactSecrets("x-api-key='zzz'"), "x-api-key='<redacted>'");
  assert.equal(redactSecrets("key sk-proj-0123456789abcdef end"), "key sk-<redacted> end");
  assert.equal(redactSecrets('{"token": "progress-1", "text": "hello"}'), '{"token": "progress-1", "text": "hello"}');
  assert.equal(redactSecrets(`started with ${OPAQUE}`, [OPAQUE, undefined]), "started with <redacted>");
});

test("every method of the wrapped channel redacts its string arguments, others pass through", () => {
  const recording = new Recording();
  const channel = redactingChannel(recording, () => [OPAQUE]);
  channel.info(`a ${OPAQUE}`, OPAQUE, 3);
  channel.appendLine(JSON.stringify(redacted(initOptions(settings, OPAQUE, false))));
  assert.ok(!recording.text.includes(OPAQUE));
  assert.equal(channel.name, "Crank");
});
