// Prints what the chat page costs the browser on a long session: the time to draw a
// transcript of N messages, then to stream a reply of 60 text deltas into it (one per
// frame: at 60 frames a second about 1,000 ms is the floor), and the long tasks (over
// 50 ms, frames the user sees stutter) while it streams, at two sizes, so a cost that
// follows the length of the session shows. The page is the real one (dist/webview), in
// headless Chromium, with a stand-in for VS Code's webview API, as in
// test/webview/webview.test.ts. Run after the build (test.sh does it):
//   node esbuild.mjs --production && npx tsc -p tsconfig.test.json && node bench/render.mjs
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const { chatPageHtml } = require("../build/test/src/chat/html.js");

const DELTAS = 60;
let origin = "";
const server = createServer((req, res) => {
  if (req.url === "/") {
    res.writeHead(200, { "content-type": "text/html" });
    return res.end(chatPageHtml({ cspSource: origin, nonce: "bench", scriptUri: `${origin}/chat.js`, styleUri: `${origin}/chat.css` }));
  }
  const file = { "/chat.js": ["dist/webview/chat.js", "text/javascript"], "/chat.css": ["dist/webview/chat.css", "text/css"] }[req.url ?? ""];
  if (!file) return void res.writeHead(404).end();
  res.writeHead(200, { "content-type": file[1] });
  res.end(readFileSync(file[0]));
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
origin = `http://127.0.0.1:${server.address().port}`;

/** A session as a coding run writes it: a question, then replies that call a tool, and the tools' results. */
function transcript(n) {
  const messages = [];
  for (let i = 0; i < n; i++) {
    if (i % 4 === 0) messages.push({ role: "user", content: `Please fix test ${i}`, timestamp: i });
    else if (i % 2 === 1) messages.push({ role: "assistant", content: [{ type: "text", text: `Looking at step ${i} of the fix.` }, { type: "toolCall", id: `c${i}`, name: "read", arguments: { path: `shop/m${i}.py` } }], stopReason: "toolUse", timestamp: i });
    else messages.push({ role: "toolResult", toolCallId: `c${i - 1}`, toolName: "read", content: "x = 1\n".repeat(100), isError: false, timestamp: i });
  }
  return messages;
}

async function once(browser, n) {
  const page = await browser.newPage({ viewport: { width: 440, height: 900 } });
  await page.addInitScript(() => {
    window.__posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => undefined });
  });
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => window.__posted.some((m) => m.type === "ready"));
  const drawn = await page.evaluate(async (messages) => {
    const post = (m) => window.postMessage(m, "*");
    const state = { sessionId: "s", running: false, model: { api: "openai", id: "m" }, permissionMode: "ask", trusted: true, queue: { steering: [], followUp: [] }, usage: { contextTokens: 0, contextWindow: 200000, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 }, sandbox: { mode: "workspace-write", network: false, available: true, confined: true, detail: "" }, sessionFile: "/s.jsonl", seq: 0 };
    post({ type: "workspace", name: "ws", folders: 1 });
    post({ type: "action", action: { type: "server", status: "running" } });
    post({ type: "action", action: { type: "state", workspace: "file:///ws", state } });
    const t0 = performance.now();
    post({ type: "action", action: { type: "transcript", messages, sessionId: "s", workspace: "file:///ws" } });
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
    return performance.now() - t0;
  }, transcript(n));
  await page.waitForTimeout(500);
  const streamed = await page.evaluate(async (deltas) => {
    const long = [];
    const observer = new PerformanceObserver((list) => list.getEntries().forEach((e) => long.push(e.duration)));
    observer.observe({ type: "longtask" });
    const post = (m) => window.postMessage(m, "*");
    const event = (seq, e) => ({ type: "action", action: { type: "event", params: { workspace: "file:///ws", sessionId: "s", runId: "r", seq, event: e } } });
    const t0 = performance.now();
    post(event(1, { type: "agent_start" }));
    post(event(2, { type: "message_start", message: { role: "assistant", content: [], timestamp: 1 } }));
    for (let i = 0; i < deltas; i++) {
      post(event(3 + i, { type: "message_update", delta: { kind: "text", contentIndex: 0, text: "tok " } }));
      await new Promise((r) => requestAnimationFrame(r));
    }
    const took = performance.now() - t0;
    await new Promise((r) => setTimeout(r, 100));
    observer.disconnect();
    return { took, long: long.length, worst: Math.max(0, ...long) };
  }, DELTAS);
  await page.close();
  return { drawn, ...streamed };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(" ")} (2 shared cores)`);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
const figures = {};
for (const n of [1000, 5000]) {
  const runs = [];
  for (let i = 0; i < 5; i++) runs.push(await once(browser, n));
  figures[n] = median(runs.map((r) => r.took));
  console.log(
    `${n} messages: transcript drawn in ${median(runs.map((r) => r.drawn)).toFixed(0)} ms; ${DELTAS} deltas streamed in ${figures[n].toFixed(0)} ms ` +
      `(floor about ${Math.round((DELTAS * 1000) / 60)}), long tasks ${median(runs.map((r) => r.long))}, worst ${median(runs.map((r) => r.worst)).toFixed(0)} ms (medians of 5)`,
  );
}
console.log(`5,000 / 1,000 messages, the deltas: ${(figures[5000] / figures[1000]).toFixed(2)} (1.0: streaming does not follow the session's length)`);
console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
await browser.close();
server.close();
