import { test } from "node:test";
import assert from "node:assert/strict";
import { acceptCommand, commandQuery, matchCommands } from "../../src/chat/commands";
import type { CommandInfo } from "../../src/protocol/types";

const list: CommandInfo[] = [
  { name: "compact", description: "Summarise the older part of the session", kind: "builtin", argumentHint: "[instructions]" },
  { name: "model", description: "Pick or set the model", kind: "builtin", argumentHint: "[api/id]" },
  { name: "new", description: "Start a new session", kind: "builtin" },
  { name: "skill:review", description: "Review a change", kind: "skill", argumentHint: "[path]" },
  { name: "fix-tests", description: "Fix the failing tests", kind: "template" },
];

test("only a leading /word at the caret is a command being typed; // and later slashes are not", () => {
  assert.equal(commandQuery("/", 1), "");
  assert.equal(commandQuery("/sk", 3), "sk");
  assert.equal(commandQuery("/skill:re", 9), "skill:re");
  assert.equal(commandQuery("/compact now", 12), undefined, "past the name: typing arguments");
  assert.equal(commandQuery("/compact now", 4), "com", "the caret back in the name");
  assert.equal(commandQuery("//text", 2), undefined, "// sends a slash verbatim");
  assert.equal(commandQuery("look at src/a.py", 12), undefined);
  assert.equal(commandQuery(" /new", 5), undefined, "not at the start");
  assert.equal(commandQuery("/new\nmore", 6), undefined);
});

test("matching: prefixes first, then names containing the text, in the server's order", () => {
  assert.deepEqual(matchCommands(list, "").map((c) => c.name), ["compact", "model", "new", "skill:review", "fix-tests"]);
  assert.deepEqual(matchCommands(list, "m").map((c) => c.name), ["model", "compact"]);
  assert.deepEqual(matchCommands(list, "REV").map((c) => c.name), ["skill:review"]);
  assert.deepEqual(matchCommands(list, "fix").map((c) => c.name), ["fix-tests"]);
  assert.deepEqual(matchCommands(list, "zzz"), []);
});

test("accepting replaces the whole leading word and keeps what follows", () => {
  assert.deepEqual(acceptCommand("/rev", "skill:review"), { text: "/skill:review ", caret: 14 });
  assert.deepEqual(acceptCommand("/re src/", "skill:review"), { text: "/skill:review src/", caret: 14 });
  assert.deepEqual(acceptCommand("/compactx", "compact"), { text: "/compact ", caret: 9 });
});
