import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { findExecutable, initOptions, redacted, serverCommand, type CrankSettings } from "../../src/protocol/launch";
import { chatPageHtml } from "../../src/chat/html";

const base: CrankSettings = { command: [], python: "", api: "", baseUrl: "", model: "", permissionMode: "ask", sessionDir: "" };

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
  assert.deepEqual(initOptions(base, undefined, false), { trusted: false, permissionMode: "ask" });
  const full = initOptions({ ...base, api: "openai", baseUrl: "http://127.0.0.1:1/v1", model: "m", sessionDir: "/s" }, "sk-secret", true);
  assert.deepEqual(full, { trusted: true, permissionMode: "ask", provider: { api: "openai", baseUrl: "http://127.0.0.1:1/v1", model: "m", apiKey: "sk-secret" }, sessionDir: "/s" });
  const shown = JSON.stringify(redacted(full));
  assert.ok(!shown.includes("sk-secret"));
  assert.equal(full.provider?.apiKey, "sk-secret", "redacted() must not modify the original");
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
