/**
 * Entry point: wires the server manager, the chat view, the status bar and the commands
 * together. Activation is cheap (nothing is started): the server starts when the chat
 * view, a command or a code action first needs it (ServerManager.ensureStarted).
 * Command ids differ from the server's executeCommand ids (crank.fixFile, crank.abort,
 * crank.newSession), which vscode-languageclient registers itself for code actions.
 */
import * as vscode from "vscode";
import { ChangesReview } from "./review";
import { ChatViewProvider, showInstallHelp } from "./chatView";
import { ServerManager } from "./server";
import { modelLabel, RunTracker, statusBarView } from "./chat/status";
import { modelSwitchFailure } from "./chat/notices";
import type { FixFileArgs, ModelInfo, PermissionMode } from "./protocol/types";

/**
 * "Fix with Crank" in the lightbulb before the server runs (after that the server's own
 * code actions take over, so the menu never lists it twice). Choosing it starts the
 * server and runs the fix on the diagnostics it was offered for.
 */
class FixBeforeStartProvider implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix];
  constructor(private readonly server: ServerManager) {}
  provideCodeActions(doc: vscode.TextDocument, _range: vscode.Range, ctx: vscode.CodeActionContext): vscode.CodeAction[] {
    if (this.server.client || !ctx.diagnostics.length || !vscode.workspace.getWorkspaceFolder(doc.uri)) return [];
    const action = new vscode.CodeAction("Fix with Crank", vscode.CodeActionKind.QuickFix);
    action.diagnostics = [...ctx.diagnostics];
    action.command = { command: "crank.fixDiagnostics", title: "Fix with Crank", arguments: [doc.uri, [...ctx.diagnostics]] };
    return [action];
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const server = new ServerManager(context);
  // The quick pick and the chat's per-run lists share the diff view (`crank/fileContent`).
  const review: ChangesReview = new ChangesReview(server, (): string | undefined => chat.folder()?.uri.toString());
  const chat: ChatViewProvider = new ChatViewProvider(context, server, review);
  context.subscriptions.push(server);
  context.subscriptions.push(vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, { webviewOptions: { retainContextWhenHidden: true } }));

  // Status bar: running / idle, the chat's context use; a click opens the chat.
  const runs = new RunTracker();
  const bar = vscode.window.createStatusBarItem("crank.status", vscode.StatusBarAlignment.Right, 100);
  bar.name = "Crank";
  bar.command = "crank.focusChat";
  const workspace = () => chat.folder()?.uri.toString();
  let wasRunning = false;
  const paint = () => {
    const v = statusBarView({ server: server.currentStatus.status, running: runs.runningCount, waiting: chat.waitingWorkspaces().size, usage: runs.usageOf(workspace()) });
    bar.text = v.text;
    bar.tooltip = v.tooltip;
    bar.backgroundColor = v.tone === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
    bar.show();
    if (runs.anyRunning !== wasRunning) {
      wasRunning = runs.anyRunning;
      void vscode.commands.executeCommand("setContext", "crank.running", wasRunning);
    }
  };
  context.subscriptions.push(
    bar,
    server.onEvent((p) => runs.onEvent(p) && paint()),
    chat.onWaitingChanged(() => paint()),
    chat.onStateRead(({ workspace: ws, state }) => {
      runs.setUsage(ws, state.usage);
      paint();
    }),
    server.onStatus((s) => {
      if (s.status !== "running") runs.clear();
      paint();
    }),
    vscode.window.onDidChangeActiveTextEditor(() => paint()),
    vscode.languages.registerCodeActionsProvider({ scheme: "file" }, new FixBeforeStartProvider(server), { providedCodeActionKinds: FixBeforeStartProvider.kinds }),
  );
  paint();

  const needClient = async () => {
    const c = await server.ensureStarted(true);
    if (!c && server.currentStatus.status !== "notInstalled")
      void vscode.window.showErrorMessage("The Crank server is not running.", "Restart Server").then((p) => p && server.restart());
    return c;
  };

  const fix = async (uri: vscode.Uri | undefined, withSelection: boolean, offered?: vscode.Diagnostic[]) => {
    const editor = vscode.window.activeTextEditor;
    const target = uri instanceof vscode.Uri ? uri : editor?.document.uri;
    if (!target) return void vscode.window.showWarningMessage("Crank: open a file to fix first.");
    if (!(await needClient())) return;
    const lc = server.languageClient;
    if (!lc) return;
    let diagnostics = offered ?? vscode.languages.getDiagnostics(target);
    const args: FixFileArgs = { uri: target.toString() };
    if (withSelection && editor && !editor.selection.isEmpty && editor.document.uri.toString() === target.toString()) {
      const sel = editor.selection;
      args.range = lc.code2ProtocolConverter.asRange(sel);
      diagnostics = diagnostics.filter((d) => d.range.intersection(sel) !== undefined);
    }
    if (diagnostics.length) args.diagnostics = await lc.code2ProtocolConverter.asDiagnostics(diagnostics);
    await chat.reveal();
    try {
      await lc.sendRequest("workspace/executeCommand", { command: "crank.fixFile", arguments: [args] });
    } catch (err) {
      void vscode.window.showErrorMessage(`Crank: ${err instanceof Error ? err.message : String(err)}`);
    }
  };

  const register = (id: string, fn: (...args: any[]) => unknown) => context.subscriptions.push(vscode.commands.registerCommand(id, fn));
  register("crank.focusChat", () => chat.reveal());
  register("crank.fixThisFile", (uri?: vscode.Uri) => fix(uri, false));
  register("crank.fixSelection", () => fix(undefined, true));
  register("crank.fixDiagnostics", (uri: vscode.Uri, diagnostics: vscode.Diagnostic[]) => fix(uri, false, diagnostics));
  register("crank.addSelection", () => chat.addSelection());
  register("crank.addFile", (uri?: vscode.Uri) => {
    const u = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    if (u) chat.addFile(u);
  });
  register("crank.addProblems", (uri?: vscode.Uri) => {
    const u = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    if (u) chat.addProblems(u);
  });
  register("crank.chat.stop", () => chat.stop());
  context.subscriptions.push(review);
  register("crank.reviewChanges", () => review.review());
  register("crank.chat.newSession", async () => {
    const c = await needClient();
    if (!c) return;
    await c.newSession({ workspace: workspace() }).catch((e: Error) => vscode.window.showErrorMessage(`Crank: ${e.message}`));
    await chat.refresh();
  });
  register("crank.chat.openSession", async () => {
    const c = await needClient();
    if (!c) return;
    const { sessions } = await c.sessions({ workspace: workspace() });
    const pick = await vscode.window.showQuickPick(
      sessions.map((s) => ({ label: s.title || s.firstMessage || s.sessionId, description: s.modified ? new Date(s.modified).toLocaleString() : "", sessionId: s.sessionId })),
      { title: "Crank: open a session", matchOnDescription: true },
    );
    if (!pick) return;
    await c.openSession({ workspace: workspace(), sessionId: pick.sessionId }).catch((e: Error) => vscode.window.showErrorMessage(`Crank: ${e.message}`));
    await chat.refresh();
  });
  register("crank.setApiKey", () => server.setApiKey());
  register("crank.clearApiKey", () => server.clearApiKey());
  register("crank.restartServer", () => server.restart());
  register("crank.showLog", () => server.output.show(true));
  register("crank.installHelp", () => showInstallHelp());
  register("crank.pickWorkspace", () => chat.pickWorkspace());
  /** Crank: Restart / Disable MCP Server: pick one of crank/state's `mcp` servers. */
  const mcpAction = async (action: "restart" | "disable") => {
    const c = await needClient();
    if (!c) return;
    const { mcp = [] } = await c.state({ workspace: workspace() });
    if (!mcp.length) return void vscode.window.showInformationMessage("Crank: no MCP server is configured (setting crank.mcpServers).");
    const pick = await vscode.window.showQuickPick(
      mcp.map((m) => ({ label: m.name, description: `${m.source}, ${m.state}`, detail: m.error })),
      { title: `Crank: ${action} an MCP server` },
    );
    if (!pick) return;
    await c.mcpServer({ workspace: workspace(), name: pick.label, action: action === "disable" && pick.description?.endsWith("disabled") ? "enable" : action })
      .catch((e: Error) => vscode.window.showErrorMessage(`Crank: ${e.message}`));
  };
  register("crank.mcpRestart", () => mcpAction("restart"));
  register("crank.mcpDisable", () => mcpAction("disable"));
  register("crank.showSystemPrompt", async () => {
    const c = await needClient();
    if (!c) return;
    const p = await c.systemPrompt({ workspace: workspace() });
    const sources = p.sources.map((s) => `- ${s.kind}${s.path ? `: \`${s.path}\`` : ""}`).join("\n") || "- (none)";
    const content = `<!-- Crank system prompt, hash ${p.hash} -->\n# Sources\n\n${sources}\n\n# Prompt\n\n${p.text}\n`;
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ language: "markdown", content }));
  });
  /** `given`: the models already listed (the answer of a typed `/model`); else they are asked for. */
  register("crank.selectModel", async (given?: ModelInfo[]) => {
    const c = await needClient();
    if (!c) return;
    const models = Array.isArray(given) ? given : (await c.models({ workspace: workspace() })).models;
    const pick = await vscode.window.showQuickPick(
      models.map((m) => ({
        label: modelLabel(m.id),
        detail: modelLabel(m.id) === m.id ? undefined : m.id,
        description: `${m.source === "server" ? "served here · " : ""}${m.api}${m.contextWindow ? ` · ${m.contextWindow} tokens` : ""}`,
        m,
      })),
      { title: "Crank: model" },
    );
    if (!pick) return;
    try {
      await c.setModel({ workspace: workspace(), api: pick.m.api, id: pick.m.id });
    } catch (err) {
      // a Crank notice saying what to set (a key, say), not VS Code's "Command ... resulted in an error"
      const n = modelSwitchFailure(err);
      const chosen = await (n.action ? vscode.window.showErrorMessage(n.text, n.action) : vscode.window.showErrorMessage(n.text));
      if (chosen === "Set API Key") await server.setApiKey();
      return;
    }
    await chat.refresh();
  });
  register("crank.setPermissionMode", async () => {
    const c = await needClient();
    if (!c) return;
    const modes: { label: string; detail: string; mode: PermissionMode }[] = [
      { label: "Ask", detail: "Ask before every edit and command", mode: "ask" },
      { label: "Auto-edit", detail: "Edit files without asking; ask before commands", mode: "autoEdit" },
      { label: "Auto", detail: "Never ask", mode: "auto" },
      { label: "Read-only", detail: "No edits, no commands", mode: "readOnly" },
    ];
    const pick = await vscode.window.showQuickPick(modes, { title: "Crank: permission mode" });
    if (pick) {
      await c.setPermissionMode({ workspace: workspace(), mode: pick.mode });
      await chat.refresh();
    }
  });

}

export function deactivate(): void {}
