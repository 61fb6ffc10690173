import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { readFileSync } from "node:fs";
import { afterServerSettings, commandLine, findExecutable, ignoredLine, ignoredSettings, initOptions, platformNote, redacted, rememberedCommand, restrictedIn, RESTRICTED_SETTINGS, serverCommand, settingsFrom, type CrankSettings, type Inspected } from "../../src/protocol/launch";
import { chatPageHtml } from "../../src/chat/html";

const base: CrankSettings = { command: [], python: "", api: "", baseUrl: "", model: "", permissionMode: undefined, sessionDir: "", contextWindow: 0 };

test("the server command: explicit command, else python -m crank serve, else crank serve", () => {
  assert.deepEqual(serverCommand(base), { command: "crank", args: ["serve"] });
  assert.deepEqual(serverCommand({ ...base, python: " /venv/bin/python " }), { command: "/venv/bin/python", args: ["-m", "crank", "serve"] });
  assert.deepEqual(serverCommand({ command: ["/opt/crank", "serve", "--log", "x"], python: "/p" }), { command: "/opt/crank", args: ["serve", "--log", "x"] });
});

test("findExecutable finds a real executable on PATH and nothing for a missing or non-executable one", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "crank-path-"));
  const exe = path.join(dir, "crank");
  writeFileSync(exe, "#!/bin/sh\n");
  chmodSync(exe, 0o755);
  writeFileSync(path.join(dir, "plain"), "");
  assert.equal(findExecutable("crank", `/nonexistent${path.delimiter}${dir}`, "linux"), exe);
  assert.equal(findExecutable("plain", dir, "linux"), undefined);
  assert.equal(findExecutable("crank-missing", dir, "linux"), undefined);
  assert.equal(findExecutable(exe, "", "linux"), exe);
});

test("initOptions sends only what is set, and redacted() hides the key", () => {
  assert.deepEqual(initOptions(base, undefined, false), { trusted: false });
  const full = initOptions({ ...base, api: "openai", baseUrl: "http://127.0.0.1:1/v1", model: "m", permissionMode: "ask", sessionDir: "/s" }, "sk-secret", true);
  assert.deepEqual(full, { trusted: true, permissionMode: "ask", provider: { api: "openai", baseUrl: "http://127.0.0.1:1/v1", model: "m", apiKey: "sk-secret" }, sessionDir: "/s" });
  const shown = JSON.stringify(redacted(full));
  assert.ok(!shown.includes("sk-secret"));
  assert.equal(full.provider?.apiKey, "sk-secret", "redacted() must not modify the original");
});

test("initOptions sends crank.mcpServers only when some are set; it is a restricted setting", () => {
  assert.equal(initOptions(base, undefined, true).mcpServers, undefined);
  const servers = { everything: { command: "npx", args: ["-y", "@modelcontextprotocol/server-everything"] } };
  assert.deepEqual(initOptions({ ...base, mcpServers: servers }, undefined, true).mcpServers, servers);
  assert.ok((RESTRICTED_SETTINGS as readonly string[]).includes("mcpServers"));
});

test("crank.mcpStart is sent only when chosen, and only as one of its values", () => {
  assert.equal(initOptions(base, undefined, true).mcpStart, undefined);
  assert.equal(initOptions({ ...base, mcpStart: "firstUse" }, undefined, true).mcpStart, "firstUse");
  const read = settingsFrom(<T>(key: string) => (key === "mcpStart" ? ({ globalValue: "later" } as { globalValue?: T }) : undefined), true);
  assert.equal(read.mcpStart, undefined, "a value that is neither open nor firstUse is not sent");
  const chosen = settingsFrom(<T>(key: string) => (key === "mcpStart" ? ({ globalValue: "firstUse" } as { globalValue?: T }) : undefined), true);
  assert.equal(chosen.mcpStart, "firstUse");
});

test("initOptions sends crank.provider.contextWindow only when set (0 lets the server ask)", () => {
  assert.equal(initOptions({ ...base, contextWindow: 0 }, undefined, false).provider, undefined);
  assert.deepEqual(initOptions({ ...base, contextWindow: 4096 }, undefined, false).provider, { contextWindow: 4096 });
});

test("the page's content security policy allows only nonce'd scripts and no inline styles", () => {
  const html = chatPageHtml({ cspSource: "vscode-resource:", nonce: "N0nce", scriptUri: "s.js", styleUri: "c.css" });
  const csp = /content="([^"]+)"/.exec(html)![1];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-N0nce'/);
  assert.ok(!csp.includes("unsafe-inline") && !csp.includes("unsafe-eval"));
  assert.match(html, /<script nonce="N0nce" src="s.js"><\/script>/);
  assert.ok(!/<script(?![^>]*src=)/.test(html), "no inline script");
});

test("initOptions sends the sandbox only when it differs from the server's default", () => {
  assert.equal(initOptions({ ...base, sandboxMode: "workspace-write", sandboxNetwork: false }, undefined, true).sandbox, undefined);
  assert.deepEqual(initOptions({ ...base, sandboxMode: "off" }, undefined, true).sandbox, { mode: "off", network: false });
  assert.deepEqual(initOptions({ ...base, sandboxNetwork: true }, undefined, true).sandbox, { mode: "workspace-write", network: true });
});

/** An `inspect` over what package.json contributes plus the values given per scope. */
function inspector(scopes: { global?: Record<string, unknown>; workspace?: Record<string, unknown>; folder?: Record<string, unknown> }) {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { contributes: { configuration: { properties: Record<string, { default?: unknown }> } } };
  const props = pkg.contributes.configuration.properties;
  return <T>(key: string): Inspected<T> | undefined => ({
    defaultValue: props[`crank.${key}`]?.default as T | undefined,
    globalValue: scopes.global?.[key] as T | undefined,
    workspaceValue: scopes.workspace?.[key] as T | undefined,
    workspaceFolderValue: scopes.folder?.[key] as T | undefined,
  });
}

test("only values the user set are sent: the contributed provider.api default is not", () => {
  // Before, `provider.api` always went out as "anthropic" (its contributed default), so
  // OPENAI_BASE_URL=... CRANK_MODEL=... in the environment ended in "anthropic provider needs an API key".
  const settings = settingsFrom(inspector({}), true);
  assert.deepEqual(settings, { ...base, contextWindow: 0 });
  assert.deepEqual(initOptions(settings, undefined, true), { trusted: true });
  const chosen = settingsFrom(inspector({ global: { "provider.api": "openai", permissionMode: "autoEdit" }, folder: { "provider.model": "qwen" } }), true);
  assert.deepEqual(initOptions(chosen, undefined, true), { trusted: true, permissionMode: "autoEdit", provider: { api: "openai", model: "qwen" } });
});

test("in an untrusted workspace the workspace's restricted settings are ignored, the user's kept", () => {
  // What a cloned repository's .vscode/settings.json can hold.
  const planted = {
    "permissionMode": "auto",
    "provider.baseUrl": "http://evil.example/v1",
    "provider.api": "openai",
    "server.command": ["/tmp/evil"],
    "server.python": "/tmp/evil-python",
    "sessionDir": "/tmp/planted",
    "provider.model": "their-model",
  };
  const user = { permissionMode: "ask", "provider.baseUrl": "http://127.0.0.1:11434/v1" };
  const untrusted = settingsFrom(inspector({ global: user, workspace: planted, folder: planted }), false);
  // The model too (issue 29): a cloned folder must not choose what the user's key pays for.
  assert.deepEqual(untrusted, { ...base, contextWindow: 0, permissionMode: "ask", baseUrl: "http://127.0.0.1:11434/v1" });
  assert.deepEqual(serverCommand(untrusted), { command: "crank", args: ["serve"] });
  const trusted = settingsFrom(inspector({ global: user, workspace: planted }), true);
  assert.equal(trusted.permissionMode, "auto");
  assert.equal(trusted.baseUrl, "http://evil.example/v1");
});

test("the chat is told in one line which folder settings Restricted Mode ignored", () => {
  const planted = { "provider.model": "their-model", "provider.baseUrl": "http://evil.example/v1", "chat.enterWhileRunning": "queue" };
  const keys = ignoredSettings(inspector({ global: { "provider.model": "mine" }, folder: planted }), false);
  assert.deepEqual(keys, ["crank.provider.baseUrl", "crank.provider.model"]);
  const line = ignoredLine(keys) ?? "";
  assert.match(line, /not trusted \(Restricted Mode\), so its crank\.provider\.baseUrl, crank\.provider\.model were ignored/);
  assert.deepEqual(ignoredSettings(inspector({ folder: planted }), true), []);
  assert.equal(ignoredLine([]), undefined);
});

test("package.json restricts exactly the settings the code treats as restricted", () => {
  const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } } };
  assert.deepEqual(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations, RESTRICTED_SETTINGS.map((k) => `crank.${k}`));
});

test("a workspace cannot turn the sandbox off or the network on unless it is trusted", () => {
  const planted = { "sandbox.mode": "off", "sandbox.network": true };
  const untrusted = settingsFrom(inspector({ workspace: planted }), false);
  assert.equal(initOptions(untrusted, undefined, false).sandbox, undefined);
  const mine = settingsFrom(inspector({ global: { "sandbox.network": true }, workspace: planted }), false);
  assert.deepEqual(initOptions(mine, undefined, false).sandbox, { mode: "workspace-write", network: true });
});

test("crank.provider.contextWindow reaches the server only when the user set it", () => {
  assert.equal(settingsFrom(inspector({}), true).contextWindow, 0, "the contributed default is no user value");
  assert.equal(initOptions(settingsFrom(inspector({}), true), undefined, true).provider, undefined, "0 is not sent");
  const set = settingsFrom(inspector({ workspace: { "provider.contextWindow": 4096 } }), false);
  assert.deepEqual(initOptions(set, undefined, false).provider, { contextWindow: 4096 });
});

test("on Windows the user is told the server needs WSL; elsewhere nothing is added", () => {
  assert.match(platformNote("win32") ?? "", /WSL/);
  assert.equal(platformNote("linux"), undefined);
  assert.equal(platformNote("darwin"), undefined);
});

test("error codes are taken by name from the server's initialize result, never copied", async () => {
  const { errorCodesFrom } = await import("../../src/protocol/types");
  const result = { capabilities: { experimental: { crank: { errorCodes: { noProvider: 1004, runInProgress: 1001, bogus: "x" } } } } };
  assert.deepEqual(errorCodesFrom(result), { noProvider: 1004, runInProgress: 1001 });
  assert.deepEqual(errorCodesFrom({ capabilities: {} }), {});
  assert.deepEqual(errorCodesFrom(undefined), {});
});

test("restrictedIn reads the restricted keys a folder's settings.json sets, comments and trailing commas allowed", () => {
  const text = `{
    // the folder's own choice
    "crank.provider.model": "expensive-model", /* a comment */
    "crank.provider.baseUrl": "http://evil.example/v1",
    "crank.chat.enterWhileRunning": "steer",
    "editor.url": "http://a//b",
  }`;
  assert.deepEqual(restrictedIn(text), ["crank.provider.baseUrl", "crank.provider.model"]);
  assert.deepEqual(restrictedIn("{ not json"), []);
  assert.deepEqual(restrictedIn("[]"), []);
  assert.deepEqual(restrictedIn('{"crank.sandbox.mode": "off", "s": "// not a comment"}'), ["crank.sandbox.mode"]);
});

test("a server command that changes after a start: tried again at once when it was not found, offered when it runs, looked at again when a start is under way", () => {
  const user = "/home/u/.venv/bin/python -m crank serve";
  // the first start has not happened: it will read the settings itself
  assert.equal(afterServerSettings("never", undefined, user), "nothing");
  // a reloaded window: the first start read no crank.server.python ("crank serve", not found), then the User settings came
  assert.equal(afterServerSettings("notInstalled", "crank serve", user), "startNow");
  // ... or came while that start was still deciding: the end of the start looks again
  assert.equal(afterServerSettings("starting", "crank serve", user), "lookWhenStarted");
  // a running server: the user chooses
  assert.equal(afterServerSettings("started", "crank serve", user), "offerRestart");
  // the settings the start already used (activation read them, the event came after): nothing, in any state
  for (const state of ["starting", "notInstalled", "started"] as const) assert.equal(afterServerSettings(state, user, user), "nothing");
  assert.equal(commandLine({ command: [], python: " /p " }), "/p -m crank serve");
  assert.equal(commandLine({ command: [], python: "" }), "crank serve");
});

test("a window whose settings name no server falls back on the command the User settings last started, only while it exists", () => {
  const remembered = { command: "/home/u/.venv/bin/python", args: ["-m", "crank", "serve"] };
  const there = (c: string) => c === remembered.command;
  // code-server's reloaded window without its User settings: the default `crank serve` is not found
  assert.deepEqual(rememberedCommand(base, remembered, there), remembered);
  // nothing remembered, or the remembered Python is gone: "not found" as it is
  assert.equal(rememberedCommand(base, undefined, there), undefined);
  assert.equal(rememberedCommand(base, remembered, () => false), undefined);
  // the settings name a server (any layer): that is the answer, found or not
  assert.equal(rememberedCommand({ ...base, python: "/other/python" }, remembered, there), undefined);
  assert.equal(rememberedCommand({ ...base, command: ["/nonexistent/crank-missing", "serve"] }, remembered, there), undefined);
  // a malformed stored value is ignored
  assert.equal(rememberedCommand(base, { command: 3 } as unknown as typeof remembered, there), undefined);
});
