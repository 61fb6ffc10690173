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
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Frame, Page } from "playwright-core";
import { chatFrame, openFolder, runCommand, shot, send, startHarness, type Harness } from "./harness";

const rules: unknown[] = [];
/** A reply to a prompt that contains `marker`. */
const onPrompt = (marker: string, reply: Record<string, unknown>) => rules.push({ lastUserContains: marker, reply });
/** A reply to the turn after a tool whose output contains `marker`. */
export const afterTool = (marker: string, reply: Record<string, unknown>) => rules.unshift({ lastMessageContains: marker, reply });

const HELLO = "Hello from the **loopback** model.\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nThat is all.";
onPrompt("e2e-hello", { text: HELLO, chunks: 8, delayMs: 150 });

let h: Harness;
let page: Page;
let chat: Frame;
let project = "";

before(async () => {
  h = await startHarness({ rules });
  page = h.page;
  project = path.join(h.tmp, "project");
  mkdirSync(project, { recursive: true });
  writeFileSync(path.join(project, "calc.py"), "def add(a, b):\n    return a - b\n");
  writeFileSync(path.join(project, "AGENTS.md"), "Project rule: PROJECT-MARKER-7f3a.\n");
});

after(async () => {
  await h?.stop();
});

async function dump(name: string, err: unknown): Promise<never> {
  await shot(page, `FAILED-${name}`).catch(() => undefined);
  throw new Error(`${err instanceof Error ? err.stack : String(err)}\n--- logs ---\n${h.log()}`);
}

test("activation: the chat view opens, the server starts, a prompt streams in", async () => {
  try {
    await openFolder(h, project, true);
    await runCommand(page, "Crank: Open Chat");
    chat = await chatFrame(page);
    // The server is running once the banner is gone and Send is enabled.
    await chat.locator(".banner").waitFor({ state: "hidden" });
    await chat.locator("button.send:not([disabled])").waitFor();
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
