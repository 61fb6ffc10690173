/**
 * The chat's refresh against a New clicked while it waits (chat/lastSession.ts): the
 * refresh must not reopen or write back the session it read before the choice; the
 * next refresh shows the new one. Driven step by step: the server's answers are held
 * until the test lets them go, so the interleaving is the one seen on a loaded machine.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { LastSession, type SessionServer, type Store } from "../../src/chat/lastSession";

const W = "file:///w";
const KEY = `crank.lastSession.${W}`;

interface State {
  sessionId: string;
  running: boolean;
}

function memory(initial: Record<string, string>): Store & { values: Map<string, unknown> } {
  const values = new Map<string, unknown>(Object.entries(initial));
  return {
    values,
    get: <T>(key: string) => values.get(key) as T | undefined,
    update: async (key: string, value: unknown) => {
      values.set(key, value);
    },
  };
}

/** A server on `active`; `hold()` makes the next state() wait until the returned function is called (answering what it was on when asked). */
function server(active: string) {
  const opened: string[] = [];
  let held: ((go: () => void) => void) | undefined;
  const s = {
    active,
    opened,
    hold(): Promise<() => void> {
      return new Promise((resolve) => {
        held = resolve;
      });
    },
    api: {
      state: async (): Promise<State> => {
        const answer = { sessionId: s.active, running: false };
        if (held) {
          const tell = held;
          held = undefined;
          await new Promise<void>((go) => tell(go));
        }
        return answer;
      },
      openSession: async (id: string) => {
        opened.push(id);
        s.active = id;
      },
    } satisfies SessionServer<State>,
  };
  return s;
}

test("New clicked while the first refresh waits: the refresh writes nothing back and reopens nothing; the next one shows the new session", async () => {
  const store = memory({ [KEY]: "old" });
  const last = new LastSession(store);
  const srv = server("old");
  const holding = srv.hold();
  const first = last.settle(W, srv.api); // the chat just opened: its refresh asks the state
  const release = await holding; // ... and the server's answer ("old") is on its way
  // The user clicks New: the server starts "new" and says session_changed.
  last.choosing();
  srv.active = "new";
  await last.chosen(W, "new");
  release();
  assert.equal(await first, undefined, "the first refresh gives way");
  assert.equal(store.values.get(KEY), "new", "the stale id is not written back");
  const second = await last.settle(W, srv.api);
  assert.equal(second?.sessionId, "new");
  assert.deepEqual(srv.opened, [], "the old session is never reopened over the new one");
  assert.equal(srv.active, "new");
});

test("with no choice meanwhile, a refresh reopens the remembered session (a window reload while the server is on another)", async () => {
  const store = memory({ [KEY]: "mine" });
  const last = new LastSession(store);
  const srv = server("newest");
  const state = await last.settle(W, srv.api);
  assert.equal(state?.sessionId, "mine");
  assert.deepEqual(srv.opened, ["mine"]);
  assert.equal(store.values.get(KEY), "mine");
});

test("a refresh whose own reopening is announced (session_changed) gives way once, and the next pass settles on it", async () => {
  const store = memory({ [KEY]: "mine" });
  const last = new LastSession(store);
  const srv = server("newest");
  const open = srv.api.openSession;
  srv.api.openSession = async (id: string) => {
    await open(id);
    await last.chosen(W, id); // the event arrives before the answer
  };
  assert.equal(await last.settle(W, srv.api), undefined);
  const again = await last.settle(W, srv.api);
  assert.equal(again?.sessionId, "mine");
  assert.deepEqual(srv.opened, ["mine"], "opened once");
});
