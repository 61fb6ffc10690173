// Prints how long the chat reducer takes to fold a streamed reply of N text deltas into
// a transcript that already holds M items, at two sizes each, so a quadratic cost shows;
// then how long it takes to turn a resumed transcript of tool-call turns into items
// (crank/messages after an open), at 5,000 and 50,000 messages, and the ratio.
// Run after `npx tsc -p tsconfig.test.json` (test.sh does it): node bench/reduce.mjs
import { performance } from "node:perf_hooks";
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { initialState, reduce } = require("../build/test/src/chat/state.js");

function history(m) {
  const msgs = [];
  for (let i = 0; i < m / 2; i++) {
    msgs.push({ role: "user", content: `question ${i}` });
    msgs.push({ role: "assistant", content: [{ type: "text", text: `answer ${i} `.repeat(20) }], stopReason: "stop" });
  }
  return msgs;
}

function once(deltas, items) {
  let s = reduce(initialState(), { type: "transcript", messages: history(items), sessionId: "s" });
  const ev = (seq, event) => ({ type: "event", params: { workspace: "w", sessionId: "s", runId: "r", seq, event } });
  s = reduce(s, ev(0, { type: "message_start", message: { role: "assistant", content: [] } }));
  const t0 = performance.now();
  for (let i = 1; i <= deltas; i++) s = reduce(s, ev(i, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "tok " } }));
  return performance.now() - t0;
}

const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const items of [100, 1000]) {
  for (const deltas of [2000, 8000]) {
    const runs = Array.from({ length: 7 }, () => once(deltas, items));
    const ms = median(runs);
    console.log(`items=${items} deltas=${deltas}: median ${ms.toFixed(1)} ms, ${((ms * 1000) / deltas).toFixed(2)} µs/delta`);
  }
}

function turns(m) {
  const msgs = [{ role: "user", content: "go" }];
  for (let i = 0; msgs.length < m; i++) {
    const id = `call_${i}`;
    msgs.push({ role: "assistant", content: [{ type: "toolCall", id, name: "read", arguments: { path: `f${i}.py` } }], stopReason: "toolUse" });
    msgs.push({ role: "toolResult", toolCallId: id, toolName: "read", content: "x".repeat(600), isError: false });
  }
  return msgs;
}

const folds = [];
for (const m of [5000, 50000]) {
  const messages = turns(m);
  const runs = Array.from({ length: 5 }, () => {
    const t0 = performance.now();
    reduce(initialState(), { type: "transcript", messages, sessionId: "s" });
    return performance.now() - t0;
  });
  folds.push(median(runs));
  console.log(`transcript of ${m} messages into items: median ${folds.at(-1).toFixed(1)} ms`);
}
console.log(`50,000 against 5,000 messages: ${(folds[1] / folds[0]).toFixed(2)} (10 is linear)`);
