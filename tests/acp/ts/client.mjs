// A client of `crank acp` built on the official ACP TypeScript SDK (pinned in
// package.json). Usage: node client.mjs PYTHON SESSION_DIR CWD OUT.json
// It spawns the agent, runs initialize (fs offered), session/new, one prompt
// (answering permissions "allow once" and fs requests from the disk), then
// session/list, and writes every raw line of the wire (both ways) and the answers
// to OUT.json for the Python test to judge against the pinned schema.
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [python, sessionDir, cwd, outFile] = process.argv.slice(2);
const agent = spawn(python, ["-m", "crank.acp", "--session-dir", sessionDir], {
  cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const wire = [];

function tapped(sender) {
  let pending = "";
  const decoder = new TextDecoder();
  return new TransformStream({
    transform(chunk, controller) {
      pending += decoder.decode(chunk, { stream: true });
      let end;
      while ((end = pending.indexOf("\n")) >= 0) {
        const line = pending.slice(0, end);
        pending = pending.slice(end + 1);
        if (line.trim()) wire.push({ sender, line });
      }
      controller.enqueue(chunk);
    },
  });
}

const fromAgent = Readable.toWeb(agent.stdout).pipeThrough(tapped("agent"));
const toClientOut = tapped("client");
toClientOut.readable.pipeTo(Writable.toWeb(agent.stdin)).catch(() => {});
const stream = acp.ndJsonStream(toClientOut.writable, fromAgent);

const updates = [];
const asked = [];
const app = acp
  .client({ name: "crank-ts-test" })
  .onRequest("session/request_permission", ({ params }) => {
    asked.push(params);
    const once = params.options.find((option) => option.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: once.optionId } };
  })
  .onRequest("fs/read_text_file", async ({ params }) => ({
    content: await readFile(params.path, "utf8"),
  }))
  .onRequest("fs/write_text_file", async ({ params }) => {
    await writeFile(params.path, params.content);
    return {};
  })
  .onNotification("session/update", ({ params }) => {
    updates.push(params.update);
  });

const answers = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "crank-ts-test", version: "1" },
  });
  const session = await ctx.request("session/new", { cwd, mcpServers: [] });
  const prompt = await ctx.request("session/prompt", {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "fix calc.py" }],
  });
  const listed = await ctx.request("session/list", { cwd });
  return { init, session, prompt, listed };
});
await writeFile(outFile, JSON.stringify({ ...answers, updates, asked, wire }));
agent.stdin.destroy(); // end of input: crank acp saves and exits
await new Promise((done) => (agent.exitCode === null ? agent.on("exit", done) : done()));
process.exit(0);
