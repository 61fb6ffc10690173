/**
 * The sidebar chat: a WebviewViewProvider that forwards protocol events to the page and
 * turns the page's messages into protocol requests. The chat state itself lives in the
 * page (the pure reducer); this side keeps only what VS Code must act on: the workspace
 * the chat is on, pending permission requests, the edits (for diff and undo), and the
 * context chips for the next prompt.
 */
import * as vscode from "vscode";
import { parseViewMessage, type HostMessage, type ViewMessage } from "./chat/protocol";
import { TRANSCRIPT_PAGE, type ChatAction } from "./chat/state";
import { chatPageHtml, makeNonce } from "./chat/html";
import { editOf, openDiffSides, planUndo, previousFileOf, proposedSides, type EditInfo } from "./chat/edits";
import { IMAGE_MIME_TYPES, type ContextItem, type EventParams, type Message, type ModelInfo, type PermissionRequest, type PermissionResponse, type PromptImage, type PromptResult, type Queue, type StateResult, type ToolInfoJson } from "./protocol/types";
import { imageOfBytes } from "./chat/images";
import type { ServerManager } from "./server";
import { ErrorCodes } from "vscode-languageclient/node";
import { INSTALL_HELP, ignoredLine, ignoredSettings, restrictedIn } from "./protocol/launch";
import { branchesOf, forkPointFor } from "./chat/branches";
import { runMcpAction, type McpAction } from "./chat/mcp";
import { toLsp } from "./protocol/diagnostics";
import type { ChangesReview } from "./review";
import { RunChangesView } from "./runChangesView";
import { LastSession } from "./chat/lastSession";

interface TrackedEdit {
  edit: EditInfo;
  workspace: string;
  previousFile?: string;
  /** Whole files from the permission preview, until the change is applied. */
  proposed?: { before: string; after: string };
}

const DIFF_SCHEME = "crank-diff";
/** workspaceState keys of the chat's unsent text and of the images attached to it (apart: typing rewrites only the text). */
const DRAFT_TEXT_KEY = "crank.chat.draftText";
const DRAFT_IMAGES_KEY = "crank.chat.draftImages";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.TextDocumentContentProvider {
  static readonly viewId = "crank.chat";
  private view: vscode.WebviewView | undefined;
  private pinnedWorkspace: vscode.WorkspaceFolder | undefined;
  private lastFolder: vscode.WorkspaceFolder | undefined;
  private readonly pending = new Map<string, { request: PermissionRequest; resolve: (r: PermissionResponse) => void }>();
  /** Pending ids already asked as a notification (so closing the view does not ask twice). */
  private readonly notified = new Set<string>();
  private readonly edits = new Map<string, TrackedEdit>();
  private readonly diffDocs = new Map<string, string>();
  private context: { label: string; item: ContextItem }[] = [];
  /** What each tool says about itself, from the last `crank/state` (for `editOf`). */
  private tools: ToolInfoJson[] | undefined;
  private readonly waitingChanged = new vscode.EventEmitter<void>();
  /** Fires when a permission question opens or closes (the status bar says "waiting for approval"). */
  readonly onWaitingChanged = this.waitingChanged.event;
  private nextPermissionId = 1;
  /** Whether the chat was told which folder settings Restricted Mode ignored (once per window). */
  /** Permission ids are unique across reloads, so a card restored from an old page state never answers a new question. */
  private readonly permissionPrefix = `perm-${Date.now().toString(36)}`;

  /** The files each run changed, listed under it (runChangesView.ts). */
  private readonly runChanges: RunChangesView;
  /** The session the chat shows, remembered across reloads; a refresh never writes back one older than the user's choice (chat/lastSession.ts). */
  private readonly lastSession: LastSession;

  constructor(private readonly ext: vscode.ExtensionContext, private readonly server: ServerManager, review: ChangesReview) {
    this.runChanges = new RunChangesView(server, review, (a) => this.dispatch(a), (level, text) => this.notice(level, text));
    this.lastSession = new LastSession(ext.workspaceState);
    server.permissionHandler = (p, cancelled) => this.askPermission(p, cancelled);
    server.beforeServerCommand = () => void this.reveal();
    ext.subscriptions.push(
      server.onEvent((p) => this.onEvent(p)),
      server.onCommandsChanged((p) => {
        if (p.workspace === this.workspace()) void this.postCommands();
      }),
      server.onStatus((s) => {
        this.dispatch({ type: "server", status: s.status === "idle" ? "starting" : s.status, message: s.message });
        if (s.status === "running") void this.refresh();
        if (s.status === "down" || s.status === "notInstalled") this.rejectAllPending("the server stopped");
      }),
      vscode.window.onDidChangeActiveTextEditor((ed) => {
        const f = ed && vscode.workspace.getWorkspaceFolder(ed.document.uri);
        if (f && !this.pinnedWorkspace && f.uri.toString() !== this.lastFolder?.uri.toString()) {
          this.lastFolder = f;
          void this.refresh();
        }
      }),
      vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, this),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration("crank.chat")) void this.refresh();
      }),
    );
  }

  // ---- the workspace the chat is on --------------------------------------------------

  /** The pinned folder, else the active editor's, else the last used, else the first. */
  folder(): vscode.WorkspaceFolder | undefined {
    if (this.pinnedWorkspace) return this.pinnedWorkspace;
    const ed = vscode.window.activeTextEditor;
    const f = ed && vscode.workspace.getWorkspaceFolder(ed.document.uri);
    if (f) this.lastFolder = f;
    return this.lastFolder ?? vscode.workspace.workspaceFolders?.[0];
  }
  private workspace(): string | undefined {
    return this.folder()?.uri.toString();
  }

  async pickWorkspace(): Promise<void> {
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (folders.length < 2) return;
    const pick = await vscode.window.showQuickPick(
      [
        { label: "$(file) Follow the active editor", folder: undefined as vscode.WorkspaceFolder | undefined },
        ...folders.map((f) => ({ label: f.name, description: f.uri.fsPath, folder: f as vscode.WorkspaceFolder | undefined })),
      ],
      { title: "Crank: which workspace folder should the chat work on?" },
    );
    if (!pick) return;
    this.pinnedWorkspace = pick.folder;
    await this.refresh();
  }

  // ---- webview plumbing --------------------------------------------------------------

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const dist = vscode.Uri.joinPath(this.ext.extensionUri, "dist", "webview");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = chatPageHtml({
      cspSource: view.webview.cspSource,
      nonce: makeNonce(),
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "chat.js")).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "chat.css")).toString(),
    });
    view.webview.onDidReceiveMessage((raw: unknown) => {
      const m = parseViewMessage(raw);
      if (!m) {
        this.server.output.warn(`Ignored a malformed message from the chat view: ${JSON.stringify(raw)?.slice(0, 200)}`);
        return;
      }
      this.onMessage(m).catch((err) => this.showError(err));
    });
    view.onDidDispose(() => {
      this.view = undefined;
      // The cards went with the page: ask the open questions as notifications instead, so the run does not wait on nothing.
      for (const [id, p] of this.pending) void this.notifyPermission(id, p.request);
    });
  }

  async reveal(): Promise<void> {
    await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
  }

  private post(m: HostMessage): void {
    void this.view?.webview.postMessage(m);
  }
  private dispatch(action: ChatAction): void {
    if (action.type === "state" && action.state.tools) this.tools = action.state.tools;
    this.post({ type: "action", action });
  }
  private notice(level: "info" | "warning" | "error", text: string): void {
    this.dispatch({ type: "notice", level, text });
  }

  private showError(err: unknown): void {
    const e = err as { code?: number; message?: string };
    let text = e?.message ?? String(err);
    // Only when nothing names what is missing already (a base URL set, a model name missing).
    if (e?.code !== undefined && e.code === this.server.errorCodes.noProvider && !/needs a model name|serves \d+ models/.test(text)) text += " Use “Crank: Set API Key” or set crank.provider.baseUrl.";
    this.notice("error", text);
  }

  /**
   * The restricted settings the untrusted workspace asked for: what `inspect` shows,
   * and what each folder's `.vscode/settings.json` sets (VS Code hides those values
   * from extensions in Restricted Mode, so only the file tells).
   */
  private async ignoredSettings(): Promise<string[]> {
    const trusted = vscode.workspace.isTrusted;
    const keys = new Set(ignoredSettings((key) => vscode.workspace.getConfiguration("crank").inspect(key), trusted));
    if (!trusted) {
      for (const f of vscode.workspace.workspaceFolders ?? []) {
        try {
          const bytes = await vscode.workspace.fs.readFile(vscode.Uri.joinPath(f.uri, ".vscode", "settings.json"));
          for (const key of restrictedIn(new TextDecoder().decode(bytes))) keys.add(key);
        } catch {
          // no settings file there
        }
      }
    }
    return [...keys];
  }

  /**
   * Re-read everything about the current workspace: used on ready, restart, folder change
   * and after a gap. One at a time: a refresh asked for while one runs is done once more
   * after it (the server coming up and the view opening ask together; two interleaved
   * reads could pass on a state older than the transcript after it).
   */
  refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    const run = async () => {
      try {
        do {
          this.refreshAgain = false;
          await this.refreshOnce();
        } while (this.refreshAgain);
      } finally {
        this.refreshing = undefined;
      }
    };
    this.refreshing = run();
    return this.refreshing;
  }
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  private async refreshOnce(): Promise<void> {
    if (!this.view) return; // nothing shows it; and a closed view must not start the server
    const folders = vscode.workspace.workspaceFolders ?? [];
    this.post({ type: "workspace", name: this.folder()?.name, folders: folders.length });
    this.post({ type: "context", items: this.context });
    this.post({ type: "prefs", enterWhileRunning: vscode.workspace.getConfiguration("crank").get("chat.enterWhileRunning", "steer") });
    const st = this.server.currentStatus;
    this.dispatch({ type: "server", status: st.status === "idle" ? "starting" : st.status, message: st.message });
    // The open view is what needs the server: start it now if this is the first need.
    const client = st.status === "idle" ? await this.server.ensureStarted() : this.server.client;
    const workspace = this.workspace();
    if (!client) return;
    const ignored = ignoredLine(await this.ignoredSettings());
    try {
      const state = await this.lastSession.settle(workspace, {
        state: () => client.state({ workspace }),
        openSession: (sessionId) => client.openSession({ workspace, sessionId }),
      });
      if (!state) {
        // The user chose a session meanwhile (New, Open, or the server said so): the next pass shows it.
        this.refreshAgain = true;
        return;
      }
      const { messages, start } = await client.messages({ workspace, sessionId: state.sessionId, limit: TRANSCRIPT_PAGE });
      this.applyState(state, workspace);
      this.dispatch({ type: "transcript", messages, sessionId: state.sessionId, workspace, start });
      // After the transcript, which replaces what the chat shows.
      // Every read: a later transcript (another refresh) replaces what the chat shows.
      if (ignored) this.dispatch({ type: "notice", level: "warning", text: ignored, once: true });
      await this.runChanges.reloaded(workspace);
      await this.postBranches(state.branched);
      await this.postCommands();
      const { models } = await client.models({ workspace });
      this.dispatch({ type: "models", models });
    } catch (err) {
      this.showError(err);
    }
  }

  /**
   * The commands `/` completes in the input (crank/commands). A server without the
   * request (an older one) answers MethodNotFound: the list is empty then, and the
   * input works as before.
   */
  private async postCommands(): Promise<void> {
    const client = this.server.client;
    if (!client || !this.view) return;
    try {
      const { commands } = await client.commands({ workspace: this.workspace() });
      this.post({ type: "commands", commands: Array.isArray(commands) ? commands : [] });
    } catch (err) {
      this.post({ type: "commands", commands: [] });
      if ((err as { code?: number })?.code !== ErrorCodes.MethodNotFound) this.server.output.warn(`crank/commands failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }

  /**
   * A built-in command typed as `/name` ran on the server instead of a run: do what the
   * button or command for it does. `/new`: show the new session (as New does); `/compact`:
   * say what was compacted; `/model` without arguments: the model picker; with one, the
   * new model in the toolbar.
   */
  private async commandAnswered(res: PromptResult): Promise<void> {
    const result = (res.result ?? {}) as Record<string, unknown>;
    switch (res.command) {
      case "new":
        return this.refresh();
      case "compact":
        if (result.compacted) this.notice("info", `Compacted: ${String(result.tokensBefore ?? "?")} → ${String(result.tokensAfter ?? "?")} tokens.`);
        else this.notice("info", `Not compacted: ${String(result.reason ?? "nothing to compact")}.`);
        return;
      case "model":
        if (Array.isArray(result.models)) {
          this.dispatch({ type: "models", models: result.models as ModelInfo[] });
          await vscode.commands.executeCommand("crank.selectModel", result.models); // the list the server just gave, not asked again
          return;
        }
        return this.refresh();
      default:
        this.notice("info", `/${res.command} done.`);
        return this.refresh();
    }
  }

  /** How many branches the page was last sent (it lists them from two on). */
  private branchesListed = 0;

  /** The session's branches, for the page's branch list; `branched` false (the server's crank/state): one branch, listed by nobody, and no tree read. */
  private async postBranches(branched?: boolean): Promise<void> {
    const client = this.server.client;
    if (!client || !this.view) return;
    const branches = branched === false ? [] : branchesOf(await client.tree({ workspace: this.workspace() }));
    this.branchesListed = branches.length;
    this.post({ type: "branches", branches });
  }

  /**
   * After a run: a run adds no branch (only crank/branch does, and the chat refreshes
   * then), so the list changes only in the current branch's length, which the page
   * shows only when there are two or more. An unbranched session is not read again:
   * crank/tree answers every entry, 8 MB for 50,000 messages, after every run. (Nor at a
   * refresh, once the state says `branched: false`.)
   */
  private async branchesAfterRun(): Promise<void> {
    if (this.branchesListed >= 2) await this.postBranches();
  }

  /**
   * Edit and resend: go back to just before that user message (a new branch; the old
   * one stays in the session and in the branch list), show the transcript from there,
   * and put the message's text back in the input box to edit. The first message of a
   * session has nothing before it: a new session is started instead.
   */
  private async editResend(fromEnd: number, text: string): Promise<void> {
    const client = await this.server.ensureStarted(true);
    if (!client) return this.notice("error", "Edit and resend failed: the Crank server is not running.");
    const workspace = this.workspace();
    const fork = forkPointFor(await client.tree({ workspace }), fromEnd, text);
    if (!fork) return this.notice("error", "That message is not on the session's current branch any more; nothing was changed.");
    if (fork.entryId === null) {
      this.lastSession.choosing();
      await client.newSession({ workspace });
    }
    else await client.branch({ workspace, entryId: fork.entryId });
    await this.refresh();
    this.post({ type: "restoreInput", text });
  }

  // ---- events from the server --------------------------------------------------------

  private onEvent(p: EventParams): void {
    const ev = p.event;
    if (ev.type === "tool_execution_start") {
      const edit = editOf(ev.toolName, ev.arguments ?? {}, this.tools);
      if (edit) this.edits.set(ev.toolCallId, { ...this.edits.get(ev.toolCallId), edit, workspace: p.workspace });
    }
    if (ev.type === "tool_execution_end" && !ev.result.isError) {
      // applied: from now on the diff is read from the file, which has the change
      const t = this.edits.get(ev.toolCallId);
      if (t?.proposed) this.edits.set(ev.toolCallId, { ...t, proposed: undefined });
    }
    if (ev.type === "agent_settled") {
      // A settled run asks nothing more: its questions still open here are stale.
      for (const [id, q] of this.pending) {
        if (q.request.workspace === p.workspace && (!p.runId || q.request.runId === p.runId)) this.withdrawPermission(id, "the run ended before an answer");
      }
    }
    if (ev.type === "agent_settled" && p.workspace === this.workspace()) void this.branchesAfterRun().catch(() => undefined);
    if (ev.type === "agent_settled" && p.runId && p.workspace === this.workspace()) void this.runChanges.settled(p.workspace, p.runId);
    if (ev.type === "session_changed" && p.workspace === this.workspace()) {
      void this.lastSession.chosen(p.workspace, ev.sessionId);
      void this.refresh();
    }
    if (ev.type === "notice" && ev.kind === "model_discovered" && p.workspace === this.workspace()) {
      // The server chose the model it serves: the toolbar shows the state read before
      // that (no model yet) until the state is read again.
      void this.readState(p.workspace).catch(() => undefined);
    }
    if (p.workspace !== this.workspace()) return;
    this.dispatch({ type: "event", params: p });
  }

  // ---- permission requests -----------------------------------------------------------

  private askPermission(request: PermissionRequest, cancelled: (listener: () => void) => void): Promise<PermissionResponse> {
    const id = `${this.permissionPrefix}-${this.nextPermissionId++}`;
    if (request.preview?.kind === "diff") {
      // Remember the file's previous text: it is what "Undo this edit" restores after a write.
      const edit = editOf(request.toolName, request.arguments, this.tools) ?? {
        path: request.preview.path,
        mode: "write" as const,
        oldText: request.preview.oldText,
        newText: request.preview.newText,
      };
      this.edits.set(request.toolCallId, {
        edit,
        workspace: request.workspace,
        previousFile: edit.mode === "write" ? previousFileOf(request.preview) : undefined,
        proposed: proposedSides(request.preview),
      });
    }
    return new Promise((resolve) => {
      this.pending.set(id, { request, resolve });
      this.waitingChanged.fire();
      this.dispatch({ type: "permissionRequest", id, request });
      if (!this.view?.visible || request.workspace !== this.workspace()) void this.notifyPermission(id, request);
      cancelled(() => this.withdrawPermission(id, "the run was stopped"));
    });
  }

  private readonly stateRead = new vscode.EventEmitter<{ workspace: string; state: StateResult }>();
  /** Fires with every crank/state the chat reads (the status bar takes its usage from it too, so both agree after a model switch). */
  readonly onStateRead = this.stateRead.event;

  private async readState(workspace: string): Promise<void> {
    const client = this.server.client;
    if (client) this.applyState(await client.state({ workspace }), workspace);
  }

  private applyState(state: StateResult, workspace: string | undefined): void {
    this.dispatch({ type: "state", state, workspace });
    if (workspace) this.stateRead.fire({ workspace, state });
  }

  /** Workspaces (folder URIs) with a question waiting for the user. */
  waitingWorkspaces(): Set<string> {
    return new Set(Array.from(this.pending.values(), (p) => p.request.workspace));
  }

  private async notifyPermission(id: string, r: PermissionRequest): Promise<void> {
    if (this.notified.has(id)) return;
    this.notified.add(id);
    const what = r.preview?.kind === "command" ? r.preview.command : r.preview?.kind === "diff" ? r.preview.path : r.toolName;
    const pick = await vscode.window.showWarningMessage(`Crank wants to run ${r.toolName}: ${what}`, "Allow", "Allow for Session", "Always Allow", "Reject", "Show");
    const map: Record<string, PermissionResponse["decision"]> = { Allow: "allow", "Allow for Session": "allowSession", "Always Allow": "allowAlways", Reject: "reject" };
    if (pick === "Show") await this.reveal();
    else if (pick && map[pick]) this.resolvePermission(id, { decision: map[pick] });
  }

  private resolvePermission(id: string, response: PermissionResponse): void {
    const p = this.pending.get(id);
    if (!p) return; // already answered elsewhere (card or notification)
    this.pending.delete(id);
    this.notified.delete(id);
    this.waitingChanged.fire();
    p.resolve(response);
    this.dispatch({ type: "permissionResolved", id, decision: response.decision, reason: response.reason });
  }

  /** The question is void (the server withdrew it, or its run settled): answer reject and close the card as not answered. */
  private withdrawPermission(id: string, reason: string): void {
    const p = this.pending.get(id);
    if (!p) return;
    this.pending.delete(id);
    this.notified.delete(id);
    this.waitingChanged.fire();
    p.resolve({ decision: "reject", reason });
    this.dispatch({ type: "permissionResolved", id, decision: "reject", reason, withdrawn: true });
  }

  /** Tell a (re)loaded page which questions are open: it closes any other card and shows these. */
  private syncPermissions(): void {
    this.dispatch({ type: "permissionsOpen", ids: Array.from(this.pending.keys()) });
    for (const [id, p] of this.pending) this.dispatch({ type: "permissionRequest", id, request: p.request });
  }

  private rejectAllPending(reason: string): void {
    for (const id of Array.from(this.pending.keys())) this.resolvePermission(id, { decision: "reject", reason });
  }

  // ---- messages from the page --------------------------------------------------------

  private async onMessage(m: ViewMessage): Promise<void> {
    const workspace = this.workspace();
    switch (m.type) {
      case "ready":
        this.syncPermissions();
        this.restoreDraft();
        return this.refresh();
      case "draft":
        await this.ext.workspaceState.update(DRAFT_TEXT_KEY, m.text || undefined);
        if (m.images) await this.ext.workspaceState.update(DRAFT_IMAGES_KEY, m.images.length ? m.images : undefined);
        this.post({ type: "draftSaved" });
        return;
      case "resync":
        return this.refresh();
      case "restartServer":
        return this.server.restart();
      case "showLog":
        return this.server.output.show(true);
      case "installHelp":
        return showInstallHelp();
      case "copy":
        await vscode.env.clipboard.writeText(m.text);
        void vscode.window.setStatusBarMessage("Copied", 1500);
        return;
      case "permission":
        return this.resolvePermission(m.id, { decision: m.decision, reason: m.reason });
      case "pickWorkspace":
        return this.pickWorkspace();
      case "addContext":
        return this.addContextInteractive();
      case "attachImage":
        return this.attachImages();
      case "removeContext":
        this.context.splice(m.index, 1);
        this.post({ type: "context", items: this.context });
        return;
      case "openDiff":
        return this.openDiff(m.toolCallId);
      case "undoEdit":
        return this.undoEdit(m.toolCallId);
      case "openFile":
        await vscode.window.showTextDocument(this.resolvePath(m.path, workspace));
        return;
      case "showSystemPrompt":
        return vscode.commands.executeCommand("crank.showSystemPrompt") as Promise<void>;
      case "image":
        return this.fetchImage(m.sha256, m.sessionId);
      case "mcpServer":
        return this.mcpServer(m.name, m.action, workspace);
      case "changeDiff":
        return this.runChanges.diff(workspace, m.runId, m.path);
      case "undoChanges":
        return this.runChanges.undo(workspace, m.runId, m.paths, m.force === true);
      case "keepChanges":
        return this.runChanges.keep(workspace, m.runId, m.paths);
      case "redoChange":
        return this.runChanges.redo(workspace, m.runId, m.revertId, m.path);
    }
    const client = await this.server.ensureStarted(true);
    if (!client) {
      this.notice("error", "The Crank server is not running.");
      return;
    }
    switch (m.type) {
      case "send": {
        const context = this.context.map((c) => c.item);
        let res: PromptResult;
        try {
          res = await client.prompt({ workspace, text: m.text, context: context.length ? context : undefined, images: m.images, whileRunning: m.mode === "prompt" ? undefined : m.mode });
        } catch (err) {
          // Refused (an unknown /command, no provider, a bad image, ...): the text goes back into the input, nothing is lost.
          this.post({ type: "restoreInput", text: m.text, ...(m.images?.length ? { images: m.images } : {}) });
          throw err;
        }
        if (res.imagesOmitted) this.notice("warning", res.imagesOmitted);
        if (res.command) return this.commandAnswered(res); // a built-in: no run, the context stays for the next prompt
        if (!res.queued) {
          this.context = [];
          this.post({ type: "context", items: this.context });
        }
        return;
      }
      case "abort":
        return this.stop();
      case "removeQueued": {
        const queue = await client.removeQueued({ workspace }, m.kind, m.index, m.text);
        this.dispatch({ type: "queue", queue });
        return;
      }
      case "newSession":
        this.lastSession.choosing();
        await client.newSession({ workspace });
        return this.refresh();
      case "openSession":
        this.lastSession.choosing();
        await client.openSession({ workspace, sessionId: m.sessionId });
        return this.refresh();
      case "editResend":
        return this.editResend(m.fromEnd, m.text);
      case "switchBranch":
        await client.branch({ workspace, entryId: m.entryId });
        return this.refresh();
      case "loadEarlier": {
        const answered = (messages: Message[], start: number) => this.dispatch({ type: "earlierTranscript", messages, sessionId: m.sessionId, before: m.before, start });
        try {
          const page = await client.messages({ workspace, sessionId: m.sessionId, before: m.before, limit: TRANSCRIPT_PAGE });
          answered(page.messages, page.start ?? 0);
        } catch (err) {
          answered([], m.before); // nothing read: the page's button works again
          throw err;
        }
        // The lists of the runs on that page had no place until now (a list goes under its run's cards).
        return this.runChanges.reloaded(workspace);
      }
      case "listSessions": {
        const { sessions } = await client.sessions({ workspace });
        this.dispatch({ type: "sessions", sessions });
        return;
      }
      case "setModel": {
        await client.setModel({ workspace, api: m.api, id: m.id });
        this.applyState(await client.state({ workspace }), workspace);
        return;
      }
      case "setPermissionMode": {
        await client.setPermissionMode({ workspace, mode: m.mode });
        this.applyState(await client.state({ workspace }), workspace);
        return;
      }
    }
  }

  /**
   * Stop always stops: clear the queues first (so nothing starts after the abort), put
   * what was cleared back in the input box, then abort. If the server does not settle
   * the run within 10 s, say so and offer a restart rather than leaving a spinner.
   */
  async stop(): Promise<void> {
    const client = this.server.client;
    if (!client) return;
    const workspace = this.workspace();
    let cleared: Queue = { steering: [], followUp: [] };
    try {
      cleared = await client.clearQueue({ workspace });
    } catch (err) {
      this.showError(err);
    }
    const back = [...cleared.steering, ...cleared.followUp];
    if (back.length) this.post({ type: "restoreInput", text: back.join("\n\n") });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), 10_000)));
    const result = await Promise.race([client.abort({ workspace }), timeout]).finally(() => clearTimeout(timer));
    if (result === "timeout") {
      const pick = await vscode.window.showErrorMessage("Crank did not stop the run within 10 seconds.", "Restart Server");
      if (pick) await this.server.restart();
    }
  }

  /** A button of the chat's MCP line (src/chat/mcp.ts): one answer to the page, whatever happens. */
  private async mcpServer(name: string, action: McpAction, workspace: string | undefined): Promise<void> {
    try {
      const client = this.server.client;
      if (!client) return this.notice("error", `MCP server ${name}: ${action} failed: the Crank server is not running.`);
      this.dispatch(await runMcpAction(client, workspace, name, action));
    } finally {
      this.post({ type: "mcpDone", name });
    }
  }

  // ---- context -----------------------------------------------------------------------

  addSelection(editor = vscode.window.activeTextEditor): void {
    if (!editor) return;
    const sel = editor.selection;
    const name = vscode.workspace.asRelativePath(editor.document.uri);
    const item: ContextItem = { uri: editor.document.uri.toString() };
    if (!sel.isEmpty) item.range = { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } };
    const label = sel.isEmpty ? name : `${name}:${sel.start.line + 1}-${sel.end.line + 1}`;
    this.context.push({ label, item });
    this.post({ type: "context", items: this.context });
    void this.reveal();
  }

  /** `@problems`: the editor's diagnostics for a file (what the Problems panel lists), sent as they are now. */
  addProblems(uri: vscode.Uri): void {
    const diagnostics = vscode.languages.getDiagnostics(uri).map(toLsp);
    const n = diagnostics.length;
    this.context.push({ label: `problems: ${vscode.workspace.asRelativePath(uri)} (${n})`, item: { uri: uri.toString(), diagnostics } });
    this.post({ type: "context", items: this.context });
    void this.reveal();
  }

  addFile(uri: vscode.Uri): void {
    this.context.push({ label: vscode.workspace.asRelativePath(uri), item: { uri: uri.toString() } });
    this.post({ type: "context", items: this.context });
    void this.reveal();
  }

  /** The file dialog for images: each picked file is read, its type told by its bytes. */
  private async attachImages(): Promise<void> {
    const picked = await vscode.window.showOpenDialog({
      canSelectMany: true,
      openLabel: "Attach",
      filters: { Images: ["png", "jpg", "jpeg", "gif", "webp"] },
    });
    if (!picked?.length) return;
    const images: PromptImage[] = [];
    for (const uri of picked) {
      const name = uri.path.split("/").pop() ?? "image";
      const image = imageOfBytes(await vscode.workspace.fs.readFile(uri), name);
      if (typeof image === "string") this.notice("error", image);
      else images.push(image);
    }
    if (images.length) this.post({ type: "addImages", images });
  }

  /**
   * The draft kept for this workspace, sent to every page that loads, even when empty:
   * the page's own saved copy may be lost or stale, this one is the truth. Checked as
   * anything the page sends is (it may be from an older version); bad, it is dropped.
   */
  private restoreDraft(): void {
    const d = parseViewMessage({ type: "draft", text: this.ext.workspaceState.get(DRAFT_TEXT_KEY) ?? "", images: this.ext.workspaceState.get(DRAFT_IMAGES_KEY) ?? [] });
    this.post(d?.type === "draft" ? { type: "draft", text: d.text, images: d.images ?? [] } : { type: "draft", text: "", images: [] });
  }

  /**
   * A stored image the page shows, fetched through crank/image for the session it is
   * on. Every ask gets one answer: the bytes, or the error's message, which the page
   * shows with the image's name instead of a broken picture.
   */
  private async fetchImage(sha256: string, sessionId: string | undefined): Promise<void> {
    const answer = (a: { mimeType: string; data: string } | { error: string }) => this.post({ type: "image", sha256, ...(sessionId ? { sessionId } : {}), answer: a });
    const client = this.server.client;
    if (!client) return answer({ error: "the Crank server is not running" });
    try {
      const r = await client.image({ workspace: this.workspace(), sessionId, sha256 });
      if (!r || typeof r.data !== "string" || !r.data || !IMAGE_MIME_TYPES.includes(r.mimeType)) return answer({ error: `the server sent no image the chat can show (${String(r?.mimeType)})` });
      answer({ mimeType: r.mimeType, data: r.data });
    } catch (err) {
      const e = err as { code?: number; message?: string };
      answer({ error: e?.code === ErrorCodes.MethodNotFound ? "this Crank server cannot send stored images (it has no crank/image; update Crank)" : (e?.message ?? String(err)) });
    }
  }

  private async addContextInteractive(): Promise<void> {
    const ed = vscode.window.activeTextEditor;
    const choices: { label: string; description?: string; run: () => Promise<void> | void }[] = [];
    if (ed && !ed.selection.isEmpty) choices.push({ label: "$(selection) Current selection", run: () => this.addSelection(ed) });
    if (ed) choices.push({ label: `$(file) ${vscode.workspace.asRelativePath(ed.document.uri)}`, run: () => this.addFile(ed.document.uri) });
    if (ed) {
      const n = vscode.languages.getDiagnostics(ed.document.uri).length;
      choices.push({ label: `$(warning) Problems in ${vscode.workspace.asRelativePath(ed.document.uri)}`, description: `${n} now`, run: () => this.addProblems(ed.document.uri) });
    }
    choices.push({
      label: "$(search) Pick a file…",
      run: async () => {
        const files = await vscode.workspace.findFiles("**/*", "**/{node_modules,.git,.venv}/**", 2000);
        const pick = await vscode.window.showQuickPick(files.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u })), { matchOnDescription: true, title: "Add a file to the next prompt" });
        if (pick) this.addFile(pick.uri);
      },
    });
    const pick = await vscode.window.showQuickPick(choices, { title: "Crank: add context" });
    if (pick) await pick.run();
  }

  // ---- edits: diff and undo ----------------------------------------------------------

  private resolvePath(p: string, workspace: string | undefined): vscode.Uri {
    if (p.startsWith("file:")) return vscode.Uri.parse(p);
    if (p.startsWith("/") || /^[A-Za-z]:[\\/]/.test(p)) return vscode.Uri.file(p);
    const base = workspace ? vscode.Uri.parse(workspace) : this.folder()?.uri;
    return base ? vscode.Uri.joinPath(base, p) : vscode.Uri.file(p);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.diffDocs.get(uri.toString()) ?? "";
  }

  private async currentText(uri: vscode.Uri): Promise<string | undefined> {
    try {
      return (await vscode.workspace.openTextDocument(uri)).getText();
    } catch {
      return undefined;
    }
  }

  private async openDiff(toolCallId: string): Promise<void> {
    const t = this.edits.get(toolCallId);
    if (!t) return this.notice("warning", "This edit's details are not available any more (the window was reloaded).");
    const uri = this.resolvePath(t.edit.path, t.workspace);
    const current = await this.currentText(uri);
    const { before, after } = openDiffSides(t, current);
    const left = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${toolCallId}/before/${t.edit.path}` });
    this.diffDocs.set(left.toString(), before);
    let right = uri;
    if (current === undefined || after !== current) {
      right = vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${toolCallId}/after/${t.edit.path}` });
      this.diffDocs.set(right.toString(), after);
    }
    await vscode.commands.executeCommand("vscode.diff", left, right, `${t.edit.path} (Crank edit)`);
  }

  private async undoEdit(toolCallId: string): Promise<void> {
    const t = this.edits.get(toolCallId);
    if (!t) return this.notice("warning", "This edit's details are not available any more (the window was reloaded).");
    const uri = this.resolvePath(t.edit.path, t.workspace);
    const doc = await vscode.workspace.openTextDocument(uri);
    const plan = planUndo(doc.getText(), t.edit, t.previousFile);
    if (!plan.ok) return this.notice("error", `Cannot undo this edit: ${plan.reason}`);
    // Saved like the agent's own change, so the disk never keeps what the editor took back;
    // the user's unsaved edits in the file go with it, and the notice says so.
    const hadUnsaved = doc.isDirty;
    const we = new vscode.WorkspaceEdit();
    we.replace(uri, new vscode.Range(doc.positionAt(plan.offset), doc.positionAt(plan.offset + plan.length)), plan.replacement);
    if (!(await vscode.workspace.applyEdit(we))) return this.notice("error", `VS Code refused to revert the edit to ${t.edit.path}.`);
    if (!(await doc.save())) return this.notice("error", `Reverted the edit to ${t.edit.path} in the editor, but VS Code did not save it: the file on disk still has the edit.`);
    this.notice("info", hadUnsaved ? `Reverted the edit to ${t.edit.path} and saved the file, with your unsaved changes to it.` : `Reverted the edit to ${t.edit.path}.`);
  }
}

export async function showInstallHelp(): Promise<void> {
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: INSTALL_HELP });
  await vscode.commands.executeCommand("markdown.showPreview", doc.uri).then(undefined, () => vscode.window.showTextDocument(doc));
}
