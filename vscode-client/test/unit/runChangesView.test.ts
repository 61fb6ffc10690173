/**
 * The chat's Undo, Keep and Redo clicks (RunChangesView) when the server is still
 * starting: a reloaded window's page shows the run lists it saved before the new server
 * is up, and a click there was dropped without a word (a code-server e2e run under load
 * found it: Undo all did nothing). The ServerManager and the client are stand-ins here
 * (the class needs only these few members); the real path, a real `crank serve` behind
 * a real VS Code, is the e2e suite's run-changes test.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import type { ChatAction } from "../../src/chat/state";
import type { ChangedFile } from "../../src/protocol/types";
import type { ChangesReview } from "../../src/review";
import { RunChangesView } from "../../src/runChangesView";
import type { ServerManager } from "../../src/server";

const made: ChangedFile = { path: "made.txt", status: "added", byTool: ["c1"], restorable: true, after: "3".repeat(64) };

function setUp(startsWith: "client" | "none") {
  const calls: string[] = [];
  const client = {
    revert: async (t: { runId: string; paths?: string[] }) => {
      calls.push(`revert ${t.runId} ${t.paths?.join(",")}`);
      return { reverted: t.paths ?? [], conflicts: [], revertId: "revert-1" };
    },
    keep: async (t: { runId: string; paths: string[] }) => {
      calls.push(`keep ${t.runId} ${t.paths.join(",")}`);
      return { kept: t.paths, conflicts: [] };
    },
    changes: async (t: { runId?: string }) => {
      calls.push(`changes ${t.runId}`);
      return { files: [{ ...made, revertedBy: "revert-1" }] };
    },
  };
  let started: typeof client | undefined;
  const server = {
    get client() {
      return started;
    },
    // A start under way: the client comes once it is up (none: the server cannot start).
    ensureStarted: async () => {
      await new Promise((r) => setTimeout(r, 20));
      if (startsWith === "client") started = client;
      return started;
    },
    output: { warn: (m: string) => calls.push(`warn ${m}`) },
  } as unknown as ServerManager;
  const dispatched: ChatAction[] = [];
  const notices: string[] = [];
  const view = new RunChangesView(server, {} as ChangesReview, (a) => dispatched.push(a), (level, text) => notices.push(`${level}: ${text}`));
  return { view, calls, dispatched, notices };
}

test("Undo clicked while the server is still starting waits for it, then reverts and shows the list read after", async () => {
  const { view, calls, dispatched, notices } = setUp("client");
  await view.undo("file:///p", "run-1", ["made.txt"], false);
  assert.deepEqual(calls, ["revert run-1 made.txt", "changes run-1"]);
  assert.equal(dispatched.length, 1);
  const shown = dispatched[0] as Extract<ChatAction, { type: "runChanges" }>;
  assert.equal(shown.files[0].revertedBy, "revert-1");
  assert.deepEqual(notices, []);
});

test("Keep and Redo wait for a starting server too", async () => {
  const { view, calls } = setUp("client");
  await view.keep("file:///p", "run-1", ["made.txt"]);
  await view.redo("file:///p", "run-1", "revert-1", "made.txt");
  assert.deepEqual(calls, ["keep run-1 made.txt", "changes run-1", "revert revert-1 made.txt", "changes run-1"]);
});

test("a click with no server to answer it says so instead of doing nothing", async () => {
  const { view, calls, notices } = setUp("none");
  await view.undo("file:///p", "run-1", ["made.txt"], false);
  await view.keep("file:///p", "run-1", ["made.txt"]);
  assert.deepEqual(calls, []);
  assert.deepEqual(notices, ["error: Undo failed: the Crank server is not running.", "error: Keep failed: the Crank server is not running."]);
});
