/**
 * The chat's side of the files each run changed (the list under each finished run): it
 * reads `crank/changes` when a run settles and after the transcript is read again (a
 * window reload), answers the page's "diff" and "Undo" clicks, and reads the run again
 * after every Undo, Keep and Redo so the list shows what the server now records. The
 * diff is the quick pick's (`ChangesReview.diff`, through `crank/fileContent`); Undo is
 * `crank/revert`, and a file changed since the run comes back as a conflict the page
 * shows with Force; Keep is `crank/keep` (recorded in the session: the row stays gone
 * after a reload and in another editor); Redo is `crank/revert` of the revert that put
 * the file back (`revertedBy`), for that file. A click is never dropped: it waits for a
 * server still starting (a reloaded window's page shows its lists before the server is
 * up), and says so when there is none.
 */
import type { ChatAction } from "./chat/state";
import type { ChangedFile } from "./protocol/types";
import type { ChangesReview } from "./review";
import type { CrankClient } from "./protocol/client";
import type { ServerManager } from "./server";

type Notice = (level: "info" | "warning" | "error", text: string) => void;

export class RunChangesView {
  /** The last list read of each run (folder URI + run id), for the diff of a file. */
  private readonly files = new Map<string, ChangedFile[]>();

  constructor(
    private readonly server: ServerManager,
    private readonly review: ChangesReview,
    private readonly dispatch: (action: ChatAction) => void,
    private readonly notice: Notice,
  ) {}

  /** A run of `workspace` settled: its list goes under it (none when it changed nothing). */
  async settled(workspace: string, runId: string): Promise<void> {
    const files = await this.read(workspace, runId);
    if (files) this.dispatch({ type: "runChanges", runId, files, settled: true });
  }

  /** The transcript was read again: every run's list of the session, in its place. */
  async reloaded(workspace: string | undefined): Promise<void> {
    const client = this.server.client;
    if (!client || !workspace) return;
    try {
      const { runs } = await client.changes({ workspace });
      if (!Array.isArray(runs)) return; // an older server: no lists after a reload
      for (const run of runs) this.files.set(`${workspace} ${run.runId}`, run.files);
      this.dispatch({ type: "allRunChanges", runs });
    } catch (err) {
      this.server.output.warn(`crank/changes failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  /** The diff of one file of the run: before the run against now. */
  async diff(workspace: string | undefined, runId: string, path: string): Promise<void> {
    if (!(await this.clientFor("The diff", workspace)) || !workspace) return;
    const known = this.files.get(`${workspace} ${runId}`) ?? (await this.read(workspace, runId));
    const file = known?.find((f) => f.path === path);
    if (!file) return this.notice("warning", `${path} is not among the files run ${runId} changed.`);
    await this.review.diff(workspace, file);
  }

  /** Undo the run's changes to `paths`; the list is read again, with what could not be put back. */
  async undo(workspace: string | undefined, runId: string, paths: string[], force: boolean): Promise<void> {
    const client = await this.clientFor("Undo", workspace);
    if (!client || !workspace) return;
    let conflicts;
    try {
      ({ conflicts } = await client.revert({ workspace, runId, paths, ...(force ? { force: true } : {}) }));
    } catch (err) {
      return this.notice("error", `Undo failed: ${(err as Error)?.message ?? String(err)}`);
    }
    const files = await this.read(workspace, runId);
    if (files) this.dispatch({ type: "runChanges", runId, files, conflicts });
  }

  /** Keep the run's changes to `paths`: they leave its list; what could not be kept is said. */
  async keep(workspace: string | undefined, runId: string, paths: string[]): Promise<void> {
    const client = await this.clientFor("Keep", workspace);
    if (!client || !workspace) return;
    let conflicts;
    try {
      ({ conflicts } = await client.keep({ workspace, runId, paths }));
    } catch (err) {
      return this.notice("error", `Keep failed: ${(err as Error)?.message ?? String(err)}`);
    }
    if (conflicts.length) this.notice("warning", `Not kept: ${conflicts.map((c) => `${c.path}: ${c.reason}`).join("; ")}`);
    const files = await this.read(workspace, runId);
    if (files) this.dispatch({ type: "runChanges", runId, files });
  }

  /** Redo one file's change a revert put back: that revert is reverted for that file; the run's list is read again. */
  async redo(workspace: string | undefined, runId: string, revertId: string, path: string): Promise<void> {
    const client = await this.clientFor("Redo", workspace);
    if (!client || !workspace) return;
    let conflicts;
    try {
      ({ conflicts } = await client.revert({ workspace, runId: revertId, paths: [path] }));
    } catch (err) {
      return this.notice("error", `Redo failed: ${(err as Error)?.message ?? String(err)}`);
    }
    if (conflicts.length) this.notice("warning", `Not redone: ${conflicts.map((c) => `${c.path}: ${c.reason}`).join("; ")}`);
    const files = await this.read(workspace, runId);
    if (files) this.dispatch({ type: "runChanges", runId, files });
  }

  /** The running client for a click (waiting for a start under way); undefined, said, when there is none or no folder. */
  private async clientFor(what: string, workspace: string | undefined): Promise<CrankClient | undefined> {
    const client = await this.server.ensureStarted(true);
    if (!client) this.notice("error", `${what} failed: the Crank server is not running.`);
    else if (!workspace) this.notice("error", `${what} failed: no workspace folder is open.`);
    return workspace ? client : undefined;
  }

  private async read(workspace: string, runId: string): Promise<ChangedFile[] | undefined> {
    const client = this.server.client;
    if (!client) return undefined;
    try {
      const { files } = await client.changes({ workspace, runId });
      this.files.set(`${workspace} ${runId}`, files);
      return files;
    } catch (err) {
      this.server.output.warn(`crank/changes for ${runId} failed: ${(err as Error)?.message ?? String(err)}`);
      return undefined;
    }
  }
}
