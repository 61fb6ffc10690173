/**
 * Drives the real `crank serve` from Node with the same CrankClient the extension uses,
 * against the project's loopback model server (tests/support/model_server.py), over
 * real stdio and real HTTP. Off by default: test.sh runs it only with CRANK_INTEGRATION=1
 * (the server is being built in parallel). Needs CRANK_PYTHON, a Python with crank.
 *
 * The model server's script is {"replies": [{text?, toolCalls?: [{id?, name, arguments}]}]}
 * (see the docstring of tests/support/model_server.py), served one reply per request.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { CrankClient, experimentalCapabilities } from "../../src/protocol/client";
import type { CrankEvent, EventParams, PermissionRequest } from "../../src/protocol/types";

const repo = path.resolve(process.cwd(), "..");
const python = process.env.CRANK_PYTHON ?? "python3";
const procs: ChildProcess[] = [];
let tmp = "";
let conn: MessageConnection;
let crank: CrankClient;
let workspace = "";
const events: EventParams[] = [];
const permissions: PermissionRequest[] = [];
let stderr = "";

type Block = { type: "text"; text: string } | { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> };
const text = (t: string): Block => ({ type: "text", text: t });
const bash = (id: string, command: string): Block => ({ type: "toolCall", id, name: "bash", arguments: { command } });

/** Replies in the order the agent will ask for them across all the tests below. */
function script(): unknown {
  const replies: Block[][] = [
    // 1. prompt: a bash call, then a final answer
    [text("Running it."), bash("c1", "echo hello-from-bash")],
    [text("The command printed hello-from-bash.")],
    // 2. steer: a slow command, during which the client steers; then two answers
    [bash("c2", "sleep 2; echo slept")],
    [text("Steered: saying hi.")],
    // 3. abort: a command that would take long
    [bash("c3", "sleep 30")],
    [text("never reached")],
  ];
  return {
    replies: replies.map((content) => {
      const said = content.filter((b) => b.type === "text").map((b) => (b as { text: string }).text).join("");
      const toolCalls = content
        .filter((b) => b.type === "toolCall")
        .map((b) => {
          const call = b as { id: string; name: string; arguments: Record<string, unknown> };
          return { id: call.id, name: call.name, arguments: call.arguments };
        });
      return { ...(said ? { text: said } : {}), ...(toolCalls.length ? { toolCalls } : {}) };
    }),
  };
}

function startModelServer(scriptFile: string): Promise<number> {
  const p = spawn(python, [path.join(repo, "tests", "support", "model_server.py"), "--script", scriptFile], { stdio: ["ignore", "pipe", "pipe"] });
  procs.push(p);
  return new Promise((resolve, reject) => {
    let out = "";
    p.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    p.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    p.on("exit", (code) => reject(new Error(`model server exited (${code}): ${stderr}`)));
  });
}

/** The first event from index `from` on that matches; a hang guard (not a speed check) fails after 60 s. */
function waitFor(pred: (e: CrankEvent, p: EventParams) => boolean, from = 0): Promise<EventParams> {
  const deadline = Date.now() + 60_000;
  return new Promise((resolve, reject) => {
    const check = () => {
      const hit = events.slice(from).find((p) => pred(p.event, p));
      if (hit) resolve(hit);
      else if (Date.now() > deadline)
        reject(new Error(`event never came; saw ${events.slice(from).map((p) => p.event.type).join(", ")}\nserver log:\n${stderr.slice(-4000)}`));
      else setTimeout(check, 20);
    };
    check();
  });
}

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "crank-int-"));
  const ws = path.join(tmp, "project");
  rmSync(ws, { recursive: true, force: true });
  mkdirSync(ws);
  writeFileSync(path.join(ws, "calc.py"), "def add(a, b):\n    return a - b\n");
  const scriptFile = path.join(tmp, "script.json");
  writeFileSync(scriptFile, JSON.stringify(script()));
  const port = await startModelServer(scriptFile);

  const server = spawn(python, ["-m", "crank", "serve"], {
    cwd: ws,
    env: { ...process.env, PYTHONPATH: [path.join(repo, "server"), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  procs.push(server);
  server.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  conn = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  crank = new CrankClient(conn);
  crank.onEvent((p) => events.push(p));
  crank.onPermissionRequest(async (p) => {
    permissions.push(p);
    return { decision: "allowSession" };
  });
  conn.onRequest("window/workDoneProgress/create", () => null);
  conn.onRequest("workspace/configuration", (p: { items: unknown[] }) => p.items.map(() => null));
  conn.listen();
  workspace = pathToFileURL(ws).toString();
  const init = await conn.sendRequest<{ capabilities: any; serverInfo?: { name: string } }>("initialize", {
    processId: process.pid,
    rootUri: workspace,
    workspaceFolders: [{ uri: workspace, name: "project" }],
    capabilities: { experimental: experimentalCapabilities, window: { workDoneProgress: true } },
    initializationOptions: {
      crank: {
        provider: { api: "openai", baseUrl: `http://127.0.0.1:${port}/v1`, model: "test", apiKey: "x" },
        sessionDir: path.join(tmp, "sessions"),
        trusted: true,
        permissionMode: "ask",
      },
    },
  });
  assert.equal(init.serverInfo?.name, "crank");
  assert.equal(init.capabilities.experimental.crank.protocolVersion, 1);
  await conn.sendNotification("initialized", {});
});

after(async () => {
  try {
    await Promise.race([conn?.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 2000))]);
    await conn?.sendNotification("exit");
  } catch {
    // the server may already be gone
  }
  conn?.dispose();
  for (const p of procs) p.kill();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

test("prompt streams text, runs a permitted bash call with a tool card's data, and settles once", async () => {
  const from = events.length;
  const res = await crank.prompt({ workspace, text: "run echo" });
  assert.ok(res.sessionId && res.runId, `accepted with ids: ${JSON.stringify(res)}`);
  await waitFor((e) => e.type === "agent_settled", from);
  const mine = events.slice(from).filter((p) => p.runId === res.runId || p.runId === undefined);
  const start = mine.find((p) => p.event.type === "tool_execution_start")!.event as Extract<CrankEvent, { type: "tool_execution_start" }>;
  assert.equal(start.toolName, "bash");
  assert.equal(start.arguments.command, "echo hello-from-bash");
  const end = mine.find((p) => p.event.type === "tool_execution_end")!.event as Extract<CrankEvent, { type: "tool_execution_end" }>;
  assert.match(end.result.content, /hello-from-bash/);
  assert.equal(end.result.isError, false);
  assert.equal(permissions.at(-1)?.toolName, "bash");
  const deltas = mine.filter((p) => p.event.type === "message_update" && p.event.delta.kind === "text").map((p) => (p.event as any).delta.text).join("");
  assert.match(deltas, /hello-from-bash\./);
  assert.equal(mine.filter((p) => p.event.type === "agent_settled").length, 1);
  const seqs = mine.map((p) => p.seq);
  assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "seq strictly increases");
  const { messages } = await crank.messages({ workspace });
  assert.equal(messages[0].role, "user");
});

test("steering while a command runs is queued, reported, and enters the transcript", async () => {
  const from = events.length;
  await crank.prompt({ workspace, text: "sleep a bit" });
  await waitFor((e) => e.type === "tool_execution_start", from);
  const queued = await crank.prompt({ workspace, text: "then say hi", whileRunning: "steer" });
  assert.equal(queued.queued, "steer");
  await waitFor((e) => e.type === "queue_update" && e.steering.includes("then say hi"), from);
  await waitFor((e) => e.type === "agent_settled", from);
  const { messages } = await crank.messages({ workspace });
  assert.ok(messages.some((m) => m.role === "user" && m.content === "then say hi"));
});

test("abort stops a long command and answers only after agent_settled", async () => {
  const from = events.length;
  await crank.prompt({ workspace, text: "wait long" });
  await waitFor((e) => e.type === "tool_execution_start", from);
  const res = await crank.abort({ workspace });
  assert.equal(res.stopReason, "aborted");
  assert.ok(events.slice(from).some((p) => p.event.type === "agent_settled"), "agent_settled before the abort response");
  const state = await crank.state({ workspace });
  assert.equal(state.running, false);
});
