/**
 * A real VS Code for the end-to-end suite: code-server (VS Code's own server, in a
 * browser) with the built .vsix installed, driven by playwright-core in the system
 * Chromium, with the real `crank serve` talking to the repo's loopback model server
 * (tests/support/model_server.py) over real HTTP.
 *
 * Everything lives in one temporary folder: HOME (so crank's per-user data, such as
 * "always allow" rules, never touches the real one), code-server's user data and
 * extensions, the session files and the workspaces. test.sh installs code-server once
 * per machine under ~/.cache/crank-test/code-server-<version>/ and passes its path in
 * CRANK_CODE_SERVER.
 *
 * Waiting is always on something observable (a DOM node, a file, a request the model
 * server recorded); the long timeouts are hang guards for a loaded machine, never a
 * statement about speed.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import * as path from "node:path";
import { createServer, type AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { experimentalCapabilities } from "../../src/protocol/client";

export const root = process.cwd(); // vscode-client/
export const repo = path.resolve(root, "..");
export const shots = path.join(root, "build", "screenshots");
/** Hang guard for any single wait, generous for a loaded 2-core machine. */
export const GUARD = 90_000;

export interface Harness {
  tmp: string;
  home: string;
  userData: string;
  sessions: string;
  modelUrl: string;
  port: number;
  browser: Browser;
  page: Page;
  log: () => string;
  stop: () => Promise<void>;
}

const procs: ChildProcess[] = [];

/** Ends every process the suite started (code-server with its whole group, which holds the servers it started). */
function killAll(): void {
  for (const p of procs.splice(0)) {
    try {
      if (p.pid) process.kill(p.spawnargs.includes("--auth") ? -p.pid : p.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
}
// A suite that dies (a crash, a timeout) still takes its servers along.
process.on("exit", killAll);

function entry(): string {
  const dir = process.env.CRANK_CODE_SERVER;
  if (!dir) throw new Error("CRANK_CODE_SERVER is not set: run the suite through vscode-client/test.sh");
  const js = path.join(dir, "node_modules", "code-server", "out", "node", "entry.js");
  if (!existsSync(js)) throw new Error(`code-server is not installed in ${dir}`);
  return js;
}

/** The Python with crank installed: CRANK_PYTHON (test.sh sets it), else the repo's venv. */
function python(): string {
  return process.env.CRANK_PYTHON ?? path.join(repo, ".venv", "bin", "python");
}

/** The crank executable and python the extension should use (the repo's venv). */
export function crankCommand(): string[] {
  return [python(), "-m", "crank", "serve"];
}

/**
 * Starts the loopback model server with a script; resolves to its port. Its stderr goes
 * to `log`. Shared by this suite and the integration tests.
 */
export function startModelServer(scriptFile: string, log: (text: string) => void): Promise<number> {
  const p = spawn(python(), [path.join(repo, "tests", "support", "model_server.py"), "--script", scriptFile], { stdio: ["ignore", "pipe", "pipe"] });
  procs.push(p);
  return new Promise((resolve, reject) => {
    let out = "";
    p.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /PORT (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    p.stderr!.on("data", (d: Buffer) => log(d.toString()));
    p.on("exit", (code) => reject(new Error(`model server exited (${code})`)));
  });
}

/**
 * The real `crank serve` of this checkout in `cwd`, over stdio, for the integration
 * tests (which drive it with the extension's own CrankClient): the connection is not
 * listening yet, so the caller installs its handlers first. Its stderr goes to `log`.
 */
export function startCrankServe(cwd: string, log: (text: string) => void): MessageConnection {
  const server = spawn(python(), ["-m", "crank", "serve"], {
    cwd,
    env: { ...process.env, PYTHONPATH: [path.join(repo, "server"), process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) },
    stdio: ["pipe", "pipe", "pipe"],
  });
  procs.push(server);
  server.stderr!.on("data", (d: Buffer) => log(d.toString()));
  return createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
}

/** Answers the requests the server makes of any client: progress tokens, and `workspace/configuration` (nothing configured there). */
export function answerServerRequests(conn: MessageConnection): void {
  conn.onRequest("window/workDoneProgress/create", () => null);
  conn.onRequest("workspace/configuration", (p: { items: unknown[] }) => p.items.map(() => null));
  conn.onRequest("crank/diagnostics", (p: { uris?: string[] }) => ({ items: (p.uris ?? []).map((uri) => ({ uri, diagnostics: [] })) }));
}

/** Crank's init options for the loopback model server on `port`, sessions under `tmp`, plus `extra`. */
export function loopbackOptions(port: number, tmp: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { provider: { api: "openai", baseUrl: `http://127.0.0.1:${port}/v1`, model: "test", apiKey: "x" }, sessionDir: path.join(tmp, "sessions"), ...extra };
}

/** `initialize` (one workspace folder, Crank's experimental capabilities, these init options) then `initialized`; the initialize result. */
export async function initializeCrank(conn: MessageConnection, folder: string, crank: Record<string, unknown>): Promise<{ capabilities: any; serverInfo?: { name: string } }> {
  const uri = pathToFileURL(folder).toString();
  const init = await conn.sendRequest<{ capabilities: any; serverInfo?: { name: string } }>("initialize", {
    processId: process.pid,
    rootUri: uri,
    workspaceFolders: [{ uri, name: path.basename(folder) }],
    capabilities: { experimental: experimentalCapabilities, window: { workDoneProgress: true } },
    initializationOptions: { crank },
  });
  await conn.sendNotification("initialized", {});
  return init;
}

/** Shuts down a server from startCrankServe (shutdown, exit; a hang guard of 2 s), then ends every process the helpers started. */
export async function stopServers(conn: MessageConnection | undefined): Promise<void> {
  try {
    await Promise.race([conn?.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 2000))]);
    await conn?.sendNotification("exit");
  } catch {
    // the server may already be gone
  }
  conn?.dispose();
  for (const p of procs.splice(0)) p.kill();
}

/** Every request body the model server received so far. */
export async function modelRequests(modelUrl: string): Promise<{ body: { messages: { role: string; content: unknown }[] } }[]> {
  const r = await fetch(`${modelUrl}/_requests`);
  return (await r.json()) as { body: { messages: { role: string; content: unknown }[] } }[];
}

/**
 * Writes the settings as user settings and as the remote machine's settings: the
 * workbench runs as a remote window, where machine-scoped settings (crank.server.*)
 * are read from Machine/settings.json, not from the user's.
 */
export function writeSettings(userData: string, settings: Record<string, unknown>): void {
  for (const scope of ["User", "Machine"]) {
    mkdirSync(path.join(userData, scope), { recursive: true });
    writeFileSync(path.join(userData, scope, "settings.json"), JSON.stringify(settings, null, 2));
  }
}

/** Base settings: a quiet workbench, trust on (the suite answers the prompt), Crank on the loopback model. */
export function baseSettings(h: { sessions: string; modelUrl: string }): Record<string, unknown> {
  return {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "workbench.welcomePage.walkthroughs.openOnInstall": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "security.workspace.trust.enabled": true,
    "security.workspace.trust.startupPrompt": "always",
    "security.workspace.trust.banner": "never",
    "chat.commandCenter.enabled": false,
    "window.commandCenter": false,
    "workbench.colorTheme": "Default Dark Modern",
    "editor.minimap.enabled": false,
    "files.autoSave": "off",
    "editor.lightbulb.enabled": "on",
    "crank.server.command": crankCommand(),
    "crank.provider.api": "openai",
    "crank.provider.baseUrl": `${h.modelUrl}/v1`,
    "crank.provider.model": "loopback",
    "crank.sessionDir": h.sessions,
    "crank.permissionMode": "ask",
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startHarness(script: unknown): Promise<Harness> {
  const js = entry();
  const tmp = mkdtempSync(path.join(tmpdir(), "crank-e2e-"));
  const home = path.join(tmp, "home");
  const userData = path.join(tmp, "user-data");
  const extensions = path.join(tmp, "extensions");
  const sessions = path.join(tmp, "sessions");
  for (const d of [home, userData, extensions, sessions]) mkdirSync(d, { recursive: true });
  const logs: string[] = [];
  const scriptFile = path.join(tmp, "model-script.json");
  writeFileSync(scriptFile, JSON.stringify(script));
  try {
    return await launch(js, tmp, home, userData, extensions, sessions, scriptFile, logs);
  } catch (err) {
    // Nothing may outlive a failed start: a model server left running kept the suite
    // waiting for its whole timeout after an install that failed at once.
    killAll();
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function launch(js: string, tmp: string, home: string, userData: string, extensions: string, sessions: string, scriptFile: string, logs: string[]): Promise<Harness> {
  const modelPort = await startModelServer(scriptFile, (d) => logs.push(`[model] ${d}`));
  const modelUrl = `http://127.0.0.1:${modelPort}`;
  writeSettings(userData, baseSettings({ sessions, modelUrl }));

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_DATA_HOME: path.join(home, ".local", "share"),
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_STATE_HOME: path.join(home, ".local", "state"),
    // No provider from the caller's environment: the settings above are the only source.
    ANTHROPIC_API_KEY: "",
    OPENAI_API_KEY: "",
    CRANK_PROVIDER: "",
    CRANK_MODEL: "",
  };
  for (const k of ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "CRANK_PROVIDER", "CRANK_MODEL", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"]) delete env[k];
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
  const vsix = path.join(root, "build", "crank.vsix");
  const inst = spawnSync(process.execPath, [js, ...common, "--install-extension", vsix], { env, encoding: "utf8", timeout: GUARD });
  if (inst.status !== 0) throw new Error(`--install-extension failed: ${inst.stdout}\n${inst.stderr}`);

  const port = await freePort();
  const cs = spawn(process.execPath, [js, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", ...common], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group: stop() ends it and the servers it started
  });
  procs.push(cs);
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      logs.push(`[code-server] ${d}`);
      if (/HTTP server listening/.test(d.toString())) resolve();
    };
    cs.stdout!.on("data", onData);
    cs.stderr!.on("data", onData);
    cs.on("exit", (code) => reject(new Error(`code-server exited (${code}):\n${logs.join("")}`)));
  });
  await ready;

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    headless: true,
    // Chromium keeps crash reports under the home's .config whatever its profile: the
    // suite's own home, not the user's.
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: path.join(home, ".config"), XDG_CACHE_HOME: path.join(home, ".cache") },
    args: ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(GUARD);
  // A reload asks "leave the page?" while an editor is dirty: leave.
  page.on("dialog", (d) => void d.accept().catch(() => undefined));
  mkdirSync(shots, { recursive: true });

  const stop = async () => {
    await browser.close().catch(() => undefined);
    killAll();
    rmSync(tmp, { recursive: true, force: true });
  };
  return { tmp, home, userData, sessions, modelUrl, port, browser, page, log: () => logs.join("").slice(-6000), stop };
}

// ---- workbench helpers ----------------------------------------------------------------

/** Opens `folder` in the workbench and answers the Workspace Trust prompt. */
export async function openFolder(h: Harness, folder: string, trust: boolean): Promise<void> {
  await h.page.goto(`http://127.0.0.1:${h.port}/?folder=${encodeURIComponent(folder)}`);
  await answerTrust(h.page, trust);
  await h.page.locator(".monaco-workbench .part.statusbar").waitFor();
}

export async function answerTrust(page: Page, trust: boolean): Promise<void> {
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor();
  await dialog.getByRole("button", { name: trust ? /Yes, I trust/ : /No, I don't trust/ }).click();
  await dialog.waitFor({ state: "detached" });
}

/**
 * Runs a command from the command palette by its title, e.g. "Crank: Open Chat". The
 * palette lists the commands known when it opens; early after a (re)load the
 * extensions' commands may not be registered yet, so it is reopened until the title
 * shows up (and F1 is pressed again when the palette did not open at all).
 */
export async function runCommand(page: Page, title: string): Promise<void> {
  const deadline = Date.now() + GUARD;
  const input = page.locator(".quick-input-widget input.input");
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: title }).first();
  for (;;) {
    await page.locator(".monaco-workbench .part.statusbar").click({ position: { x: 700, y: 5 } });
    await page.keyboard.press("F1");
    try {
      // On a loaded machine a webview that was just revealed can take the focus back
      // after the click, and then F1 opens nothing: press it again rather than wait forever.
      await input.waitFor({ state: "visible", timeout: 5000 });
      await input.fill(`>${title}`);
      await row.waitFor({ timeout: 5000 });
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await page.keyboard.press("Escape");
    }
  }
  await row.click();
  await page.locator(".quick-input-widget").waitFor({ state: "hidden" });
}

/** Reloads the window and waits for the new workbench (not the old page on its way out). */
export async function reloadWindow(page: Page): Promise<void> {
  await page.evaluate(() => ((window as unknown as { __crankOld: boolean }).__crankOld = true));
  await page.reload();
  await page.waitForFunction(() => !(window as unknown as { __crankOld?: boolean }).__crankOld);
  await page.locator(".monaco-workbench .part.statusbar").waitFor();
}

/**
 * The chat page's frame (a frame inside the webview's frame): the one that holds the
 * textarea. A frame is returned once: after a reload or a new folder the next call
 * waits for the new page's frame, never the old one on its way out.
 */
export async function chatFrame(page: Page): Promise<Frame> {
  const deadline = Date.now() + GUARD;
  while (Date.now() < deadline) {
    for (const f of page.frames()) {
      try {
        if (!(await f.locator("textarea.input").count())) continue;
        const fresh = await f.evaluate(() => {
          const w = window as unknown as { __crankSeen?: boolean };
          const was = w.__crankSeen;
          w.__crankSeen = true;
          return !was;
        });
        if (fresh) return f;
      } catch {
        // a frame that went away while looking
      }
    }
    await page.waitForTimeout(200);
  }
  throw new Error("no (new) chat frame with a textarea appeared");
}

export async function shot(page: Page, name: string): Promise<string> {
  const file = path.join(shots, `e2e-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** Types a prompt into the chat and sends it with Enter. */
export async function send(frame: Frame, text: string): Promise<void> {
  const input = frame.locator("textarea.input");
  await input.click(); // a real click moves keyboard focus into the webview (fill alone does not)
  await input.fill(text);
  await input.press("Enter");
}

/** Visible notification toasts' messages. */
export function toasts(page: Page) {
  return page.locator(".notifications-toasts .notification-list-item-message");
}

export function readText(file: string): string {
  return readFileSync(file, "utf8");
}

/** The text of the active editor, line by line in order (Monaco reuses line nodes, so sort by position). */
export async function editorText(page: Page): Promise<string> {
  return page.locator(".editor-group-container.active .monaco-editor .view-lines").first().evaluate((el) => {
    const lines = Array.from(el.querySelectorAll<HTMLElement>(".view-line"));
    lines.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
    return lines.map((l) => (l.textContent ?? "").replace(/\u00a0/g, " ")).join("\n");
  });
}

/** Opens a workspace file in the editor with Quick Open. */
export async function openFile(page: Page, name: string): Promise<void> {
  await page.locator(".monaco-workbench .part.statusbar").click({ position: { x: 700, y: 5 } });
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible" });
  await input.fill(name);
  const row = page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first();
  await row.waitFor();
  await row.click();
  await page.locator(".editor-group-container.active .tab.active", { hasText: name }).waitFor();
}

/** Waits until `check` holds, polling; a hang guard fails it after GUARD with what was last seen. */
export async function until<T>(what: string, get: () => Promise<T>, check: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + GUARD;
  let last: T | undefined;
  while (Date.now() < deadline) {
    last = await get();
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 150));
  }
  throw new Error(`${what}: never happened; last seen ${JSON.stringify(last)}`);
}

/**
 * An npm MCP server's executable as `./dev` installs it for the tests (tests/mcp/servers.py
 * finds it the same way): `node_modules/.bin/<name>` under CRANK_MCP_SERVERS, else
 * ~/.cache/crank-test/mcp-servers of the user running the suite (not the suite's own
 * HOME). Undefined when it is not installed.
 */
export function mcpServerBin(name: string): string | undefined {
  const dir = process.env.CRANK_MCP_SERVERS ?? path.join(homedir(), ".cache", "crank-test", "mcp-servers");
  const bin = path.join(dir, "node_modules", ".bin", name);
  return existsSync(bin) ? bin : undefined;
}
