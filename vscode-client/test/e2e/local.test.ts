/**
 * The extension against a real local model server (issue 29): the C++ llama-server from
 * ../shared/bin with SmolLM2 at `-c 4096`, started by `python -m tests.support.serve_llama`.
 * Only a base URL is configured (no model, no window): before anything is sent, the
 * chat's meter reads the server's 4,096, and the model the server serves is the one
 * chosen. A code-server of its own (the main suite's settings point at the loopback
 * model). Skipped, saying why, where llama-server cannot run; under CI=true that fails.
 */
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import type { Frame } from "playwright-core";
import { baseSettings, chatFrame, openFolder, shot, startHarness, writeSettings, type Harness } from "./harness";

const GUARD = 600_000;
const REPO = path.resolve(__dirname, "..", "..", "..", "..", "..");

let h: Harness | undefined;
let llama: ChildProcessWithoutNullStreams | undefined;
let served: { url: string; model: string; nCtx: number } | undefined;
let skipped: string | undefined;

/** The first line `serve_llama` prints: the server's address, or why it cannot run. */
async function startLlama(): Promise<void> {
  const python = process.env.CRANK_PYTHON ?? "python3";
  llama = spawn(python, ["-m", "tests.support.serve_llama"], { cwd: REPO, stdio: ["pipe", "pipe", "pipe"] });
  const child = llama;
  let err = "";
  child.stderr.on("data", (d: Buffer) => (err = (err + d.toString()).slice(-4000)));
  const line = await new Promise<string>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`llama-server did not start within ${GUARD / 1000} s: ${err}`)), GUARD);
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf("\n");
      if (nl >= 0) {
        clearTimeout(timer);
        resolve(out.slice(0, nl));
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve_llama exited (${code}) before it said anything: ${err}`));
    });
  });
  const said = JSON.parse(line) as { skip?: string; url?: string; model?: string; nCtx?: number };
  if (said.skip) skipped = said.skip;
  else served = { url: said.url!, model: said.model!, nCtx: said.nCtx! };
}

before(async () => {
  await startLlama();
  if (skipped) {
    if (process.env.CI === "true") throw new Error(`CI=true and the local-server e2e cannot run: ${skipped}`);
    return;
  }
  h = await startHarness({ replies: [] });
  const settings = baseSettings(h);
  delete settings["crank.provider.model"];
  settings["crank.provider.baseUrl"] = served!.url;
  writeSettings(h.userData, settings);
});

after(async () => {
  await h?.stop();
  // serve_llama stops llama-server when its stdin closes (and on SIGTERM, should it not exit).
  const child = llama;
  if (child && child.exitCode === null) {
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGTERM"), 30_000);
    await exited;
    clearTimeout(timer);
  }
});

test("llama-server from a base URL alone: the meter reads its 4,096 before the first prompt", async (t) => {
  if (skipped) return t.skip(skipped);
  const harness = h!;
  const project = path.join(harness.tmp, "project");
  mkdirSync(project, { recursive: true });
  writeFileSync(path.join(project, "calc.py"), "def add(a, b):\n    return a - b\n");
  try {
    await openFolder(harness, project, true);
    await harness.page.locator(".statusbar-item", { hasText: "Crank" }).first().click();
    const chat: Frame = await chatFrame(harness.page);
    await chat.locator(".banner").waitFor({ state: "hidden" });
    const meter = chat.locator(".meter-text");
    await meter.filter({ hasText: "/ 4.1k" }).waitFor();
    assert.match((await chat.locator(".meter").getAttribute("title")) ?? "", /of 4096 tokens/);
    assert.equal(await chat.locator(".msg.user").count(), 0, "nothing was sent");
    // The one served model was chosen; llama-server names it by its file, shown by its name
    // (the chat may have read the state before the server chose it: it reads it again then).
    const name = path.basename(served!.model);
    await chat.waitForFunction((n) => document.querySelector<HTMLSelectElement>("select.model")?.selectedOptions[0]?.textContent?.trim() === n, name);
    const chosen = chat.locator("select.model option:checked");
    assert.equal((await chosen.textContent())?.trim(), path.basename(served!.model));
    assert.equal(await chosen.getAttribute("title"), `openai/${served!.model}`);
    assert.equal(served!.nCtx, 4096);
    await shot(harness.page, "local-01-meter-4096");
  } catch (err) {
    await shot(harness.page, "FAILED-local").catch(() => undefined);
    throw new Error(`${err instanceof Error ? err.stack : String(err)}\n--- logs ---\n${harness.log()}`);
  }
});
