/**
 * The session the chat shows for a workspace, remembered across window reloads
 * (`crank.lastSession.<workspace>` in the workspace's state), and the one rule that
 * keeps a refresh from undoing a newer choice.
 *
 * A refresh reads what it remembers, asks the server for its state, reopens the
 * remembered session when the server is on another one, and remembers what it ended on.
 * Those steps wait on the server; meanwhile the user may click New (or open a session,
 * or the server may say `session_changed`). That choice is newer than anything the
 * refresh read: the refresh must then neither reopen its old session nor write its id
 * back (it used to, and the next refresh put the old session back over the new one).
 * Every choice counts up; a refresh that sees the count moved since it began stops and
 * leaves the showing to the refresh after it.
 *
 * Free of `vscode` (a `Memento` fits `Store`): node --test drives the interleavings.
 */

/** Where the id is kept: VS Code's `workspaceState` in the extension. */
export interface Store {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

/** What a refresh needs from the server. */
export interface SessionServer<S extends { sessionId: string; running: boolean }> {
  state(): Promise<S>;
  openSession(sessionId: string): Promise<unknown>;
}

export class LastSession {
  /** How many choices were made in this window (a refresh compares it with the count it began at). */
  private choices = 0;

  constructor(private readonly store: Store) {}

  private key(workspace: string | undefined): string {
    return `crank.lastSession.${workspace}`;
  }

  /** The user is about to choose a session (New, Open): every refresh under way is stale from now, before the server even answers. */
  choosing(): void {
    this.choices++;
  }

  /** A session was chosen (the server said `session_changed`): remembered, and every refresh under way is stale. */
  chosen(workspace: string | undefined, sessionId: string): Thenable<void> {
    this.choices++;
    return this.store.update(this.key(workspace), sessionId);
  }

  /**
   * A refresh's session: the server's state, on the remembered session when the server
   * was on another one and is not running; the id remembered. `undefined` when a choice
   * came in while it waited: nothing was reopened or written after it, and the caller
   * refreshes again to show the new choice.
   */
  async settle<S extends { sessionId: string; running: boolean }>(workspace: string | undefined, server: SessionServer<S>): Promise<S | undefined> {
    const began = this.choices;
    const stale = () => this.choices !== began;
    const last = this.store.get<string>(this.key(workspace));
    let state = await server.state();
    if (stale()) return undefined;
    if (last && last !== state.sessionId && !state.running) {
      try {
        await server.openSession(last);
        state = await server.state();
      } catch {
        // The session is gone or locked; stay on the server's active one.
      }
      if (stale()) return undefined;
    }
    await this.store.update(this.key(workspace), state.sessionId);
    return state;
  }
}
