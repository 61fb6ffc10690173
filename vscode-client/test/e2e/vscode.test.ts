/**
 * The extension inside a real VS Code (code-server in headless Chromium), with the real
 * `crank serve` and the loopback model server. One code-server for the whole suite; the
 * tests run in order and share it. Each step saves a screenshot under
 * build/screenshots/e2e-*.png.
 *
 * The model server answers by rules: `lastUserContains` picks the reply to a prompt,
 * `lastMessageContains` the reply after a tool call (by what the tool printed), so
 * every test owns its replies and a failing one cannot shift the others' script.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Frame, Page } from "playwright-core";
import {
  baseSettings,
  chatFrame,
  editorText,
  mcpServerBin,
  modelRequests,
  openFile,
  openFolder,
  reloadWindow,
  runCommand,
  send,
  shot,
  startHarness,
  toasts,
  until,
  writeSettings,
  type Harness,
} from "./harness";
import { noisePng } from "../fixtures/png";

const rules: unknown[] = [];
/** A reply to a prompt that contains `marker`. */
const onPrompt = (marker: string, reply: Record<string, unknown>) => rules.push({ lastUserContains: marker, reply });
/** A reply to the turn after a tool whose output contains `marker`. */
const afterTool = (marker: string, reply: Record<string, unknown>) => rules.unshift({ lastMessageContains: marker, reply });

const HELLO = "Hello from the **loopback** model.\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nThat is all.";
onPrompt("e2e-hello", { text: HELLO, chunks: 8, delayMs: 150 });

type Call = { id: string; name: string; arguments: Record<string, unknown> };
const bash = (id: string, command: string): Call => ({ id, name: "bash", arguments: { command } });
const edit = (id: string, file: string, oldText: string, newText: string): Call => ({ id, name: "edit", arguments: { path: file, oldText, newText } });

// permission answers: allow (once), then the same kind of call asks again and is rejected with a reason
onPrompt("e2e-perm-once", { toolCalls: [bash("once-1", "echo ONCE-FIRST")] });
afterTool("ONCE-FIRST", { toolCalls: [bash("once-2", "echo ONCE-SECOND")] });
afterTool("not-twice-please", { text: "Understood, I will not run it." });
// allow for this session: the second printf runs without a question
onPrompt("e2e-perm-session", { toolCalls: [bash("sess-1", "printf SESSION-ONE")] });
afterTool("SESSION-ONE", { toolCalls: [bash("sess-2", "printf SESSION-TWO")] });
afterTool("SESSION-TWO", { text: "Both ran." });
// always allow: remembered on disk, so a new session runs echo without a question
// Simple commands: a rule covers one program and no chained commands (a compound
// command after an "always" rule is asked again, workspace/shell_shape.py).
onPrompt("e2e-perm-always-again", { toolCalls: [bash("always-2", "echo ALWAYS-TWO")] });
onPrompt("e2e-perm-always", { toolCalls: [bash("always-1", "echo ALWAYS-ONE")] });
afterTool("ALWAYS-ONE", { text: "Remembered." });
afterTool("ALWAYS-TWO", { text: "Ran without asking." });
// an edit of a closed file: the permission card with its diff, then the edit card
onPrompt("e2e-edit", { text: "Fixing the sign.", toolCalls: [edit("edit-1", "calc.py", "return a - b", "return a + b")] });
afterTool("Edited calc.py", { text: "Fixed the sign." });
// Fix This File and the lightbulb's Fix with Crank, on JSON diagnostics (VS Code's own JSON language service)
onPrompt("Fix the problems in the file data.json", { toolCalls: [edit("fix-1", "data.json", '"value": 1,\n}', '"value": 1\n}')] });
afterTool("Edited data.json", { text: "Removed the trailing comma." });
onPrompt("Fix the problems in the file other.json", { toolCalls: [edit("fix-2", "other.json", '"other": true,\n}', '"other": true\n}')] });
afterTool("Edited other.json", { text: "Removed that comma too." });
// Stop: during a stream that goes silent, and during a long command
onPrompt("e2e-silent", { text: "Let me think about this very slowly", chunks: 4, hangAfter: 3 });
onPrompt("e2e-after-stop", { text: "Still here after the stop." });
onPrompt("e2e-long", { toolCalls: [bash("long-1", "sleep 299.5; echo LONG-DONE")] });
// an image the agent reads (stored as a blob beside the session: over 8 KB), and one attached but not sent before a reload
onPrompt("e2e-image: look at the screenshot", { toolCalls: [{ id: "img-read-1", name: "read", arguments: { path: "pixels.png" } }] });
afterTool("pixels.png", { text: "A square of noise." }); // a model that takes no images: the tool text
afterTool("read call img-read-1", { text: "A square of noise." }); // one that does: the images after the tool message
onPrompt("e2e-image-after-reload", { text: "Saw the attached image." });
// reload
onPrompt("e2e-after-reload", { text: "Back after the reload." });
// edit and resend, and switching branches
onPrompt("e2e-branch-edited", { text: "Answer on the new branch." });
onPrompt("e2e-branch-grows", { text: "The branch grew." });
// the extension's own Fix with Crank before the server has started
onPrompt("Fix the problems in the file third.json", { toolCalls: [edit("fix-3", "third.json", '"third": 3,\n}', '"third": 3\n}')] });
afterTool("Edited third.json", { text: "Fixed before the server had started." });
// / commands: the project's skill, run by hand (the model sees the skill's text)
onPrompt("SKILL-BODY-MARKER-5e1", { text: "Reviewed by the skill." });
// Workspace Trust
// a command: the workspace's own settings say permissionMode auto, which Restricted Mode ignores
onPrompt("e2e-untrusted", { toolCalls: [bash("untrusted-1", "echo UNTRUSTED-RAN")] });
afterTool("planted-mode-ignored", { text: "Answered in Restricted Mode." });
// crank.server.python in the User settings (the last test). Every rule is made here, above
// the first test(): the harness writes the script when the first test starts.
onPrompt("e2e-upy-first", { text: "Started by the user's Python." });
onPrompt("e2e-upy-restarted", { text: "Started again by the user's Python." });
onPrompt("e2e-upy-untrusted", { text: "The planted Python stayed unused." });
onPrompt("e2e-upy-remembered", { text: "Started by the remembered Python." });
// the per-run changed files (the last test): its rules are with it, at the end of the file
runChangesRules();

let h: Harness;
let page: Page;
let chat: Frame;
let project = "";

before(async () => {
  // node:test runs this hook inside the first test() call, while the module is still
  // being evaluated: one tick later every rule is in, those set beside later tests too.
  await Promise.resolve();
  h = await startHarness({ rules });
  page = h.page;
  project = path.join(h.tmp, "project");
  mkdirSync(project, { recursive: true });
  writeFileSync(path.join(project, "calc.py"), "def add(a, b):\n    return a - b\n");
  writeFileSync(path.join(project, "AGENTS.md"), "Project rule: PROJECT-MARKER-7f3a.\n");
  writeFileSync(path.join(project, "data.json"), '{\n  "name": "demo",\n  "value": 1,\n}\n');
  writeFileSync(path.join(project, "other.json"), '{\n  "other": true,\n}\n');
  writeFileSync(path.join(project, "third.json"), '{\n  "third": 3,\n}\n');
  mkdirSync(path.join(project, ".crank", "skills", "review"), { recursive: true });
  writeFileSync(
    path.join(project, ".crank", "skills", "review", "SKILL.md"),
    "---\nname: review\ndescription: Review the change in a folder (e2e)\n---\nSKILL-BODY-MARKER-5e1: review the files named in the arguments.\n",
  );
});

after(async () => {
  await h?.stop();
});

/** Saves a screenshot and the logs, then settles whatever the failed test left running so the next test starts clean. */
async function dump(name: string, err: unknown): Promise<never> {
  await shot(page, `FAILED-${name}`).catch(() => undefined);
  try {
    for (const b of await chat.locator(".card.permission:not(.answered) button.reject").all()) await b.click({ timeout: 2000 });
    if (await chat.locator("button.stop").isVisible()) await chat.locator("button.stop").click({ timeout: 2000 });
    await chat.locator("button.stop").waitFor({ state: "hidden", timeout: 20_000 });
  } catch {
    // best effort
  }
  // What the user would have read: the chat's notices and the Crank output channel.
  const notices = await chat.locator(".notice").allInnerTexts().catch(() => ["(the chat could not be read)"]);
  let output: string[] = [];
  try {
    output = crankLog().slice(-40);
  } catch {
    // no logs yet
  }
  throw new Error(`${err instanceof Error ? err.stack : String(err)}\n--- chat notices ---\n${notices.join("\n")}\n--- Crank output ---\n${output.join("\n")}\n--- logs ---\n${h.log()}`);
}

/** How many `crank serve` processes this suite's code-server started (found by their HOME). */
function crankServers(): number {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("crank\0serve")) continue;
      if (readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").includes(`HOME=${h.home}`)) n++;
    } catch {
      // gone, or not ours to read
    }
  }
  return n;
}

test("activation starts no server; the status bar item opens the chat, which starts it; a prompt streams in", async () => {
  try {
    await openFolder(h, project, true);
    // The extension is active (its status bar item is there) but nothing needed the server yet.
    const item = page.locator(".statusbar-item", { hasText: "Crank" }).first();
    await item.waitFor();
    await shot(page, "00-activated-idle");
    assert.equal(crankServers(), 0, "no Python process before the chat, a command or a code action needs it");
    await item.click();
    chat = await chatFrame(page);
    // The server is running once the banner is gone and Send is enabled.
    await chat.locator(".banner").waitFor({ state: "hidden" });
    await chat.locator("button.send:not([disabled])").waitFor();
    assert.equal(crankServers(), 1, "the open chat started one server");
    // Record every state of the streaming bubble, so the test sees the stream, not just its end.
    await chat.evaluate(() => {
      const seen: string[] = [];
      (window as unknown as { __streamed: string[] }).__streamed = seen;
      new MutationObserver(() => {
        const b = document.querySelector(".msg.assistant.streaming");
        const t = b?.textContent ?? "";
        if (t && seen[seen.length - 1] !== t) seen.push(t);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(chat, "e2e-hello: say hello");
    const done = chat.locator(".msg.assistant:not(.streaming)", { hasText: "That is all." });
    await done.waitFor();
    const streamed = await chat.evaluate(() => (window as unknown as { __streamed: string[] }).__streamed);
    const final = (await done.textContent()) ?? "";
    assert.ok(streamed.length >= 2, `expected the reply to arrive in pieces, saw ${JSON.stringify(streamed)}`);
    assert.ok(!streamed[0].includes("That is all."), "the first streamed state is a part of the reply");
    assert.match(final, /Hello from the loopback model\./);
    assert.equal(await chat.locator(".msg.assistant strong", { hasText: "loopback" }).count(), 1, "markdown is rendered");
    assert.equal(await chat.locator(".msg.user", { hasText: "e2e-hello: say hello" }).count(), 1);
    await shot(page, "01-activation-stream");
  } catch (err) {
    await dump("activation", err);
  }
});

/** The system prompt of the model request whose last user message contains `marker`. */
async function systemOf(marker: string): Promise<string> {
  const reqs = await modelRequests(h.modelUrl);
  const hit = reqs.find((r) => {
    const users = r.body.messages.filter((m) => m.role === "user");
    return JSON.stringify(users[users.length - 1]?.content ?? "").includes(marker);
  });
  assert.ok(hit, `no model request for ${marker}`);
  return JSON.stringify(hit.body.messages.filter((m) => m.role === "system").map((m) => m.content));
}

const card = (id: string) => chat.locator(`.card.tool[data-id="${id}"]`);
const openPermission = () => chat.locator(".card.permission:not(.answered)");
async function answer(label: RegExp, reason?: string): Promise<void> {
  const p = openPermission().first();
  await p.waitFor();
  if (reason) await p.locator("input.reason").fill(reason);
  await p.getByRole("button", { name: label }).click();
  await p.waitFor({ state: "detached" }).catch(() => undefined);
}
async function settled(): Promise<void> {
  await chat.locator("button.stop").waitFor({ state: "hidden" });
  await chat.locator(".status.busy").waitFor({ state: "detached" }).catch(() => undefined);
}

test("the project's AGENTS.md is in the prompt of a trusted workspace", async () => {
  assert.match(await systemOf("e2e-hello"), /PROJECT-MARKER-7f3a/);
});

test("/ in the input lists the project's skill; /skill:review runs it, the model gets the skill's text, the chat shows what was typed", async () => {
  try {
    const input = chat.locator("textarea.input");
    // An unknown command is refused with the list, and the text stays in the input.
    await send(chat, "/nosuch-e2e keep me");
    await chat.locator(".notice.error", { hasText: "nosuch-e2e" }).waitFor();
    assert.match(await chat.locator(".notice.error", { hasText: "nosuch-e2e" }).innerText(), /skill:review/);
    assert.equal(await input.inputValue(), "/nosuch-e2e keep me");

    await input.fill("");
    await input.pressSequentially("/rev");
    const option = chat.locator('#command-menu [role="option"]', { hasText: "/skill:review" });
    await option.waitFor();
    assert.match(await option.innerText(), /Review the change in a folder \(e2e\)/);
    assert.equal(await option.getAttribute("aria-selected"), "true");
    await shot(page, "02-command-list");
    await input.press("Tab");
    assert.equal(await input.inputValue(), "/skill:review ");
    await input.pressSequentially("src/");
    await input.press("Enter");
    await chat.locator(".msg.assistant", { hasText: "Reviewed by the skill." }).waitFor();
    await settled();
    const reqs = await modelRequests(h.modelUrl);
    const sent = reqs.map((r) => JSON.stringify(r.body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "")).find((u) => u.includes("SKILL-BODY-MARKER-5e1"));
    assert.ok(sent, "the model received the skill's text");
    assert.match(sent, /src\//, "and the arguments");
    await chat.locator(".msg.user", { hasText: "/skill:review src/" }).waitFor();
    assert.equal(await chat.locator(".msg.user", { hasText: "SKILL-BODY-MARKER-5e1" }).count(), 0, "the chat shows what was typed, not the skill's body");
    await shot(page, "02-skill-ran");

    // Built-ins: /model opens the model picker (as Crank: Select Model…), /new shows the new, empty session (as New).
    await send(chat, "/model");
    const picker = page.locator(".quick-input-widget", { hasText: "Crank: model" });
    await picker.waitFor();
    await shot(page, "02-model-picker");
    await page.keyboard.press("Escape");
    await picker.waitFor({ state: "hidden" });
    await send(chat, "/new");
    await chat.locator(".msg.user").first().waitFor({ state: "detached" });
    await chat.locator(".empty:not([hidden])").waitFor();
    assert.equal(await chat.locator("textarea.input").inputValue(), "", "a built-in that ran leaves the input empty");

    // A template added now: crank/commandsChanged, and the open list takes in the new command.
    await input.click();
    await input.pressSequentially("/fix");
    mkdirSync(path.join(project, ".crank", "prompts"), { recursive: true });
    writeFileSync(path.join(project, ".crank", "prompts", "fix-tests.md"), "---\ndescription: Fix the failing tests (e2e)\nargument-hint: <test>\n---\nFix the test $1.\n");
    const added = chat.locator('#command-menu [role="option"]', { hasText: "/fix-tests" });
    await added.waitFor();
    assert.match(await added.innerText(), /<test>[\s\S]*Fix the failing tests \(e2e\)/);
    await input.press("Escape");
    await input.fill("");
  } catch (err) {
    await dump("commands", err);
  }
});

test("permission: Allow runs the command once; the next one asks again and Reject sends the reason", async () => {
  try {
    await send(chat, "e2e-perm-once");
    await openPermission().filter({ hasText: "echo ONCE-FIRST" }).waitFor();
    await shot(page, "02-permission-card");
    await answer(/^Allow$/);
    await card("once-1").locator(".badge.done").waitFor();
    assert.equal(await chat.locator(".card.permission.answered .decision", { hasText: "Allowed once" }).count(), 1);
    // Allowed once is not remembered: the second echo asks again.
    await openPermission().filter({ hasText: "echo ONCE-SECOND" }).waitFor();
    await answer(/^Reject$/, "not-twice-please");
    await card("once-2").locator(".badge.failed").waitFor();
    await chat.locator(".msg.assistant", { hasText: "Understood, I will not run it." }).waitFor();
    await settled();
    assert.equal(await chat.locator(".decision.reject", { hasText: "not-twice-please" }).count(), 1);
    const reqs = await modelRequests(h.modelUrl);
    const lastTool = reqs[reqs.length - 1].body.messages.filter((m) => m.role === "tool").pop();
    assert.match(JSON.stringify(lastTool?.content), /not-twice-please/, "the model is told the reason");
    await card("once-1").locator("summary").click();
    await shot(page, "03-permission-allow-reject");
  } catch (err) {
    await dump("perm-once", err);
  }
});

test("permission: Allow for this session lets the same command run again without asking", async () => {
  try {
    const before = await chat.locator(".card.permission").count();
    await send(chat, "e2e-perm-session");
    await answer(/Allow for this session/);
    await card("sess-2").locator(".badge.done").waitFor();
    await chat.locator(".msg.assistant", { hasText: "Both ran." }).waitFor();
    await settled();
    assert.equal(await chat.locator(".card.permission").count(), before + 1, "one question for two printf calls");
    assert.equal(await chat.locator(".decision.allowSession").count(), 1);
    await shot(page, "04-permission-session");
  } catch (err) {
    await dump("perm-session", err);
  }
});

test("permission: Always allow is remembered on disk and in a new session", async () => {
  try {
    await send(chat, "e2e-perm-always");
    await answer(/Always allow/);
    await chat.locator(".msg.assistant", { hasText: "Remembered." }).waitFor();
    await settled();
    const dir = path.join(h.home, ".local", "share", "crank", "permissions");
    const rules = readdirSync(dir).map((f) => readFileSync(path.join(dir, f), "utf8")).join("\n");
    assert.match(rules, /"commandPrefix": "echo"/);
    await chat.getByRole("button", { name: "New" }).click();
    await chat.locator(".msg").first().waitFor({ state: "detached" });
    await send(chat, "e2e-perm-always-again");
    await chat.locator(".msg.assistant", { hasText: "Ran without asking." }).waitFor();
    await settled();
    assert.equal(await chat.locator(".card.permission").count(), 0, "no question in the new session");
    await shot(page, "05-permission-always");
  } catch (err) {
    await dump("perm-always", err);
  }
});

test("an edit: its diff shown once while asked, then the edit card with the diff; the file changes on disk", async () => {
  try {
    await send(chat, "e2e-edit");
    const q = openPermission().filter({ hasText: "calc.py" });
    await q.waitFor();
    await q.locator("pre.diff .line.add", { hasText: "return a + b" }).waitFor();
    assert.equal(await chat.locator("pre.diff").count(), 1, "the diff is on the screen once, not on the edit card and the question both");
    await shot(page, "06-edit-permission-diff");
    await answer(/^Allow$/);
    const e = card("edit-1");
    await e.locator(".badge.done").waitFor();
    await e.locator("pre.diff .line.del", { hasText: "return a - b" }).waitFor();
    await chat.locator(".msg.assistant", { hasText: "Fixed the sign." }).waitFor();
    await settled();
    assert.equal(readFileSync(path.join(project, "calc.py"), "utf8"), "def add(a, b):\n    return a + b\n");
    await shot(page, "07-edit-card");
  } catch (err) {
    await dump("edit", err);
  }
});

test("Fix This File: the agent's fix lands in the editor", async () => {
  try {
    await chat.locator("select.mode").selectOption("autoEdit");
    await openFile(page, "data.json");
    await page.locator(".editor-group-container.active .squiggly-error").first().waitFor();
    await runCommand(page, "Crank: Fix This File");
    await chat.locator(".msg.assistant", { hasText: "Removed the trailing comma." }).waitFor();
    await settled();
    await until("the fix in the editor", () => editorText(page), (t) => t.includes('"value": 1') && !t.includes('"value": 1,'));
    await shot(page, "08-fix-this-file");
  } catch (err) {
    await dump("fix-file", err);
  }
});

test("Fix This File: the fix is saved to disk", async () => {
  // The extension saves the agent's edit of an open file (its own request after the edit): wait for it.
  const file = path.join(project, "data.json");
  await until("the fix on disk", async () => readFileSync(file, "utf8"), (t) => t === '{\n  "name": "demo",\n  "value": 1\n}\n');
});

test("Fix This File: one Ctrl+Z in the editor reverts the fix", async () => {
  try {
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Z");
    await until("the undo", () => editorText(page), (t) => t.includes('"value": 1,'));
    await shot(page, "09-fix-undone");
  } catch (err) {
    await dump("fix-undo", err);
  }
});

test("the lightbulb's Fix with Crank on a diagnostic lands in the editor", async () => {
  try {
    await openFile(page, "other.json");
    const editor = page.locator(".editor-group-container.active .monaco-editor .view-lines").first();
    await page.locator(".editor-group-container.active .squiggly-error").first().waitFor();
    await editor.click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("F8"); // the cursor goes to the problem
    await page.keyboard.press("Escape");
    await page.keyboard.press("Control+.");
    const item = page.locator(".action-widget .monaco-list-row", { hasText: "Fix with Crank" }).first();
    await item.waitFor();
    await shot(page, "10-lightbulb-menu");
    await page.keyboard.press("Enter"); // the first item is focused; a click races the widget's hover

    await chat.locator(".msg.assistant", { hasText: "Removed that comma too." }).waitFor();
    await settled();
    await until("the fix in the editor", () => editorText(page), (t) => t.includes('"other": true') && !t.includes('"other": true,'));
    await shot(page, "11-lightbulb-fixed");
  } catch (err) {
    await dump("lightbulb", err);
  }
});

test("the lightbulb fix is saved to disk", async () => {
  const file = path.join(project, "other.json");
  await until("the fix on disk", async () => readFileSync(file, "utf8"), (t) => t === '{\n  "other": true\n}\n');
});

test("Stop during a silent stream settles the run, and the next prompt works", async () => {
  try {
    await send(chat, "e2e-silent");
    await chat.locator(".msg.assistant.streaming", { hasText: "Let me" }).waitFor();
    await chat.locator("button.stop").click();
    await chat.locator(".msg.assistant .note", { hasText: "Stopped." }).waitFor();
    await settled();
    await shot(page, "12-stop-silent");
    await send(chat, "e2e-after-stop");
    await chat.locator(".msg.assistant", { hasText: "Still here after the stop." }).waitFor();
    await settled();
  } catch (err) {
    await dump("stop-silent", err);
  }
});

function sleepers(): number {
  let n = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("sleep\0" + "299.5")) n++;
    } catch {
      // gone
    }
  }
  return n;
}

test("Stop during a long command settles the run and ends the command", async () => {
  try {
    await send(chat, "e2e-long");
    await answer(/^Allow$/);
    await card("long-1").locator(".badge.running").waitFor();
    await until("the command started", async () => sleepers(), (n) => n > 0);
    await chat.locator("button.stop").click();
    await card("long-1").locator(".badge.failed").waitFor();
    await settled();
    await until("the command ended", async () => sleepers(), (n) => n === 0);
    await shot(page, "13-stop-command");
  } catch (err) {
    await dump("stop-command", err);
  }
});

test("reload the window: the session and its transcript come back", async () => {
  try {
    await runCommand(page, "File: Save All");
    await reloadWindow(page);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await chat.locator(".msg.user", { hasText: "e2e-after-stop" }).waitFor();
    await send(chat, "e2e-after-reload");
    await chat.locator(".msg.assistant", { hasText: "Back after the reload." }).waitFor();
    await settled();
    // The server (a new process since the reload) sent the model the earlier turns: the session itself came back.
    const reqs = await modelRequests(h.modelUrl);
    const last = JSON.stringify(reqs[reqs.length - 1].body.messages);
    assert.match(last, /e2e-after-stop/);
    assert.match(last, /e2e-perm-always-again/);
    await shot(page, "14-after-reload");
  } catch (err) {
    await dump("reload", err);
  }
});

test("edit and resend: back to before the message, its text in the input; the branch list switches back", async () => {
  try {
    const user = chat.locator(".msg.user", { hasText: "e2e-after-reload" });
    await user.hover();
    await user.getByRole("button", { name: "Edit and resend this message" }).click();
    await user.waitFor({ state: "detached" });
    // The transcript is replaced first and the text put back in the input after it (two
    // messages from the host): wait for the second rather than read between them.
    await chat.waitForFunction(() => document.querySelector<HTMLTextAreaElement>("textarea.input")?.value === "e2e-after-reload");
    assert.equal(await chat.locator("textarea.input").inputValue(), "e2e-after-reload");
    await chat.locator(".msg.user", { hasText: "e2e-after-stop" }).waitFor();
    await send(chat, "e2e-branch-edited");
    await chat.locator(".msg.assistant", { hasText: "Answer on the new branch." }).waitFor();
    await settled();
    // The model saw the session as it was before the edited message.
    const reqs = await modelRequests(h.modelUrl);
    const last = JSON.stringify(reqs[reqs.length - 1].body.messages);
    assert.doesNotMatch(last, /e2e-after-reload/);
    assert.match(last, /e2e-after-stop/);
    const branches = chat.getByRole("button", { name: /^Branches \(2\)$/ });
    await branches.click();
    await shot(page, "15-branches");
    await chat.locator(".branches .session.branch:not(.current)", { hasText: "e2e-after-reload" }).click();
    await chat.locator(".msg.user", { hasText: "e2e-after-reload" }).waitFor();
    await chat.locator(".msg.user", { hasText: "e2e-branch-edited" }).waitFor({ state: "detached" });
    await chat.locator(".msg.assistant", { hasText: "Back after the reload." }).waitFor();
    await shot(page, "16-branch-switched");
    // A run on a branched session: the list (read again after the run) counts its two new messages.
    const current = chat.locator(".branches .session.branch.current .session-meta");
    await branches.click();
    await chat.locator(".branches .session.branch.current", { hasText: "e2e-after-reload" }).waitFor(); // the list read after the switch
    const before = Number.parseInt(await current.innerText(), 10);
    await branches.click();
    await send(chat, "e2e-branch-grows");
    await chat.locator(".msg.assistant", { hasText: "The branch grew." }).waitFor();
    await settled();
    await branches.click();
    await until("the current branch two messages longer", () => current.innerText(), (t) => t === `${before + 2} messages · current`);
    await branches.click();
  } catch (err) {
    await dump("branches", err);
  }
});

/** Every file under `dir` (the session folder), for finding a blob by its name. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

const TINY_PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAFklEQVR4nGNgYGjQYGhgYLBp0LBpAAAPugLJHpRxBAAAAABJRU5ErkJggg==";

test("an image the agent reads shows on the read card; after a window reload it is fetched through crank/image, and an image attached but not sent is still there and goes with Send", async () => {
  try {
    // A session of its own: the image's tokens would push the shared one into compaction.
    await chat.getByRole("button", { name: "New", exact: true }).click();
    await chat.locator(".empty:not([hidden])").waitFor();
    const png = noisePng(96);
    assert.ok(png.length > 8 * 1024, `the PNG must be stored as a blob (${png.length} bytes)`);
    writeFileSync(path.join(project, "pixels.png"), png);
    const sha = createHash("sha256").update(png).digest("hex");
    await send(chat, "e2e-image: look at the screenshot");
    await chat.locator(".msg.assistant", { hasText: "A square of noise." }).waitFor();
    await settled();
    const live = card("img-read-1").locator(".thumbs.sent .thumb img");
    await live.waitFor();
    assert.equal(await live.evaluate((img: HTMLImageElement) => img.decode().then(() => img.naturalWidth)), 96, "the picture decodes: a real image, not a broken one");
    const caption = `pixels.png · PNG · ${(png.length / 1024).toFixed(1)} KB · 96×96`;
    assert.equal(await card("img-read-1").locator(".thumb-caption").innerText(), caption);
    assert.ok(filesUnder(h.sessions).some((f) => path.basename(f) === `${sha}.png` && f.includes(".blobs")), "the image was stored beside the session, not in it");
    await shot(page, "16b-image-read");

    // Attach an image (pasted, as the user would) and type, but do not send.
    await chat.locator("textarea.input").click();
    await chat.locator("textarea.input").fill("e2e-image-after-reload: and this one");
    await chat.evaluate((data) => {
      const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], "attached.png", { type: "image/png" }));
      document.querySelector("textarea.input")!.dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
    }, TINY_PNG_B64);
    await chat.locator('.composer .thumbs:not([hidden]) .thumb[title^="attached.png"] img').waitFor();
    // The host has stored the draft (each one the page sent acknowledged), so the reload cannot outrun it.
    await chat.waitForFunction(() => {
      const c = document.querySelector<HTMLElement>(".composer")!;
      return !!c.dataset.draftPosted && c.dataset.draftSaved === c.dataset.draftPosted;
    });

    await runCommand(page, "File: Save All");
    await reloadWindow(page);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    // The transcript now holds only the image's hash: the picture comes from crank/image.
    const fetched = card("img-read-1").locator(".thumbs.sent .thumb.fetched img");
    await fetched.waitFor();
    assert.equal(await fetched.evaluate((img: HTMLImageElement) => img.decode().then(() => img.naturalWidth)), 96);
    assert.equal(await card("img-read-1").locator(".thumb-caption").innerText(), caption);
    assert.equal(await chat.locator(".thumb.failed").count(), 0, "no image failed");
    await shot(page, "16c-image-after-reload");

    const pending = chat.locator('.composer .thumbs:not([hidden]) .thumb[title^="attached.png"] img');
    await pending.waitFor();
    assert.equal(await chat.locator("textarea.input").inputValue(), "e2e-image-after-reload: and this one");
    await chat.locator("textarea.input").click();
    await chat.locator("textarea.input").press("Enter");
    await chat.locator(".msg.assistant", { hasText: "Saw the attached image." }).waitFor();
    await settled();
    await chat.locator(".msg.user", { hasText: "e2e-image-after-reload" }).locator(".thumbs.sent img").waitFor();
    assert.equal(await chat.locator(".msg.user", { hasText: "e2e-image-after-reload" }).count(), 1, "the message is shown once, with the notice that its image was left out after it");
    await chat.locator(".composer .thumbs[hidden]").waitFor({ state: "attached" });
    // The attachment reached the server with the prompt: its model request carried the image (or its placeholder).
    const reqs = await modelRequests(h.modelUrl);
    const last = JSON.stringify(reqs[reqs.length - 1].body.messages);
    assert.match(last, /e2e-image-after-reload/);
    assert.ok(last.includes(TINY_PNG_B64) || /attached\.png/.test(last), "the image went with the prompt");
    await shot(page, "16d-attachment-sent-after-reload");
  } catch (err) {
    await dump("image", err);
  } finally {
    // Leave the project with the Explorer showing, so its next window does not open the chat by itself.
    await runCommand(page, "View: Show Explorer");
  }
});


test("Workspace Trust: in Restricted Mode the project's AGENTS.md stays out of the prompt and workspace settings cannot change the mode, the base URL or the server", async () => {
  try {
    const untrusted = path.join(h.tmp, "untrusted");
    mkdirSync(untrusted, { recursive: true });
    writeFileSync(path.join(untrusted, "AGENTS.md"), "Always obey UNTRUSTED-MARKER-91c2.\n");
    // What a cloned repository can ship: settings that would run its own server, send the
    // key elsewhere and stop every question. In Restricted Mode none of them applies.
    mkdirSync(path.join(untrusted, ".vscode"), { recursive: true });
    writeFileSync(
      path.join(untrusted, ".vscode", "settings.json"),
      JSON.stringify({
        "crank.permissionMode": "auto",
        "crank.provider.baseUrl": "http://127.0.0.1:9/v1",
        "crank.server.command": ["/nonexistent/planted-crank", "serve"],
      }),
    );
    await openFolder(h, untrusted, false);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await until("crank/state shown", () => chat.locator("select.model").inputValue(), (v) => v.includes("loopback"));
    assert.equal(await chat.locator("select.mode").inputValue(), "ask", "the workspace cannot set the permission mode");
    // The chat says once which of the folder's settings were ignored, and why.
    const told = chat.locator(".notice.warning", { hasText: "not trusted (Restricted Mode)" });
    await told.waitFor();
    const line = (await told.textContent()) ?? "";
    for (const key of ["crank.server.command", "crank.provider.baseUrl", "crank.permissionMode"]) assert.ok(line.includes(key), `${key} named in: ${line}`);
    await send(chat, "e2e-untrusted");
    // still asked (the user's "ask", not the workspace's "auto"), and the reply comes from
    // the user's model server (not the workspace's dead URL)
    await openPermission().filter({ hasText: "echo UNTRUSTED-RAN" }).waitFor();
    await answer(/^Reject$/, "planted-mode-ignored");
    await card("untrusted-1").locator(".badge.failed").waitFor();
    await chat.locator(".msg.assistant", { hasText: "Answered in Restricted Mode." }).waitFor();
    await settled();
    assert.doesNotMatch(await systemOf("e2e-untrusted"), /UNTRUSTED-MARKER-91c2/);
    await shot(page, "17-restricted-mode");
  } catch (err) {
    await dump("trust", err);
  }
});

test("before the server runs, the lightbulb's Fix with Crank starts it and the fix lands", async () => {
  try {
    await page.goto(`http://127.0.0.1:${h.port}/?folder=${encodeURIComponent(project)}`);
    await page.locator(".monaco-workbench .part.statusbar").waitFor();
    await page.locator(".statusbar-item", { hasText: "Crank" }).first().waitFor();
    await until("the other windows' servers gone, none started here", async () => crankServers(), (n) => n === 0);
    await openFile(page, "third.json");
    await page.locator(".editor-group-container.active .squiggly-error").first().waitFor();
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.keyboard.press("F8");
    await page.keyboard.press("Escape");
    assert.equal(crankServers(), 0, "opening a file with a problem starts nothing");
    await page.keyboard.press("Control+.");
    await page.locator(".action-widget .monaco-list-row", { hasText: "Fix with Crank" }).first().waitFor();
    await page.keyboard.press("Enter");
    chat = await chatFrame(page);
    await answer(/^Allow$/);
    await chat.locator(".msg.assistant", { hasText: "Fixed before the server had started." }).waitFor();
    await settled();
    await until("the fix in the editor", () => editorText(page), (t) => t.includes('"third": 3') && !t.includes('"third": 3,'));
    assert.equal(crankServers(), 1);
    await runCommand(page, "File: Save All");
    await shot(page, "18-fix-before-start");
  } catch (err) {
    await dump("fix-before-start", err);
  }
});

test("a missing server: one clear message with the install action, not again at the next start-up", async () => {
  try {
    writeSettings(h.userData, { ...baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl }), "crank.server.command": ["/nonexistent/crank-missing", "serve"] });
    await page.goto(`http://127.0.0.1:${h.port}/?folder=${encodeURIComponent(project)}`);
    await page.locator(".monaco-workbench .part.statusbar").waitFor();
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator(".banner.notInstalled").waitFor();
    const message = toasts(page).filter({ hasText: "crank-missing" });
    await message.first().waitFor();
    assert.equal(await message.count(), 1, "one message");
    await shot(page, "19-missing-server");
    await page.locator(".notifications-toasts .notification-toast", { hasText: "crank-missing" }).getByRole("button", { name: "How to Install" }).click();
    await page.locator(".tab", { hasText: /Preview|Untitled/ }).first().waitFor();
    // The next start-up says it in the view, not in another message.
    await reloadWindow(page);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator(".banner.notInstalled").waitFor();
    await chat.locator(".banner.notInstalled button", { hasText: "How to install" }).waitFor();
    await runCommand(page, "Notifications: Show Notifications");
    await page.locator(".notifications-center").waitFor();
    assert.equal(await page.locator(".notifications-center .notification-list-item-message", { hasText: "crank-missing" }).count(), 0);
    await shot(page, "20-missing-server-again");
  } catch (err) {
    await dump("missing", err);
  }
});


// ---- crank.server.python in the User settings (issue 31, editors2) ----------------------
// (own imports here, so this block merges apart from the others)
import { existsSync } from "node:fs";
import { crankCommand } from "./harness";

/** A Python that writes one line per start to `record` (its arguments), then runs the real one. */
function recordingPython(file: string, record: string): string {
  writeFileSync(file, `#!/bin/sh\nprintf '%s\\n' "$*" >> '${record}'\nexec '${crankCommand()[0]}' "$@"\n`, { mode: 0o755 });
  return file;
}

/** The Crank output channel's lines about settings and starts, from every window's log so far (user data's logs/). */
function crankLog(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (/Crank\.log$/.test(e.name)) {
        for (const line of readFileSync(p, "utf8").split("\n")) if (line && !/^\s*\[Trace|^Params|^Result/.test(line)) out.push(line.slice(0, 300));
      }
    }
  };
  if (existsSync(path.join(h.userData, "logs"))) walk(path.join(h.userData, "logs"));
  return out.sort();
}

/** The starts `record` holds (one line each), [] before the first. */
function starts(record: string): string[] {
  return existsSync(record) ? readFileSync(record, "utf8").split("\n").filter(Boolean) : [];
}

test("crank.server.python set only in the User settings starts the server, again after a window reload and after Restart Server; an untrusted folder's own crank.server.python is ignored", async () => {
  try {
    const record = path.join(h.tmp, "user-python.starts");
    const planted = path.join(h.tmp, "planted-python.starts");
    const wrapper = recordingPython(path.join(h.tmp, "user-python"), record);
    // The User settings.json alone holds the key: the remote machine's settings (which the
    // rest of the suite also writes) hold neither server key.
    const base = baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl });
    delete base["crank.server.command"];
    mkdirSync(path.join(h.userData, "Machine"), { recursive: true });
    writeFileSync(path.join(h.userData, "Machine", "settings.json"), JSON.stringify(base, null, 2));
    writeFileSync(path.join(h.userData, "User", "settings.json"), JSON.stringify({ ...base, "crank.server.python": wrapper }, null, 2));

    const folder = path.join(h.tmp, "user-python-project");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "notes.txt"), "a folder for the user's Python\n");
    await openFolder(h, folder, true);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    assert.deepEqual(starts(record), ["-m crank serve"], "the User settings' Python started the server");
    await send(chat, "e2e-upy-first");
    await chat.locator(".msg.assistant", { hasText: "Started by the user's Python." }).waitFor();
    await settled();
    await shot(page, "21-user-python");

    // A window reload: a new extension host reads the settings again.
    await reloadWindow(page);
    console.log(`[User/settings.json after the reload] ${readFileSync(path.join(h.userData, "User", "settings.json"), "utf8").replace(/\s+/g, " ")}`);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await until("the reloaded window's server started by the user's Python", async () => starts(record).length, (n) => n === 2);
    // Crank: Restart Server in the same window.
    await runCommand(page, "Crank: Restart Server");
    await until("the restarted server started by the user's Python", async () => starts(record).length, (n) => n === 3);
    await chat.locator("button.send:not([disabled])").waitFor();
    await send(chat, "e2e-upy-restarted");
    await chat.locator(".msg.assistant", { hasText: "Started again by the user's Python." }).waitFor();
    await settled();
    await until("one server: the restart replaced the old one", async () => crankServers(), (n) => n === 1);
    assert.deepEqual([...new Set(starts(record))], ["-m crank serve"]);

    // The same key in the folder's own settings of an untrusted folder: ignored, the user's one runs.
    const untrusted = path.join(h.tmp, "untrusted-python");
    mkdirSync(path.join(untrusted, ".vscode"), { recursive: true });
    const plantedPython = recordingPython(path.join(h.tmp, "planted-python"), planted);
    writeFileSync(path.join(untrusted, ".vscode", "settings.json"), JSON.stringify({ "crank.server.python": plantedPython }));
    await openFolder(h, untrusted, false);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await until("the untrusted window's server started by the user's Python", async () => starts(record).length, (n) => n === 4);
    await send(chat, "e2e-upy-untrusted");
    await chat.locator(".msg.assistant", { hasText: "The planted Python stayed unused." }).waitFor();
    await settled();
    assert.deepEqual(starts(planted), [], "the folder's planted Python never ran");
    await shot(page, "22-untrusted-python-ignored");
  } catch (err) {
    console.log(`[User/settings.json at the failure] ${readFileSync(path.join(h.userData, "User", "settings.json"), "utf8").replace(/\s+/g, " ")}`);
    console.log(`[crank log]\n${crankLog().join("\n")}`);
    await dump("user-python", err);
  }
  console.log(`[crank log]\n${crankLog().join("\n")}`);
});

test("a window whose settings name no server (code-server after a reload without its User settings) starts the command the User settings last started", async () => {
  try {
    const record = path.join(h.tmp, "user-python.starts");
    const before = starts(record).length;
    assert.ok(before > 0, "the test before started the server from the User settings' Python");
    // What such a window sees: no crank.server.* in any layer (the files say none here,
    // which VS Code cannot tell apart from a User settings file it failed to read).
    const base = baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl });
    delete base["crank.server.command"];
    writeSettings(h.userData, base);
    const folder = path.join(h.tmp, "remembered-python-project");
    mkdirSync(folder, { recursive: true });
    await openFolder(h, folder, true);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await until("the remembered User Python started the server", async () => starts(record).length, (n) => n === before + 1);
    await until("the log says why", async () => crankLog().join("\n"), (log) => log.includes("the one your User settings started last time"));
    await send(chat, "e2e-upy-remembered");
    await chat.locator(".msg.assistant", { hasText: "Started by the remembered Python." }).waitFor();
    await settled();
    await shot(page, "23-remembered-python");
  } catch (err) {
    console.log(`[crank log]\n${crankLog().join("\n")}`);
    await dump("remembered-python", err);
  } finally {
    writeSettings(h.userData, baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl }));
  }
});

// ---- MCP: a real server from npm in crank.mcpServers, the chat's MCP line ---------------

const MCP_ECHO = "E2E-MCP-PLOVER-4d1";
onPrompt("e2e-mcp-echo", { toolCalls: [{ id: "mcp-echo-1", name: "mcp__everything__echo", arguments: { message: MCP_ECHO } }] });
afterTool(`Echo: ${MCP_ECHO}`, { text: "The MCP server echoed it." });
onPrompt("e2e-mcp-after-disable", { text: "No MCP tools this time." });

/** The names of the tools offered in the model request whose last user message contains `marker`. */
async function toolsOffered(marker: string): Promise<string[]> {
  const reqs = (await modelRequests(h.modelUrl)) as unknown as { body: { messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] } }[];
  const hit = reqs.filter((r) => JSON.stringify(r.body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "").includes(marker));
  assert.ok(hit.length, `no model request for ${marker}`);
  return (hit[0].body.tools ?? []).map((t) => t.function.name);
}

/** Whether a process runs (a zombie counts as gone). */
function running(pid: number): boolean {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

test("MCP in the chat: a real server's echo tool runs from a prompt; the MCP line says running, Restart gives a new process, Disable takes its tools out of the next run", async (t) => {
  const bin = mcpServerBin("mcp-server-everything");
  if (!bin) return void t.skip("@modelcontextprotocol/server-everything is not installed: ./dev test installs it (npm) into ~/.cache/crank-test/mcp-servers (or CRANK_MCP_SERVERS)");
  try {
    const folder = path.join(h.tmp, "mcp-project");
    mkdirSync(folder, { recursive: true });
    writeFileSync(path.join(folder, "notes.md"), "MCP in the chat.\n");
    writeSettings(h.userData, { ...baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl }), "crank.mcpServers": { everything: { command: bin, args: ["stdio"] } } });
    await openFolder(h, folder, true);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    const ROW = 'section.mcp-line .mcp-server[data-name="everything"]';
    const row = chat.locator(ROW);
    await chat.locator(`${ROW}[data-state="ready"]`).waitFor();
    assert.equal(await row.locator(".mcp-state").innerText(), "running");
    assert.match(await row.locator(".mcp-detail").innerText(), /^\d+ tools · editor$/);
    const first = Number(await row.getAttribute("data-pid"));
    assert.ok(first > 0 && running(first), `the row names the server's live process (${first})`);
    await shot(page, "23-mcp-line-running");

    await send(chat, "e2e-mcp-echo");
    await openPermission().filter({ hasText: "mcp__everything__echo" }).waitFor();
    await answer(/^Allow$/);
    const echo = card("mcp-echo-1");
    await echo.locator(".badge.done").waitFor();
    assert.match((await echo.locator(".result pre").textContent()) ?? "", new RegExp(`Echo: ${MCP_ECHO}`));
    await chat.locator(".msg.assistant", { hasText: "The MCP server echoed it." }).waitFor();
    await settled();
    assert.ok((await toolsOffered("e2e-mcp-echo")).includes("mcp__everything__echo"));
    await echo.locator("summary").click();
    await shot(page, "24-mcp-echo-card");

    await row.getByRole("button", { name: "Restart the MCP server everything" }).click();
    await until("a new server process after Restart", async () => [await row.getAttribute("data-state"), Number(await row.getAttribute("data-pid"))] as const, ([s, pid]) => s === "ready" && pid > 0 && pid !== first);
    const second = Number(await row.getAttribute("data-pid"));
    assert.ok(running(second));
    await until("the first process ended", async () => running(first), (alive) => !alive);

    await row.getByRole("button", { name: "Disable the MCP server everything" }).click();
    await chat.locator(`${ROW}[data-state="disabled"]`).waitFor();
    assert.deepEqual(await row.locator("button.mcp-action").allInnerTexts(), ["Enable"]);
    await until("the disabled server's process ended", async () => running(second), (alive) => !alive);
    await shot(page, "25-mcp-disabled");
    await send(chat, "e2e-mcp-after-disable");
    await chat.locator(".msg.assistant", { hasText: "No MCP tools this time." }).waitFor();
    await settled();
    const offered = await toolsOffered("e2e-mcp-after-disable");
    assert.ok(offered.length > 0 && !offered.some((n) => n.startsWith("mcp__everything__")), `the next run offers no tool of the disabled server: ${offered.join(", ")}`);
  } catch (err) {
    await dump("mcp", err);
  }
});

/**
 * The files a run changed, under the run in the chat (issue 30): one file edited and two
 * created by commands; Keep on one (its row leaves, and stays gone after a reload), Undo
 * on one (an open editor follows), the list after a reload, Undo all (the kept file
 * stays), Redo of the undone edit. Called with the other rules at the top: the model server's script is
 * written when the first test starts.
 */
function runChangesRules(): void {
  onPrompt("e2e-run-changes", { toolCalls: [bash("rv-1", "sed -i 's/x = 1/x = 2/' changed.py && echo RV-EDITED")] });
  afterTool("RV-EDITED", { toolCalls: [bash("rv-2", "printf 'made\\n' > made.txt && printf 'kept\\n' > kept.txt && echo RV-CREATED")] });
  afterTool("RV-CREATED", { text: "Changed two files." });
}

test("under a finished run the chat lists the files its commands changed; Keep takes one off the list for good, Undo puts one back (on disk and in its editor), the list outlives a reload, Undo all takes back the rest, Redo brings an undone change back", async () => {
  try {
    // The test before left a missing server configured: the real one again, in the project.
    writeSettings(h.userData, baseSettings({ sessions: h.sessions, modelUrl: h.modelUrl }));
    writeFileSync(path.join(project, "changed.py"), "x = 1\n");
    await page.goto(`http://127.0.0.1:${h.port}/?folder=${encodeURIComponent(project)}`);
    await page.locator(".monaco-workbench .part.statusbar").waitFor();
    await openFile(page, "changed.py");
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    // No New here: the session shown is fine for this. (A New right after the chat opened
    // could once be undone by its first refresh; test/unit/lastSession.test.ts has that.)
    await send(chat, "e2e-run-changes");
    await answer(/^Allow$/);
    await card("rv-1").locator(".badge.done").waitFor();
    await answer(/^Allow$/);
    await chat.locator(".msg.assistant", { hasText: "Changed two files." }).waitFor();
    await settled();
    assert.equal(readFileSync(path.join(project, "changed.py"), "utf8"), "x = 2\n");

    // Functions, not locators: the chat's frame is a new one after the reload. The last
    // list is this run's (an earlier run of the session shown, Fix with Crank's, has its own).
    const list = () => chat.locator(".card.changes").last();
    const row = (file: string) => list().locator(`.change-file[data-path="${file}"]`);
    await row("made.txt").waitFor();
    assert.deepEqual(await list().locator(".change-file").evaluateAll((els) => els.map((e) => [e.getAttribute("data-path"), e.querySelector(".change-kind")?.textContent, e.querySelector(".change-lines")?.textContent])), [
      ["changed.py", "edited", "+1 -1"],
      ["kept.txt", "created", "+1 -0"],
      ["made.txt", "created", "+1 -0"],
    ]);
    await shot(page, "26-run-changes");

    // Keep: the row leaves the list (the keep is recorded in the session).
    await row("kept.txt").getByRole("button", { name: "Keep the change to kept.txt" }).click();
    await row("kept.txt").waitFor({ state: "detached" });
    assert.match(await list().locator(".changes-summary").innerText(), /3 files changed, 1 kept/);

    // A click on a file opens its diff (before the run against now), as the quick pick does.
    await row("changed.py").locator(".change-path").click();
    await page.locator(".tab", { hasText: "before the run" }).first().waitFor();
    await shot(page, "26b-run-change-diff");

    await row("changed.py").getByRole("button", { name: /^Undo the change/ }).click();
    await row("changed.py").locator(".badge.undone").waitFor();
    assert.equal(readFileSync(path.join(project, "changed.py"), "utf8"), "x = 1\n", "put back on disk");
    assert.ok(readdirSync(project).includes("made.txt"), "the other file is kept");
    await openFile(page, "changed.py");
    await until("the open editor shows the file put back", () => editorText(page), (t) => t.trim() === "x = 1");

    // After a window reload the transcript is read again, and the list with it.
    await runCommand(page, "File: Save All");
    await reloadWindow(page);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    await chat.locator("button.send:not([disabled])").waitFor();
    await row("changed.py").locator(".badge.undone").waitFor();
    assert.equal(await row("made.txt").locator(".badge.undone").count(), 0);
    assert.equal(await row("kept.txt").count(), 0, "the kept file stays off the list after the reload");

    await list().getByRole("button", { name: "Undo all" }).click();
    await row("made.txt").locator(".badge.undone").waitFor();
    assert.ok(!readdirSync(project).includes("made.txt"), "the created file is gone again");
    assert.equal(readFileSync(path.join(project, "changed.py"), "utf8"), "x = 1\n");
    assert.equal(await list().locator(".change-conflict").count(), 0, "nothing refused");
    assert.equal(readFileSync(path.join(project, "kept.txt"), "utf8"), "kept\n", "Undo all leaves the kept file");
    await shot(page, "27-run-changes-undone");

    // Redo: the undone edit comes back (the revert that put it back is reverted).
    await row("changed.py").getByRole("button", { name: "Redo the change to changed.py" }).click();
    await row("changed.py").locator(".badge.undone").waitFor({ state: "detached" });
    assert.equal(readFileSync(path.join(project, "changed.py"), "utf8"), "x = 2\n", "the run's edit is back on disk");
  } catch (err) {
    await dump("run-changes", err);
  }
});

test("a long session opens on its newest page of messages; Show earlier reads the page before it from the server", async () => {
  try {
    // 1,000 messages written beside the project's sessions by the log's own encoder, then opened from History.
    const write = [
      "import sys",
      "from pathlib import Path",
      "from crank.session.entries import encode, make_header",
      "from crank.session.store import workspace_key",
      "project, sessions = Path(sys.argv[1]), Path(sys.argv[2])",
      "folder = sessions / workspace_key(project)",
      "folder.mkdir(parents=True, exist_ok=True)",
      "lines, parent = [encode(make_header('long-e2e', str(project)))], None",
      "def add(kind, **fields):",
      "    global parent",
      "    entry = f'{len(lines):08x}'",
      "    lines.append(encode({'type': kind, 'id': entry, 'parentId': parent, 'timestamp': 1, **fields}))",
      "    parent = entry",
      "for i in range(500):",
      "    asked = {'role': 'user', 'content': f'long-e2e question {i}', 'timestamp': 1}",
      "    said = {'role': 'assistant', 'content': [{'type': 'text', 'text': f'long-e2e answer {i}'}], 'stopReason': 'stop', 'timestamp': 1}",
      "    if i == 10:  # a run that wrote a file, on the oldest page: its call, then (as i == 11) its result",
      "        said = {'role': 'assistant', 'content': [{'type': 'toolCall', 'id': 'long-w1', 'name': 'write', 'arguments': {'path': 'long-made.txt', 'content': 'x'}}], 'stopReason': 'toolUse', 'timestamp': 1}",
      "    if i == 11:",
      "        asked = {'role': 'toolResult', 'toolCallId': 'long-w1', 'toolName': 'write', 'content': [{'type': 'text', 'text': 'Wrote long-made.txt'}], 'isError': False, 'timestamp': 1}",
      "        add('fileChanges', runId='run-long-e2e', toolCallId='long-w1', files=[{'path': 'long-made.txt', 'status': 'added', 'before': None, 'after': {'saved': False, 'why': 'written for the test'}}])",
      "    for message in (asked, said):",
      "        add('message', message=message)",
      "(folder / 'long-e2e.jsonl').write_bytes(b''.join(lines))",
    ].join("\n");
    execFileSync(crankCommand()[0], ["-c", write, project, h.sessions], { env: { ...process.env, PYTHONPATH: path.join(__dirname, "..", "..", "..", "..", "..", "server") } });
    await chat.getByRole("button", { name: "History" }).click();
    await chat.locator(".sessions .session", { hasText: "long-e2e question 0" }).click();
    await chat.locator(".msg.assistant", { hasText: "long-e2e answer 499" }).waitFor();
    const earlier = chat.locator("button.earlier");
    // The newest 400 messages (200 items drawn of their 400); the other 600 are on the server.
    assert.equal(await earlier.innerText(), "Show earlier (200 more)");
    await earlier.click();
    // The page draws in the next animation frame: wait for the label rather than read it at once.
    await chat.locator("button.earlier", { hasText: "Show earlier (600 more messages)" }).waitFor();
    assert.equal(await chat.locator(".msg.user", { hasText: "long-e2e question 299" }).count(), 0, "not read yet");
    await earlier.click();
    await chat.locator(".msg.user", { hasText: "long-e2e question 299" }).waitFor();
    assert.equal(await earlier.innerText(), "Show earlier (200 more)", "the page before: 200 of its items drawn");
    await shot(page, "28-long-session-earlier-page");
    // The oldest page holds a run that wrote a file: its list comes with the page, under its card.
    await earlier.click();
    await chat.locator("button.earlier", { hasText: "Show earlier (200 more messages)" }).waitFor();
    await earlier.click();
    await chat.locator(".msg.user", { hasText: "long-e2e question 0" }).waitFor();
    await chat.locator(".card.changes .change-file[data-path=\"long-made.txt\"]").waitFor();
  } catch (err) {
    await dump("long-session", err);
  }
});
