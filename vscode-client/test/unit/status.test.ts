import { test } from "node:test";
import assert from "node:assert/strict";
import { modelLabel, RunTracker, statusBarView } from "../../src/chat/status";
import { modelSwitchFailure } from "../../src/chat/notices";
import type { CrankEvent, EventParams } from "../../src/protocol/types";

const ev = (workspace: string, event: CrankEvent, seq = 1): EventParams => ({ workspace, sessionId: "s", runId: "r", seq, event });

test("the status bar says idle before the server is needed, and running with the context use", () => {
  assert.match(statusBarView({ server: "idle", running: 0 }).tooltip, /starts when the chat or a command first needs it/);
  const idle = statusBarView({ server: "running", running: 0, usage: { contextTokens: 2000, contextWindow: 8000 } });
  assert.equal(idle.text, "$(comment-discussion) Crank 25%");
  assert.match(idle.tooltip, /idle.*\n.*2k of 8k tokens \(25%\)/s);
  const busy = statusBarView({ server: "running", running: 1 });
  assert.match(busy.text, /loading~spin/);
  assert.match(busy.tooltip, /working/);
  assert.equal(statusBarView({ server: "notInstalled", running: 0 }).tone, "error");
  assert.equal(statusBarView({ server: "down", running: 0 }).tone, "error");
  assert.match(statusBarView({ server: "starting", running: 0 }).tooltip, /Click to open the chat/);
});

test("a zero context window shows no percentage rather than Infinity", () => {
  assert.equal(statusBarView({ server: "running", running: 0, usage: { contextTokens: 10, contextWindow: 0 } }).text, "$(comment-discussion) Crank");
});

test("the tracker follows runs per workspace from agent_start to agent_settled", () => {
  const t = new RunTracker();
  assert.equal(t.anyRunning, false);
  t.onEvent(ev("file:///a", { type: "agent_start" }));
  t.onEvent(ev("file:///b", { type: "agent_start" }));
  assert.equal(t.runningCount, 2);
  t.onEvent(ev("file:///a", { type: "agent_settled" }));
  assert.equal(t.runningCount, 1);
  assert.equal(t.onEvent(ev("file:///b", { type: "turn_start", turn: 1 })), false, "other events change nothing shown");
  t.onEvent(ev("file:///b", { type: "usage_update", contextTokens: 5, contextWindow: 10, input: 1, output: 1, cacheRead: 0, cacheWrite: 0, cost: 0 }));
  assert.equal(t.usageOf("file:///b")?.contextTokens, 5);
  assert.equal(t.usageOf("file:///a"), undefined);
  t.clear();
  assert.equal(t.anyRunning, false);
});

test("a run waiting for a permission answer says so, not 'working'", () => {
  const v = statusBarView({ server: "running", running: 1, waiting: 1 });
  assert.doesNotMatch(v.text, /loading~spin/);
  assert.match(v.tooltip, /waiting for your approval/);
  assert.match(statusBarView({ server: "running", running: 1, waiting: 0 }).tooltip, /working/);
});

test("after a model switch the status bar takes the usage crank/state reports (the footer's)", () => {
  const t = new RunTracker();
  t.onEvent(ev("file:///a", { type: "usage_update", contextTokens: 93000, contextWindow: 200000, input: 1, output: 1, cacheRead: 0, cacheWrite: 0, cost: 0 }));
  // switched to a model with a 100k window: no usage_update, only the state says so
  t.setUsage("file:///a", { contextTokens: 93000, contextWindow: 100000, input: 1, output: 1, cacheRead: 0, cacheWrite: 0, cost: 0 } as never);
  assert.equal(statusBarView({ server: "running", running: 0, usage: t.usageOf("file:///a") }).text, "$(comment-discussion) Crank 93%");
});

test("a refused model switch is a Crank notice in the server's words, with Set API Key when a key is missing", () => {
  const n = modelSwitchFailure(new Error("Crank cannot switch to anthropic model claude-x: The anthropic provider at https://api.anthropic.com needs an API key of its own: set ANTHROPIC_API_KEY"));
  assert.match(n.text, /^Crank: Crank cannot switch to anthropic model claude-x/);
  assert.equal(n.action, "Set API Key");
  assert.equal(modelSwitchFailure({ message: "unknown model" }).action, undefined);
});

test("a model named by the file a local server loaded shows the file's name; other ids show whole", () => {
  assert.equal(modelLabel("/root/models/SmolLM2-135M-Instruct.Q4_1.gguf"), "SmolLM2-135M-Instruct.Q4_1.gguf");
  assert.equal(modelLabel("~/m/qwen.gguf"), "qwen.gguf");
  assert.equal(modelLabel("C:\\models\\phi.gguf"), "phi.gguf");
  assert.equal(modelLabel("models/llama.bin"), "llama.bin");
  assert.equal(modelLabel("claude-sonnet-4-5"), "claude-sonnet-4-5");
  assert.equal(modelLabel("meta-llama/Llama-3.1-8B-Instruct"), "meta-llama/Llama-3.1-8B-Instruct", "a hub id is its name");
  assert.equal(modelLabel("qwen2.5:7b"), "qwen2.5:7b");
});
