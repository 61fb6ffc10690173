import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { calmCleanExits } from "../../src/protocol/exits";

/* The package manifest, as VS Code reads it (the tests run from build/test/test/unit). */
const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "..", "..", "package.json"), "utf8")) as {
  contributes: { configuration: { properties: Record<string, { scope?: string }> } | { properties: Record<string, { scope?: string }> }[] };
  capabilities: { untrustedWorkspaces: { restrictedConfigurations: string[] } };
};

function properties(): Record<string, { scope?: string }> {
  const c = manifest.contributes.configuration;
  return Array.isArray(c) ? Object.assign({}, ...c.map((x) => x.properties)) : c.properties;
}

test("crank.server.python and .command count from User settings in a remote (code-server), and a workspace cannot set them untrusted", () => {
  // "machine" settings are read only from the remote's own settings: one set in User
  // settings was ignored in code-server. machine-overridable (as the Python extension's
  // python.defaultInterpreterPath) takes the User value; Restricted Mode drops a folder's.
  for (const key of ["crank.server.python", "crank.server.command"]) {
    assert.equal(properties()[key]?.scope, "machine-overridable", key);
    assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes(key), `${key} is restricted`);
  }
});

test("a clean server exit (a restart) is logged as info, not as an error; other exits stay errors", () => {
  const lines: string[] = [];
  const channel = { appendLine: (l: string) => void lines.push(`line ${l}`), info: (l: string) => void lines.push(`info ${l}`) };
  const calm = calmCleanExits(channel);
  calm.appendLine("[Error - 9:15:02 PM] Server process exited with code 0.");
  calm.appendLine("[Error - 9:15:03 PM] Server process exited with code 1.");
  calm.appendLine("[Error - 9:15:04 PM] Server process exited with signal SIGKILL.");
  assert.deepEqual(lines, [
    "info The server process exited (code 0).",
    "line [Error - 9:15:03 PM] Server process exited with code 1.",
    "line [Error - 9:15:04 PM] Server process exited with signal SIGKILL.",
  ]);
});
