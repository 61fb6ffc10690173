/**
 * The chat page in headless Chromium (playwright-core, system Chromium).
 *
 * VS Code cannot run here, so a stub `acquireVsCodeApi` stands in for it: it records
 * what the page posts, and the test posts host messages into the page exactly as the
 * extension does. The page is served by a real HTTP server on 127.0.0.1 with the same
 * HTML (and content security policy) the extension builds. Screenshots go to
 * build/screenshots/ for a person to look at.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { chatPageHtml } from "../../src/chat/html";
import type { HostMessage } from "../../src/chat/protocol";
import { loadRun, type Step } from "../unit/fixture";

const root = process.cwd();
const shots = path.join(root, "build", "screenshots");
const run = loadRun();
let server: Server;
let origin = "";
let context: BrowserContext;
let page: Page;
let profile = "";
const violations: string[] = [];

const files: Record<string, [string, string]> = {
  "/chat.js": [path.join(root, "dist", "webview", "chat.js"), "text/javascript"],
  "/chat.css": [path.join(root, "dist", "webview", "chat.css"), "text/css"],
  "/theme-dark.css": [path.join(root, "test", "webview", "theme-dark.css"), "text/css"],
};

before(async () => {
  server = createServer((req, res) => {
    if (req.url === "/" || req.url === "/index.html") {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(chatPageHtml({ cspSource: origin, nonce: "TestNonce123", scriptUri: `${origin}/chat.js`, styleUri: `${origin}/chat.css` }));
      return;
    }
    const f = files[req.url ?? ""];
    if (!f) return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": f[1] });
    res.end(readFileSync(f[0]));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const addr = server.address();
  origin = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  mkdirSync(shots, { recursive: true });
  profile = mkdtempSync(path.join(tmpdir(), "crank-chromium-"));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    // Chromium keeps crash reports under the home's .config whatever its profile: a
    // home of the test's own, not the user's (it left ~/.config/chromium behind).
    env: { ...process.env, HOME: profile, XDG_CONFIG_HOME: profile, XDG_CACHE_HOME: profile },
    viewport: { width: 440, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
  page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(m.text());
  });
  page.on("pageerror", (e) => violations.push(`page error: ${e.message}`));
  await page.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; __state: unknown; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    w.__state = undefined;
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => w.__state,
      setState: (s: unknown) => (w.__state = s),
    });
    document.addEventListener("securitypolicyviolation", (e) => console.error(`Content Security Policy violation: ${e.violatedDirective}`));
  });
  await page.goto(`${origin}/`);
  await page.addStyleTag({ url: `${origin}/theme-dark.css` });
});

after(async () => {
  await context?.close();
  server?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function host(...msgs: HostMessage[]): Promise<void> {
  await page.evaluate((ms) => ms.forEach((m) => window.postMessage(m, "*")), msgs);
}
function asHost(steps: Step[]): HostMessage[] {
  return steps.map((s, i) =>
    "notify" in s
      ? { type: "action", action: { type: "event", params: s.params } }
      : { type: "action", action: { type: "permissionRequest", id: `perm-${i}`, request: s.params } },
  );
}
/** What the page posted, without the drafts it sends as the input changes (the last test looks at those). */
async function posted(): Promise<any[]> {
  return page.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted.filter((m) => m.type !== "draft"));
}
async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(shots, `${name}.png`) });
}

test("the page says ready and starts without CSP violations", async () => {
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "ready"));
  await host(
    { type: "workspace", name: "calc", folders: 2 },
    { type: "action", action: { type: "server", status: "running" } },
    { type: "action", action: { type: "models", models: [{ api: "anthropic", id: "claude-sonnet-4-5", contextWindow: 200000, source: "catalog" }, { api: "openai", id: "qwen2.5-coder", contextWindow: 32768, source: "server" }] } },
    {
      type: "action",
      action: {
        type: "state",
        state: {
          sessionId: run.sessionId, running: false, model: { api: "anthropic", id: "claude-sonnet-4-5" }, permissionMode: "ask", trusted: true,
          queue: { steering: [], followUp: [] }, usage: { contextTokens: 0, contextWindow: 200000, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 },
          sandbox: { mode: "workspace-write", network: false, available: true, confined: true, detail: "" }, sessionFile: "/s.jsonl", seq: 0,
        },
        workspace: run.workspace,
      },
    },
  );
  await page.waitForSelector(".empty:not([hidden])");
  await shot("0-empty");
  assert.deepEqual(violations, []);
});

test("a recorded run streams text, then shows tool, edit and permission cards and the meter", async () => {
  const steps = run.untilPermission;
  // Stop in the middle of the second assistant message: its text must already be on screen.
  const cut = steps.findIndex((s) => "notify" in s && s.params.event.type === "message_update" && s.params.event.delta.text.includes("subtracts"));
  await host(...asHost(steps.slice(0, cut + 1)));
  const streaming = page.locator(".msg.assistant.streaming");
  await streaming.waitFor();
  assert.match((await streaming.innerText()).trim(), /^`?add`? subtracts/);
  await shot("1-streaming");

  await host(...asHost(steps.slice(cut + 1)));
  await page.waitForSelector(".card.permission");
  const bash = page.locator('.card.tool[data-tool="bash"]').first();
  assert.match(await bash.innerText(), /python3 test_calc.py/);
  assert.equal(await bash.locator(".badge").innerText(), "failed");
  const edit = page.locator(".card.edit");
  assert.match(await edit.locator(".tool-arg").innerText(), /calc\.py/);
  const perm = page.locator(".card.permission");
  // The diff is shown once: on the question while it is open, not on the edit card as well.
  assert.equal(await page.locator("pre.diff").count(), 1);
  assert.equal(await edit.locator("pre.diff").count(), 0);
  assert.match(await edit.locator(".note.asked").innerText(), /shown in the question above/);
  // waiting for the user, not "running"; the question comes before the call's card
  assert.equal(await edit.locator(".badge").innerText(), "waiting for approval");
  const order = await page.locator(".card.permission, .card.edit").evaluateAll((els) => els.map((e) => (e.classList.contains("permission") ? "permission" : "edit")));
  assert.deepEqual(order, ["permission", "edit"]);
  assert.match(await perm.locator(".line.add").first().innerText(), /return a \+ b/);
  assert.match(await perm.locator(".line.del").first().innerText(), /return a - b/);
  for (const label of ["Allow", "Allow for this session", "Always allow", "Reject"]) assert.equal(await perm.getByRole("button", { name: label, exact: true }).count(), 1);
  assert.equal(await page.locator(".meter-text").innerText(), "11.1k / 200k (6%)");
  assert.equal(await page.locator(".cost").innerText(), "$0.0181");
  assert.equal(await page.locator("details.thinking").getAttribute("open"), null, "thinking is folded");
  assert.match(await page.locator(".notice.warning").innerText(), /Retrying \(attempt 1\)/);
  assert.equal(await page.locator(".code-block .copy").count(), 1);
  // The python block is highlighted by the bundled highlighter, under the page's CSP.
  assert.match(await page.locator(".code-block code .hljs-keyword").first().innerText(), /def|return/);
  await page.locator(".card.permission").scrollIntoViewIfNeeded();
  await shot("2-permission");
  assert.deepEqual(violations, []);
});

test("Allow posts the decision for that request; the card then shows it", async () => {
  const id = await page.locator(".card.permission").getAttribute("data-id");
  await page.locator(".card.permission").getByRole("button", { name: "Allow", exact: true }).click();
  const last = (await posted()).at(-1);
  assert.deepEqual(last, { type: "permission", id, decision: "allow" });
  await host({ type: "action", action: { type: "permissionResolved", id: id!, decision: "allow" } });
  await page.waitForSelector(".card.permission.answered");
  assert.match(await page.locator(".card.permission .decision").innerText(), /Allowed once/);
  // Answered: the edit card has its diff back.
  assert.match(await page.locator(".card.edit .line.add").first().innerText(), /return a \+ b/);
});

test("Reject sends the typed reason", async () => {
  const req = run.untilPermission.find((s) => "request" in s)!.params as never;
  await host({ type: "action", action: { type: "permissionRequest", id: "perm-r", request: req } });
  const card = page.locator('.card.permission[data-id="perm-r"]');
  await card.locator("input.reason").fill("use a test first");
  await card.getByRole("button", { name: "Reject" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "permission", id: "perm-r", decision: "reject", reason: "use a test first" });
  await host({ type: "action", action: { type: "permissionResolved", id: "perm-r", decision: "reject", reason: "use a test first" } });
});

test("live bash output and the queue show while running; Enter steers, Alt+Enter queues, × removes", async () => {
  await host(...asHost(run.afterAllow));
  const live = page.locator(".card.tool.running pre.live");
  await live.waitFor();
  assert.match(await live.innerText(), /\[100%\]/);
  assert.match(await page.locator(".queue .queued-text").innerText(), /negative numbers/);
  await page.evaluate(() => document.querySelector(".scroller")!.scrollTo(0, 1e9));
  await shot("3-running");
  const input = page.locator("textarea.input");
  await input.fill("focus on add only");
  await input.press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "focus on add only", mode: "steer" });
  await input.fill("then update the README");
  await input.press("Alt+Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "then update the README", mode: "followUp" });
  assert.equal(await input.inputValue(), "");
  await page.locator(".queue button").first().click();
  assert.deepEqual((await posted()).at(-1), { type: "removeQueued", kind: "steering", index: 0, text: "also add a test for negative numbers" });
});

test("Stop posts abort, and after the run settles Stop goes away and Send is back", async () => {
  await page.getByRole("button", { name: "Stop" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "abort" });
  await host(...asHost(run.afterStop), { type: "restoreInput", text: "also add a test for negative numbers" });
  await page.waitForSelector("button.stop", { state: "hidden" });
  assert.equal(await page.locator("button.send").innerText(), "Send");
  assert.equal(await page.locator("textarea.input").inputValue(), "also add a test for negative numbers");
  await page.locator("textarea.input").press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "also add a test for negative numbers", mode: "prompt" });
});

const COMMANDS = [
  { name: "compact", description: "Summarise the older part of the session", kind: "builtin", argumentHint: "[instructions]" },
  { name: "model", description: "Pick or set the model", kind: "builtin", argumentHint: "[api/id]" },
  { name: "new", description: "Start a new session", kind: "builtin" },
  { name: "skill:review", description: "Review the change in a folder", kind: "skill", argumentHint: "[path]" },
  { name: "fix-tests", description: "Fix the failing tests", kind: "template" },
] as const;

test("/ at the start of the input lists the server's commands, filtered, keyboard navigable, accessible", async () => {
  await host({ type: "commands", commands: COMMANDS.map((c) => ({ ...c })) });
  const input = page.locator("textarea.input");
  const menu = page.locator("#command-menu");
  const names = () => menu.locator('[role="option"] .command-name').allInnerTexts();
  await input.fill("");
  await input.pressSequentially("/");
  await menu.waitFor();
  assert.equal(await input.getAttribute("role"), "combobox");
  assert.equal(await input.getAttribute("aria-expanded"), "true");
  assert.equal(await menu.getAttribute("role"), "listbox");
  assert.deepEqual(await names(), ["/compact", "/model", "/new", "/skill:review", "/fix-tests"]);
  const first = menu.locator('[role="option"]').first();
  assert.equal(await first.getAttribute("aria-selected"), "true");
  assert.equal(await input.getAttribute("aria-activedescendant"), await first.getAttribute("id"));
  assert.match(await first.innerText(), /\[instructions\][\s\S]*Summarise the older part/);
  await shot("5-command-list");

  // Down moves the selection (Up wraps round); Escape closes without stopping anything; typing opens it again.
  await input.press("ArrowDown");
  assert.equal(await menu.locator('[aria-selected="true"] .command-name').innerText(), "/model");
  await input.press("ArrowUp");
  await input.press("ArrowUp");
  assert.equal(await menu.locator('[aria-selected="true"] .command-name').innerText(), "/fix-tests");
  const before = (await posted()).length;
  await input.press("Escape");
  assert.equal(await menu.isHidden(), true);
  assert.equal(await input.getAttribute("aria-expanded"), "false");
  assert.equal((await posted()).length, before, "Escape on the list posts nothing (no abort)");
  assert.equal(await input.inputValue(), "/");

  // Filtered as typed: "rev" is inside skill:review; Tab accepts it and leaves the caret for the arguments.
  await input.pressSequentially("rev");
  assert.deepEqual(await names(), ["/skill:review"]);
  assert.match(await menu.innerText(), /skill[\s\S]*Review the change in a folder/);
  await input.press("Tab");
  assert.equal(await input.inputValue(), "/skill:review ");
  assert.equal(await menu.isHidden(), true, "typing arguments: the list is closed");
  await input.pressSequentially("src/");
  await input.press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "/skill:review src/", mode: "prompt" });

  // Enter accepts a partly typed name; on a name typed in full it sends.
  await input.pressSequentially("/ne");
  await input.press("Enter");
  assert.equal(await input.inputValue(), "/new ");
  await input.press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "/new", mode: "prompt" });
  await input.pressSequentially("/model");
  await input.press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "/model", mode: "prompt" });

  // A click on an option accepts it too.
  await input.pressSequentially("/");
  await menu.locator('[role="option"]', { hasText: "/fix-tests" }).click();
  assert.equal(await input.inputValue(), "/fix-tests ");

  // Neither // nor a slash later in the text opens the list; nothing matching shows nothing.
  for (const text of ["//", "see /", "/zzz"]) {
    await input.fill("");
    await input.pressSequentially(text);
    assert.equal(await menu.isHidden(), true, `no list for ${JSON.stringify(text)}`);
  }
  await input.fill("");
  assert.deepEqual(violations, []);
});

test("a refused /command comes back into the input; a new list from the host replaces the old", async () => {
  const input = page.locator("textarea.input");
  await input.fill("/nosuch args");
  await input.press("Enter");
  assert.equal(await input.inputValue(), "");
  await host({ type: "restoreInput", text: "/nosuch args" }, { type: "action", action: { type: "notice", level: "error", text: "Unknown command /nosuch. Commands: /compact, /model, /new" } });
  await page.locator(".notice.error", { hasText: "Unknown command /nosuch" }).waitFor();
  assert.equal(await input.inputValue(), "/nosuch args");
  await host({ type: "commands", commands: [{ name: "only-one", description: "The one template left", kind: "template" }] });
  await input.fill("");
  await input.pressSequentially("/");
  assert.deepEqual(await page.locator('#command-menu [role="option"] .command-name').allInnerTexts(), ["/only-one"]);
  await input.press("Escape");
  await input.fill("");
});

test("code blocks copy, edit cards open a diff and undo exactly that call", async () => {
  await page.locator(".code-block .copy").click();
  assert.deepEqual((await posted()).at(-1), { type: "copy", text: "def add(a, b):\n    return a - b\n" });
  await page.locator(".card.edit").getByRole("button", { name: "Open diff" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "openDiff", toolCallId: "call_edit_1" });
  await page.locator(".card.edit").getByRole("button", { name: "Undo this edit" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "undoEdit", toolCallId: "call_edit_1" });
});

test("a dead server gets a banner with Restart, not a blank screen", async () => {
  await host({ type: "action", action: { type: "server", status: "down", message: "The server process exited (code 1)." } });
  const banner = page.locator(".banner");
  await banner.waitFor();
  assert.match(await banner.innerText(), /not running/);
  await banner.getByRole("button", { name: "Restart server" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "restartServer" });
  assert.equal(await page.locator("button.send").isDisabled(), true);
  await page.evaluate(() => document.querySelector(".scroller")!.scrollTo(0, 0));
  await shot("4-server-down");
  assert.deepEqual(violations, []);
});

test("a gap in seq makes the page ask the host to re-read the transcript, once", async () => {
  await host({ type: "action", action: { type: "server", status: "running" } });
  const base = { workspace: run.workspace, sessionId: run.sessionId, runId: "r-2" };
  await host(
    { type: "action", action: { type: "event", params: { ...base, seq: 500, event: { type: "agent_start" } } } },
    { type: "action", action: { type: "event", params: { ...base, seq: 502, event: { type: "turn_start", turn: 1 } } } },
  );
  await page.waitForFunction(() => (window as unknown as { __posted: { type: string }[] }).__posted.some((m) => m.type === "resync"));
  assert.equal((await posted()).filter((m) => m.type === "resync").length, 1);
});

test("typing @ after a space opens the context picker and leaves the text alone", async () => {
  const input = page.locator("textarea.input");
  await input.fill("");
  await input.pressSequentially("look at @");
  assert.deepEqual((await posted()).at(-1), { type: "addContext" });
  assert.equal(await input.inputValue(), "look at ");
  await input.pressSequentially("me@home");
  assert.equal((await posted()).filter((m) => m.type === "addContext").length, 1, "an @ inside a word does not open the picker");
});

test("with enterWhileRunning = followUp, Enter queues and Alt+Enter steers", async () => {
  const base = { workspace: run.workspace, sessionId: run.sessionId, runId: "r-3" };
  await host(
    { type: "prefs", enterWhileRunning: "followUp" },
    { type: "action", action: { type: "transcript", messages: [], sessionId: run.sessionId } },
    { type: "action", action: { type: "event", params: { ...base, seq: 600, event: { type: "agent_start" } } } },
  );
  await page.waitForSelector("button.stop:not([hidden])");
  const input = page.locator("textarea.input");
  await input.fill("later");
  await input.press("Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "later", mode: "followUp" });
  await input.fill("now");
  await input.press("Alt+Enter");
  assert.deepEqual((await posted()).at(-1), { type: "send", text: "now", mode: "steer" });
});

test("a permission card says when the user's unsaved changes are saved with the edit", async () => {
  const request = {
    workspace: run.workspace, sessionId: run.sessionId, runId: "r-3", toolCallId: "c-unsaved", toolName: "edit",
    arguments: { path: "calc.py", oldText: "a - b", newText: "a + b" },
    preview: { kind: "diff", path: "calc.py", oldText: "return a - b\n", newText: "return a + b\n", unsavedChanges: true },
  };
  await host({ type: "action", action: { type: "permissionRequest", id: "perm-unsaved", request } } as HostMessage);
  const card = page.locator('.card.permission[data-id="perm-unsaved"]');
  await card.waitFor();
  assert.equal(await card.locator(".unsaved-note").innerText(), "Your unsaved changes to this file are saved with it.");
  assert.equal(await page.locator(".card.permission .unsaved-note").count(), 1, "only that card has the note");
});

// A real 2x2 PNG (signature, IHDR, IDAT, IEND with their CRCs), made by Python's zlib.
const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGNgYGjQYGhgYLBp0LBpAAAPugLJHpRxBAAAAABJRU5ErkJggg==";

test("a pasted image shows as a thumbnail, goes with Send, and shows in the transcript", async () => {
  await host({ type: "action", action: { type: "event", params: { workspace: run.workspace, sessionId: run.sessionId, runId: "r-img", seq: 9000, event: { type: "agent_settled" } } } } as HostMessage);
  await page.waitForFunction(() => document.querySelector("button.send")?.textContent === "Send");
  const input = page.locator("textarea.input");
  await input.fill("");
  const paste = (b64: string, type: string, name: string) =>
    page.evaluate(
      ([data, mime, file]) => {
        const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], file, { type: mime }));
        document.querySelector("textarea.input")!.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
      },
      [b64, type, name],
    );
  await paste(btoa("just some text"), "image/png", "fake.png");
  await page.locator(".composer-note:not([hidden])").waitFor();
  assert.equal(await page.locator(".composer-note").innerText(), "fake.png is not a PNG, JPEG, GIF or WebP image.");
  assert.equal(await page.locator(".composer .thumbs img").count(), 0, "a file that is no image is not attached");

  await paste(PNG_B64, "image/png", "dot.png");
  const thumb = page.locator(".composer .thumbs:not([hidden]) img");
  await thumb.waitFor();
  assert.equal(await thumb.getAttribute("src"), `data:image/png;base64,${PNG_B64}`);
  assert.equal(await input.inputValue(), "", "the image is not pasted as text");
  await shot("7-image-attached");

  await input.fill("what is in this picture?");
  await input.press("Enter");
  const sent = (await posted()).filter((m) => m.type === "send").at(-1);
  assert.deepEqual(sent, { type: "send", text: "what is in this picture?", mode: "prompt", images: [{ mimeType: "image/png", data: PNG_B64, name: "dot.png" }] });
  await page.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });

  const user = { role: "user", content: "what is in this picture?", images: [{ type: "image", mimeType: "image/png", bytes: 72, name: "dot.png", data: PNG_B64 }, { type: "image", mimeType: "image/png", bytes: 90000, name: "big.png", sha256: "ab".repeat(32) }] };
  await host({ type: "action", action: { type: "event", params: { workspace: run.workspace, sessionId: run.sessionId, runId: "r-img", seq: 9001, event: { type: "message_start", message: user } } } } as HostMessage);
  const shown = page.locator(".msg.user .thumbs.sent").last();
  await shown.locator("img").waitFor();
  assert.equal(await shown.locator("img").getAttribute("src"), `data:image/png;base64,${PNG_B64}`);
  // A stored image (a sha256, no data) is shown by name while the page asks the host for it, once.
  assert.equal(await shown.locator(".thumb.loading .thumb-label").innerText(), "[image: big.png]");
  await page.waitForFunction((sha) => (window as unknown as { __posted: { type: string; sha256?: string }[] }).__posted.some((m) => m.type === "image" && m.sha256 === sha), "ab".repeat(32));
  assert.deepEqual((await posted()).filter((m) => m.type === "image"), [{ type: "image", sha256: "ab".repeat(32), sessionId: run.sessionId }]);
  await host({ type: "image", sessionId: run.sessionId, sha256: "ab".repeat(32), answer: { mimeType: "image/png", data: PNG_B64 } });
  await shown.locator(".thumb.fetched img").waitFor();
  assert.equal(await shown.locator(".thumb.fetched img").getAttribute("src"), `data:image/png;base64,${PNG_B64}`);
  assert.deepEqual(await shown.locator(".thumb-caption").allInnerTexts(), ["dot.png · PNG · 72 B", "big.png · PNG · 87.9 KB"]);
  await shot("8-image-in-transcript");
  assert.deepEqual(violations, [], "data: images stay inside the content security policy");
});

test("the attach button asks the host for its file dialog, and picked images become thumbnails", async () => {
  await page.locator("button.attach-image").click();
  assert.deepEqual((await posted()).at(-1), { type: "attachImage" });
  await host({ type: "addImages", images: [{ mimeType: "image/png", data: PNG_B64, name: "picked.png" }] });
  await page.locator('.composer .thumbs:not([hidden]) .thumb[title^="picked.png"] img').waitFor();
  await page.locator('button[aria-label="Remove image picked.png"]').click();
  await page.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
});

test("a tool's images show on its card with name, type and size; a stored one that cannot be fetched says why, with no broken picture", async () => {
  const sha = "cd".repeat(32);
  const ev = (seq: number, event: unknown) => ({ type: "action", action: { type: "event", params: { workspace: run.workspace, sessionId: run.sessionId, runId: "r-tool-img", seq, event } } }) as HostMessage;
  const call = { role: "assistant", content: [{ type: "toolCall", id: "read-img-1", name: "read", arguments: { path: "shot.png" } }], stopReason: "toolUse" };
  const text = "Image file shot.png (image/png, 2x2, 72 B), attached below.";
  await host(
    ev(9100, { type: "agent_start" }),
    ev(9101, { type: "message_end", message: call }),
    ev(9102, { type: "tool_execution_start", toolCallId: "read-img-1", toolName: "read", arguments: { path: "shot.png" } }),
    ev(9103, { type: "tool_execution_end", toolCallId: "read-img-1", result: { content: text, isError: false } }),
    ev(9104, { type: "message_end", message: { role: "toolResult", toolCallId: "read-img-1", toolName: "read", content: text, isError: false, images: [{ type: "image", mimeType: "image/png", bytes: 72, width: 2, height: 2, name: "shot.png", data: PNG_B64 }] } }),
    ev(9105, { type: "agent_settled" }),
  );
  const live = page.locator('.card.tool[data-id="read-img-1"]');
  await live.locator(".thumbs.sent img").waitFor();
  assert.equal(await live.locator(".thumbs.sent img").getAttribute("src"), `data:image/png;base64,${PNG_B64}`);
  assert.equal(await live.locator(".thumb-caption").innerText(), "shot.png · PNG · 72 B · 2×2");
  await shot("9-tool-image");

  // Replayed (a reload): the same call's result holds only the hash, and the host cannot get it.
  await host({
    type: "action",
    action: {
      type: "transcript",
      sessionId: run.sessionId,
      workspace: run.workspace,
      messages: [
        { role: "user", content: "look at shot.png" },
        call,
        { role: "toolResult", toolCallId: "read-img-1", toolName: "read", content: text, isError: false, images: [{ type: "image", mimeType: "image/png", bytes: 9000, name: "shot.png", sha256: sha }] },
      ],
    },
  } as HostMessage);
  const replayed = page.locator('.card.tool[data-id="read-img-1"]');
  await replayed.locator(".thumb.loading").waitFor();
  await page.waitForFunction((h) => (window as unknown as { __posted: { type: string; sha256?: string }[] }).__posted.some((m) => m.type === "image" && m.sha256 === h), sha);
  const error = `no image ${sha.slice(0, 12)}… in session ${run.sessionId}: the blob is missing`;
  await host({ type: "image", sessionId: run.sessionId, sha256: sha, answer: { error } });
  await replayed.locator(".thumb.failed").waitFor();
  assert.equal(await replayed.locator(".thumb.failed .thumb-error").innerText(), `shot.png: ${error}`);
  assert.equal(await replayed.locator("img").count(), 0, "no picture, broken or otherwise");
  assert.equal(await replayed.locator(".thumb-caption").innerText(), "shot.png · PNG · 8.8 KB");
  // An answer for another session is not this view's: ignored.
  await host({ type: "image", sessionId: "another-session", sha256: sha, answer: { mimeType: "image/png", data: PNG_B64 } });
  await host({ type: "action", action: { type: "notice", level: "info", text: "redraw" } });
  await page.locator(".notice", { hasText: "redraw" }).last().waitFor();
  assert.equal(await replayed.locator(".thumb.failed").count(), 1);
  assert.equal((await posted()).filter((m) => m.type === "image" && m.sha256 === sha).length, 1, "asked once, not at every redraw");
  await shot("10-tool-image-error");
  assert.deepEqual(violations, []);
});

test("images attached but not sent survive a reload of the page, and Send still sends them", async () => {
  // A page of its own whose stand-in for VS Code keeps setState across a reload, as VS Code does.
  const p = await context.newPage();
  await p.addInitScript(() => {
    const w = window as unknown as { __posted: unknown[]; acquireVsCodeApi: () => unknown };
    w.__posted = [];
    w.acquireVsCodeApi = () => ({
      postMessage: (m: unknown) => w.__posted.push(m),
      getState: () => JSON.parse(sessionStorage.getItem("state") ?? "null") ?? undefined,
      setState: (s: unknown) => sessionStorage.setItem("state", JSON.stringify(s)),
    });
  });
  try {
    await p.goto(`${origin}/`);
    const toHost = (...ms: HostMessage[]) => p.evaluate((xs) => xs.forEach((m) => window.postMessage(m, "*")), ms);
    await toHost({ type: "action", action: { type: "server", status: "running" } }, { type: "addImages", images: [{ mimeType: "image/png", data: PNG_B64, name: "kept.png" }, { mimeType: "image/png", data: PNG_B64, name: "dropped.png" }] });
    await p.locator('button[aria-label="Remove image dropped.png"]').click();
    await p.locator("textarea.input").fill("after the reload");
    await p.waitForFunction(() => {
      const st = sessionStorage.getItem("state") ?? "";
      return st.includes("kept.png") && !st.includes("dropped.png") && st.includes("after the reload");
    });
    await p.reload();
    await p.locator('.composer .thumbs:not([hidden]) .thumb[title^="kept.png"] img').waitFor();
    assert.equal(await p.locator(".composer .thumbs .thumb").count(), 1, "the removed image stays removed");
    await p.evaluate((ms) => ms.forEach((m) => window.postMessage(m, "*")), [{ type: "action", action: { type: "server", status: "running" } }] as HostMessage[]);
    await p.locator("button.send:not([disabled])").waitFor();
    await p.locator("button.send").click();
    const sent = (await p.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted)).filter((m) => m.type === "send");
    assert.deepEqual(sent, [{ type: "send", text: "after the reload", mode: "prompt", images: [{ mimeType: "image/png", data: PNG_B64, name: "kept.png" }] }]);
    await p.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
    await p.waitForFunction(() => !(sessionStorage.getItem("state") ?? "").includes("kept.png"));
    const drafts = (await p.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted)).filter((m) => m.type === "draft");
    assert.deepEqual(drafts.at(-1), { type: "draft", text: "", images: [] }, "the host is told the draft is gone once sent");
    await p.reload();
    await p.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
    assert.equal(await p.locator(".composer .thumbs .thumb").count(), 0, "sent images do not come back");

    // A reload whose page state is lost (code-server's window reload): the host's copy of the draft comes back instead.
    const toHostAfter = (ms: HostMessage[]) => p.evaluate((xs) => xs.forEach((m) => window.postMessage(m, "*")), ms);
    await p.evaluate(() => sessionStorage.clear());
    await p.reload();
    await toHostAfter([
      { type: "draft", text: "kept by the host", images: [{ mimeType: "image/png", data: PNG_B64, name: "host.png" }] },
      { type: "action", action: { type: "server", status: "running" } },
    ]);
    await p.locator('.composer .thumbs:not([hidden]) .thumb[title^="host.png"] img').waitFor();
    assert.equal(await p.locator("textarea.input").inputValue(), "kept by the host");
    // Once the user has changed the draft, a copy of the host's does not replace it.
    await p.locator("textarea.input").fill("changed here");
    await toHostAfter([{ type: "draft", text: "older", images: [] }]);
    await p.locator("button.send:not([disabled])").click();
    const last = (await p.evaluate(() => (window as unknown as { __posted: { type: string }[] }).__posted)).filter((m) => m.type === "send").at(-1);
    assert.deepEqual(last, { type: "send", text: "changed here", mode: "prompt", images: [{ mimeType: "image/png", data: PNG_B64, name: "host.png" }] });

    // A stale page state (an old copy that still holds an image sent since): the host's empty draft wins, so nothing sent goes again.
    await p.evaluate((data) => {
      const st = JSON.parse(sessionStorage.getItem("state") ?? "{}");
      sessionStorage.setItem("state", JSON.stringify({ ...st, input: "stale text", images: [{ mimeType: "image/png", data, name: "stale.png" }] }));
    }, PNG_B64);
    await p.reload();
    await p.locator('.composer .thumbs:not([hidden]) .thumb[title^="stale.png"]').waitFor();
    await toHostAfter([{ type: "draft", text: "", images: [] }]);
    await p.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
    assert.equal(await p.locator("textarea.input").inputValue(), "");
  } finally {
    await p.close();
  }
});

test("while the agent runs, images go with a steer; a send the host could not make puts its text and images back", async () => {
  const ev = (seq: number, event: unknown) => ({ type: "action", action: { type: "event", params: { workspace: run.workspace, sessionId: run.sessionId, runId: "r-steer-img", seq, event } } }) as HostMessage;
  const image = { mimeType: "image/png", data: PNG_B64, name: "steer.png" };
  await host({ type: "prefs", enterWhileRunning: "steer" }, ev(9200, { type: "agent_start" }));
  await page.waitForFunction(() => document.querySelector("button.send")?.textContent === "Steer");
  await host({ type: "addImages", images: [image] });
  await page.locator('.composer .thumbs:not([hidden]) .thumb[title^="steer.png"] img').waitFor();
  const input = page.locator("textarea.input");
  await input.fill("look at this too");
  await input.press("Enter");
  assert.deepEqual((await posted()).filter((m) => m.type === "send").at(-1), { type: "send", text: "look at this too", mode: "steer", images: [image] });
  await page.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
  // Refused (an older server, the run ended meanwhile): the host sends it all back.
  await host({ type: "restoreInput", text: "look at this too", images: [image] });
  await page.locator('.composer .thumbs:not([hidden]) .thumb[title^="steer.png"] img').waitFor();
  assert.equal(await input.inputValue(), "look at this too");
  await page.locator('button[aria-label="Remove image steer.png"]').click();
  await input.fill("");
  await host(ev(9201, { type: "agent_settled" }));
  await page.waitForFunction(() => document.querySelector("button.send")?.textContent === "Send");
});

test("after a reload the compaction summary shows as a summary, not as a 'You' message with Edit", async () => {
  await host({
    type: "action",
    action: {
      type: "transcript",
      sessionId: run.sessionId,
      workspace: run.workspace,
      messages: [
        { role: "user", content: "Previous conversation summary:\n\nWe fixed calc.py and ran the tests." },
        { role: "user", content: "and now the docs" },
      ],
    },
  } as HostMessage);
  const summary = page.locator(".msg.summary.compaction");
  await summary.waitFor();
  assert.match(await summary.locator("summary").innerText(), /Summary of the earlier conversation/);
  assert.equal(await summary.getByRole("button", { name: /Edit/ }).count(), 0);
  assert.equal(await page.locator(".msg.user").count(), 1, "only what the user typed is 'You'");
});

test("a run cut off by the server's shutdown (a reload) says so, not 'Stopped.'", async () => {
  const cut = (errorMessage: string) => ({ role: "assistant", content: [{ type: "text", text: "half" }], stopReason: "aborted", errorMessage, timestamp: 0 });
  await host({
    type: "action",
    action: { type: "transcript", sessionId: run.sessionId, workspace: run.workspace, messages: [{ role: "user", content: "go" }, cut("Interrupted: the server shut down (the editor reloaded, restarted or closed it)."), { role: "user", content: "again" }, cut("Aborted by the user.")] },
  } as HostMessage);
  const notes = page.locator(".msg.assistant .note");
  await notes.nth(1).waitFor();
  assert.match(await notes.nth(0).innerText(), /^Interrupted: the server shut down/);
  assert.equal(await notes.nth(1).innerText(), "Stopped.");
});

test("a long transcript draws its last 200 items; Show earlier draws 200 more with the view where it was; another session starts from its last items", async () => {
  const transcript = (sessionId: string, pairs: number) => {
    const messages: unknown[] = [];
    for (let i = 0; i < pairs; i++) messages.push({ role: "user", content: `question ${i}` }, { role: "assistant", content: [{ type: "text", text: `answer ${i}` }], stopReason: "stop", timestamp: i });
    return { type: "action", action: { type: "transcript", sessionId, workspace: run.workspace, messages } } as HostMessage;
  };
  await host(transcript(run.sessionId, 600));
  await page.locator(".items > .msg.assistant", { hasText: "answer 599" }).waitFor();
  const drawn = page.locator(".items > *");
  assert.equal(await drawn.count(), 200, "the last 200 of 1,200 items (and whatever cards the page keeps)");
  const earlierButton = page.locator("button.earlier");
  const more = async () => Number(/^Show earlier \((\d+) more\)$/.exec(await earlierButton.innerText())?.[1]);
  const hidden = await more();
  assert.ok(hidden >= 1000, `${hidden} items not drawn`);
  const first = await drawn.first().elementHandle();
  await first!.scrollIntoViewIfNeeded();
  const before = (await first!.boundingBox())!.y;
  await earlierButton.click();
  await page.locator(".items > .msg.user", { hasText: "question 450" }).waitFor({ state: "attached" });
  assert.equal(await drawn.count(), 400);
  assert.equal(await more(), hidden - 200);
  assert.ok(Math.abs((await first!.boundingBox())!.y - before) < 2, "what was on screen stays where it was");
  await host(transcript("another-session", 300));
  await page.locator(".items > .msg.assistant", { hasText: "answer 299" }).waitFor();
  assert.equal(await drawn.count(), 200, "another session starts again from its last 200");
  await host(transcript(run.sessionId, 3));
  await page.locator("button.earlier[hidden]").waitFor({ state: "attached" });
  assert.equal(await page.locator(".items > .msg.user").first().innerText().then((t) => /question 0/.test(t)), true, "a short one is drawn whole");
});

test("a transcript read from its newest page: Show earlier draws what the page holds, then asks the host for the page before it and draws it in front", async () => {
  const pairs = (from: number, to: number) => {
    const messages: unknown[] = [];
    for (let i = from; i < to; i++) messages.push({ role: "user", content: `question ${i}` }, { role: "assistant", content: [{ type: "text", text: `answer ${i}` }], stopReason: "stop", timestamp: i });
    return messages;
  };
  // The newest 400 messages of 1,000 (positions 600-999), as the host reads them first.
  await host({ type: "action", action: { type: "transcript", sessionId: run.sessionId, workspace: run.workspace, messages: pairs(300, 500), start: 600 } } as HostMessage);
  await page.locator(".items > .msg.assistant", { hasText: "answer 499" }).waitFor();
  const earlierButton = page.locator("button.earlier");
  assert.match(await earlierButton.innerText(), /^Show earlier \(20\d more\)$/, "400 items and whatever cards the page keeps");
  for (let n = 0; n < 4 && !/messages/.test(await earlierButton.innerText()); n++) await earlierButton.click();
  await page.locator(".items > .msg.user", { hasText: "question 300" }).waitFor({ state: "attached" });
  assert.equal(await earlierButton.innerText(), "Show earlier (600 more messages)", "all it holds is drawn; the rest is on the server");
  const drawn = await page.locator(".items > *").count();
  const before = (await posted()).length;
  await earlierButton.click();
  assert.deepEqual((await posted()).at(-1), { type: "loadEarlier", before: 600, sessionId: run.sessionId });
  await page.locator("button.earlier[disabled]").waitFor({ state: "attached" });
  await earlierButton.click({ force: true });
  assert.equal((await posted()).length, before + 1, "asked once while the page is on its way");
  // The host could not read it (it says why in a notice): the button works again.
  await host({ type: "action", action: { type: "earlierTranscript", sessionId: run.sessionId, before: 600, start: 600, messages: [] } } as HostMessage);
  await page.locator("button.earlier:not([disabled])").waitFor();
  assert.equal(await earlierButton.innerText(), "Show earlier (600 more messages)");
  await earlierButton.click();
  assert.equal((await posted()).length, before + 2, "asked again");
  await page.locator("button.earlier[disabled]").waitFor({ state: "attached" });
  const first = await page.locator(".items > *").first().elementHandle();
  const y = (await first!.boundingBox())!.y;
  await host({ type: "action", action: { type: "earlierTranscript", sessionId: run.sessionId, before: 600, start: 200, messages: pairs(100, 300) } } as HostMessage);
  await page.locator(".items > .msg.assistant", { hasText: "answer 299" }).waitFor({ state: "attached" });
  assert.equal(await page.locator(".items > *").count(), drawn + 200, "the page that came is drawn at once (200 of its 400 items)");
  assert.ok(Math.abs((await first!.boundingBox())!.y - y) < 2, "what was on screen stays where it was");
  assert.equal(await earlierButton.innerText(), "Show earlier (200 more)");
  assert.equal(await page.locator("button.earlier[disabled]").count(), 0);
  // A page for another start (one read before a reload) is not drawn.
  await host({ type: "action", action: { type: "earlierTranscript", sessionId: run.sessionId, before: 600, start: 0, messages: pairs(0, 300) } } as HostMessage);
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  assert.equal(await page.locator(".items > .msg.user", { hasText: /^question 0$/ }).count(), 0);
});

test("the MCP line: a row per server with its state; Restart, Disable and Enable post crank/mcpServer; a failed server shows its error and stderr tail", async () => {
  const everything = { name: "everything", source: "editor" as const, transport: "stdio" as const, state: "ready" as const, tools: Array.from({ length: 13 }, (_, i) => `mcp__everything__t${i}`), pid: 4242 };
  const error = "MCP server 'odd' exited (status 3); its stderr ends with:\nTraceback (most recent call last):\nRuntimeError: odd-boom (restarting in 1 s)";
  const odd = { name: "odd", source: "workspace" as const, transport: "stdio" as const, state: "failed" as const, tools: [], error };
  await host({ type: "action", action: { type: "server", status: "running" } }, { type: "action", action: { type: "mcp", servers: [everything, odd] } });
  const line = page.locator("section.mcp-line:not([hidden])");
  await line.waitFor();
  const row = (name: string) => line.locator(`.mcp-server[data-name="${name}"]`);
  assert.equal(await row("everything").locator(".mcp-state").innerText(), "running");
  assert.equal(await row("everything").locator(".mcp-detail").innerText(), "13 tools · editor");
  assert.equal(await row("everything").getAttribute("data-pid"), "4242");
  assert.equal(await row("odd").locator(".mcp-state").innerText(), "failed");
  assert.equal(await row("odd").locator(".mcp-error").innerText(), "MCP server 'odd' exited (status 3); its stderr ends with:");
  assert.match(await row("odd").locator("pre.mcp-stderr").innerText(), /Traceback[\s\S]*RuntimeError: odd-boom/);
  await shot("mcp-line");

  // The line is not drawn again for what does not concern it (a streamed token, the queue): a button under the pointer stays the same node.
  await row("everything").locator('button[data-action="restart"]').evaluate((b) => ((b as HTMLElement).dataset.kept = "yes"));
  await host({ type: "action", action: { type: "queue", queue: { steering: [], followUp: [] } } });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  assert.equal(await row("everything").locator('button[data-action="restart"]').getAttribute("data-kept"), "yes");

  await row("everything").getByRole("button", { name: "Restart the MCP server everything" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "mcpServer", name: "everything", action: "restart" });
  // Until the host answers, the row's buttons wait (no second restart queued behind the first).
  await row("everything").locator('button[data-action="restart"][disabled]').waitFor();
  assert.equal(await row("odd").locator('button[data-action="restart"][disabled]').count(), 0, "the other server's row still works");
  await host({ type: "mcpDone", name: "everything" });
  await row("everything").locator('button[data-action="restart"]:not([disabled])').waitFor();

  await row("odd").getByRole("button", { name: "Restart the MCP server odd" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "mcpServer", name: "odd", action: "restart" });
  await row("everything").getByRole("button", { name: "Disable the MCP server everything" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "mcpServer", name: "everything", action: "disable" });
  await host({ type: "action", action: { type: "mcp", servers: [{ ...everything, state: "disabled", tools: [], pid: undefined }, odd] } }, { type: "mcpDone", name: "everything" }, { type: "mcpDone", name: "odd" });
  await row("everything").locator('.mcp-state', { hasText: "disabled" }).waitFor();
  assert.deepEqual(await row("everything").locator("button.mcp-action").allInnerTexts(), ["Enable"]);
  await row("everything").getByRole("button", { name: "Enable the MCP server everything" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "mcpServer", name: "everything", action: "enable" });
  await host({ type: "mcpDone", name: "everything" });
  await shot("mcp-line-disabled");

  // A workspace with no MCP server (crank/state without `mcp`): no line.
  await host({ type: "action", action: { type: "mcp", servers: [] } });
  await page.locator("section.mcp-line[hidden]").waitFor({ state: "attached" });
  assert.deepEqual(violations, []);
});

test("under a finished run: its changed files with their kind and +/- lines, a diff per file, Keep and Undo per file and all, Force after a conflict, Redo of an undone file", async () => {
  const call = (id: string, command: string) => ({ role: "assistant", content: [{ type: "toolCall", id, name: "bash", arguments: { command } }], stopReason: "toolUse", timestamp: 0 });
  const result = (id: string) => ({ role: "toolResult", toolCallId: id, toolName: "bash", content: "ok", isError: false, timestamp: 0 });
  await host({
    type: "action",
    action: {
      type: "transcript",
      sessionId: run.sessionId,
      workspace: run.workspace,
      messages: [{ role: "user", content: "change a, make b" }, call("rc1", "sed -i s/1/2/ a.py"), result("rc1"), call("rc2", "echo hi > b.txt"), result("rc2"), { role: "assistant", content: [{ type: "text", text: "Done." }], stopReason: "stop", timestamp: 0 }, { role: "user", content: "thanks" }],
    },
  } as HostMessage);
  const files = [
    { path: "a.py", status: "modified", byTool: ["rc1"], restorable: true, before: "1".repeat(64), after: "2".repeat(64), linesAdded: 3, linesRemoved: 1 },
    { path: "b.txt", status: "added", byTool: ["rc2"], restorable: true, after: "3".repeat(64), linesAdded: 1, linesRemoved: 0 },
    { path: "logo.png", status: "deleted", byTool: ["rc2"], restorable: false, reason: "binary: not restorable" },
  ];
  await host({ type: "action", action: { type: "allRunChanges", runs: [{ runId: "run-7", files }] } } as HostMessage);
  const card = page.locator('.card.changes[data-run="run-7"]');
  await card.waitFor();
  // Under the run: after its last reply, before the next message typed.
  const around = await page.locator(".items > *").evaluateAll((els) => {
    const i = els.findIndex((e) => e.matches(".card.changes"));
    return [els[i - 1]?.textContent?.trim(), els[i + 1]?.querySelector(".text")?.textContent];
  });
  assert.deepEqual(around, ["Done.", "thanks"]);
  assert.deepEqual(await card.locator(".change-file").evaluateAll((els) => els.map((e) => [e.getAttribute("data-path"), e.querySelector(".change-kind")?.textContent])), [
    ["a.py", "edited"],
    ["b.txt", "created"],
    ["logo.png", "deleted"],
  ]);
  assert.equal(await card.locator('.change-file[data-path="logo.png"] .change-note').innerText(), "binary: not restorable");
  assert.equal(await card.locator('.change-file[data-path="logo.png"] .undo-file').count(), 0, "no Undo for what cannot be put back");
  assert.deepEqual(await card.locator(".change-file").evaluateAll((els) => els.map((e) => e.querySelector(".change-lines")?.textContent ?? null)), ["+3 -1", "+1 -0", null]);
  assert.equal(await card.locator('.change-file[data-path="logo.png"] .keep-file').count(), 1, "what cannot be put back can still be kept");
  // In a side bar as narrow as code-server's (300 px), Keep all and Undo all stay on the
  // card: the summary goes under them instead of pushing them off its edge.
  await page.setViewportSize({ width: 300, height: 900 });
  const cut = await card.evaluate((el) => {
    const edge = el.getBoundingClientRect().right;
    return [...el.querySelectorAll(".card-head button")].filter((b) => b.getBoundingClientRect().right > edge + 0.5).map((b) => b.textContent);
  });
  await shot("run-changes-narrow");
  await page.setViewportSize({ width: 440, height: 900 });
  assert.deepEqual(cut, [], "buttons past the card's edge");
  await shot("run-changes");

  await card.locator('.change-file[data-path="a.py"] .change-path').click();
  assert.deepEqual((await posted()).at(-1), { type: "changeDiff", runId: "run-7", path: "a.py" });
  await card.getByRole("button", { name: "Undo the change to b.txt" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "undoChanges", runId: "run-7", paths: ["b.txt"] });
  await card.getByRole("button", { name: "Undo all" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "undoChanges", runId: "run-7", paths: ["a.py", "b.txt"] });
  await card.getByRole("button", { name: "Keep the change to logo.png" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "keepChanges", runId: "run-7", paths: ["logo.png"] });
  await card.getByRole("button", { name: "Keep all" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "keepChanges", runId: "run-7", paths: ["a.py", "b.txt", "logo.png"] });

  // The host reads the run again after a Keep: the kept file's row leaves, the summary counts it.
  await host({ type: "action", action: { type: "runChanges", runId: "run-7", files: [files[0], files[1], { ...files[2], kept: true }] } } as HostMessage);
  await card.locator('.change-file[data-path="logo.png"]').waitFor({ state: "detached" });
  assert.match(await card.locator(".changes-summary").innerText(), /3 files changed, 1 kept/);

  // The host reads the run again after an Undo: b.txt is undone, a.py was changed since (a conflict, Force offered).
  const after = [files[0], { ...files[1], revertedBy: "revert-1" }, { ...files[2], kept: true }];
  await host({ type: "action", action: { type: "runChanges", runId: "run-7", files: after, conflicts: [{ path: "a.py", reason: "changed since the run (now differs from what the run left); not overwritten (force: true overwrites it)" }] } } as HostMessage);
  await card.locator(".change-conflict").waitFor();
  assert.match(await card.locator(".change-conflict").innerText(), /Not undone: a\.py: changed since the run/);
  assert.equal(await card.locator('.change-file[data-path="b.txt"] .badge.undone').innerText(), "undone");
  assert.equal(await card.locator('.change-file[data-path="b.txt"] .undo-file').count(), 0);
  assert.match(await card.locator(".changes-summary").innerText(), /3 files changed, 1 undone, 1 kept/);
  assert.equal(await card.locator('.change-file[data-path="b.txt"] .keep-file').count(), 0, "an undone file has no change to keep");
  await shot("run-changes-conflict");
  await card.getByRole("button", { name: "Force" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "undoChanges", runId: "run-7", paths: ["a.py"], force: true });
  // Redo on the undone file: the revert that put it back is itself reverted, for that file.
  await card.getByRole("button", { name: "Redo the change to b.txt" }).click();
  assert.deepEqual((await posted()).at(-1), { type: "redoChange", runId: "run-7", revertId: "revert-1", path: "b.txt" });
  assert.deepEqual(violations, []);
});
