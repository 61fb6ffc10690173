/**
 * Keep or Undo what a run changed: `Crank: Review Changes of the Last Run` lists the
 * files the last finished run changed (its edits and what its commands did, from
 * `crank/changes`), each with a diff (the content before the run, served by
 * `crank/fileContent`, against the file now) and buttons to undo that file; an "Undo
 * all" entry takes the whole run back (`crank/revert`). A file changed since the run is
 * never overwritten: the server refuses it and the message names it. Keep is doing
 * nothing: the changes stay.
 */
import * as vscode from "vscode";
import { changeItems, revertSummary, type ChangeItem } from "./protocol/review";
import type { ChangedFile } from "./protocol/types";
import type { ServerManager } from "./server";

export const BEFORE_SCHEME = "crank-before";

export class ChangesReview implements vscode.Disposable {
  /** The last finished run of each workspace (folder URI -> runId). */
  readonly lastRun = new Map<string, string>();
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly server: ServerManager,
    private readonly workspace: () => string | undefined,
  ) {
    this.subscriptions.push(
      server.onEvent((p) => {
        if (p.event.type === "agent_settled" && p.runId) this.lastRun.set(p.workspace, p.runId);
      }),
      vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, {
        provideTextDocumentContent: async (uri) => {
          const client = this.server.client;
          if (!client || !uri.query) return "";
          const { text } = await client.fileContent({ workspace: uri.fragment || undefined, sha256: uri.query });
          return text;
        },
      }),
    );
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }

  private fileUri(folder: string, path: string): vscode.Uri {
    return vscode.Uri.joinPath(vscode.Uri.parse(folder), ...path.split("/"));
  }

  /** The diff of one file: before the run (empty when it was added) against now. */
  async diff(folder: string, file: ChangedFile): Promise<void> {
    const before = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${file.path}`, query: file.before ?? "", fragment: folder });
    const now = file.status === "deleted" ? vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${file.path}`, fragment: folder }) : this.fileUri(folder, file.path);
    await vscode.commands.executeCommand("vscode.diff", before, now, `${file.path} (before the run ↔ now)`);
  }

  /** Undo the run's changes to `paths` (all of them when absent). */
  async undo(folder: string, runId: string, paths?: string[]): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    try {
      const result = await client.revert({ workspace: folder, runId, paths });
      const { text, warn } = revertSummary(result);
      if (warn) void vscode.window.showWarningMessage(text);
      else void vscode.window.showInformationMessage(text);
    } catch (err) {
      void vscode.window.showErrorMessage(`Crank: undo failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** The command: pick a file to see its diff, or undo one file, or all of them. */
  async review(): Promise<void> {
    const client = await this.server.ensureStarted(true);
    const folder = this.workspace();
    if (!client || !folder) return;
    const runId = this.lastRun.get(folder);
    if (!runId) return void vscode.window.showInformationMessage("Crank: no run has finished in this window yet.");
    const { files } = await client.changes({ workspace: folder, runId });
    if (!files.length) return void vscode.window.showInformationMessage(`Crank: run ${runId} changed no files.`);
    const undoButton = { iconPath: new vscode.ThemeIcon("discard"), tooltip: "Undo this file" };
    const undoAll = { label: "$(discard) Undo all", description: `put back the ${files.length} file(s) as before the run`, file: undefined };
    const pick = vscode.window.createQuickPick<ChangeItem | typeof undoAll>();
    pick.title = `Crank: changes of ${runId} (pick one for its diff; Keep is leaving them)`;
    pick.items = [...changeItems(files).map((item) => ({ ...item, buttons: item.file.restorable ? [undoButton] : [] })), undoAll];
    pick.onDidTriggerItemButton(async (e) => {
      pick.hide();
      if (e.item.file) await this.undo(folder, runId, [e.item.file.path]);
    });
    pick.onDidAccept(async () => {
      const chosen = pick.selectedItems[0];
      pick.hide();
      if (!chosen) return;
      if (chosen.file) await this.diff(folder, chosen.file);
      else await this.undo(folder, runId);
    });
    pick.onDidHide(() => pick.dispose());
    pick.show();
  }
}
