/**
 * Owns the `crank serve` process through vscode-languageclient: start, stop, restart,
 * the output channel, the API key from SecretStorage, and Workspace Trust. Everything
 * above it talks to the server through `CrankClient`, so it survives restarts.
 */
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  State,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from "vscode-languageclient/node";
import { CrankClient, experimentalCapabilities } from "./protocol/client";
import { findExecutable, initOptions, redacted, serverCommand, type CrankSettings } from "./protocol/launch";
import type { EventParams, PermissionRequest, PermissionResponse } from "./protocol/types";
import type { ServerStatus } from "./chat/state";

const SECRET_KEY = "crank.apiKey";

export function readSettings(): CrankSettings {
  const c = vscode.workspace.getConfiguration("crank");
  return {
    command: c.get<string[]>("server.command", []),
    python: c.get<string>("server.python", ""),
    api: c.get<string>("provider.api", ""),
    baseUrl: c.get<string>("provider.baseUrl", ""),
    model: c.get<string>("provider.model", ""),
    permissionMode: c.get("permissionMode", "ask"),
    sessionDir: c.get<string>("sessionDir", ""),
    sandboxMode: c.get("sandbox.mode", "workspace-write"),
    sandboxNetwork: c.get<boolean>("sandbox.network", false),
  };
}

/** Adds `capabilities.experimental.crank` so the server sends events and permission requests. */
class CrankCapabilities implements StaticFeature {
  fillClientCapabilities(caps: { experimental?: unknown }): void {
    caps.experimental = { ...((caps.experimental as object) ?? {}), ...experimentalCapabilities };
  }
  initialize(): void {}
  getState() {
    return { kind: "static" as const };
  }
  clear(): void {}
}

export class ServerManager implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel("Crank");
  private lc: LanguageClient | undefined;
  private crank: CrankClient | undefined;
  private status: ServerStatus = "down";
  private statusMessage: string | undefined;
  private readonly statusEmitter = new vscode.EventEmitter<{ status: ServerStatus; message?: string }>();
  private readonly eventEmitter = new vscode.EventEmitter<EventParams>();
  private subscriptions: vscode.Disposable[] = [];
  readonly onStatus = this.statusEmitter.event;
  readonly onEvent = this.eventEmitter.event;
  /** Set by the chat view: answers crank/requestPermission. */
  permissionHandler: ((p: PermissionRequest, cancelled: (listener: () => void) => void) => Promise<PermissionResponse>) | undefined;
  /** Called before a server-side command (quick fix) runs, so the chat can come forward. */
  beforeServerCommand: (() => void) | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    context.subscriptions.push(
      vscode.workspace.onDidGrantWorkspaceTrust(() => this.trustGranted()),
      vscode.workspace.onDidChangeConfiguration((e) => this.configChanged(e)),
    );
  }

  get client(): CrankClient | undefined {
    return this.status === "running" ? this.crank : undefined;
  }
  get languageClient(): LanguageClient | undefined {
    return this.lc;
  }
  get currentStatus(): { status: ServerStatus; message?: string } {
    return { status: this.status, message: this.statusMessage };
  }

  private setStatus(status: ServerStatus, message?: string): void {
    this.status = status;
    this.statusMessage = message;
    this.statusEmitter.fire({ status, message });
  }

  async start(): Promise<void> {
    const settings = readSettings();
    const { command, args } = serverCommand(settings);
    if (!findExecutable(command)) {
      const msg = `Cannot find \`${command}\` to start the Crank server (${[command, ...args].join(" ")}).`;
      this.output.appendLine(msg);
      this.setStatus("notInstalled", msg);
      void vscode.window.showErrorMessage(msg, "How to Install", "Open Settings").then((pick) => {
        if (pick === "How to Install") void vscode.commands.executeCommand("crank.installHelp");
        if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "crank.server");
      });
      return;
    }
    const apiKey = await this.context.secrets.get(SECRET_KEY);
    const init = initOptions(settings, apiKey, vscode.workspace.isTrusted);
    this.output.appendLine(`Starting ${[command, ...args].join(" ")} with ${JSON.stringify(redacted(init))}`);
    const serverOptions: ServerOptions = { command, args, options: { env: process.env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.output,
      initializationOptions: { crank: init },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => ({ action: CloseAction.DoNotRestart, message: "The Crank server stopped. Use Crank: Restart Server to start it again." }),
      },
      middleware: {
        executeCommand: (cmd, cmdArgs, next) => {
          this.beforeServerCommand?.();
          return next(cmd, cmdArgs);
        },
        workspace: {
          // The server asks `workspace/configuration` for section `crank`; answer with our settings and trust.
          configuration: async (params, token, next) => {
            const result = await next(params, token);
            if (!Array.isArray(result)) return result;
            return params.items.map((item, i) =>
              item.section === "crank" ? initOptions(readSettings(), undefined, vscode.workspace.isTrusted) : result[i],
            );
          },
        },
      },
    };
    const lc = new LanguageClient("crank", "Crank", serverOptions, clientOptions);
    lc.registerFeature(new CrankCapabilities());
    this.lc = lc;
    this.crank = new CrankClient(lc);
    this.subscriptions.push(
      lc.onDidChangeState((e) => {
        if (e.newState === State.Stopped && this.lc === lc) this.setStatus("down", "The server process exited. Its log is in the Crank output channel.");
      }),
      this.crank.onEvent((p) => this.eventEmitter.fire(p)),
      this.crank.onPermissionRequest((p, cancelled) => (this.permissionHandler ? this.permissionHandler(p, cancelled) : Promise.resolve({ decision: "reject", reason: "no chat view to ask in" }))),
    );
    this.setStatus("starting");
    try {
      await lc.start();
      this.setStatus("running");
    } catch (err) {
      const msg = `The Crank server failed to start: ${err instanceof Error ? err.message : String(err)}`;
      this.output.appendLine(msg);
      this.setStatus("down", msg);
    }
  }

  async stop(): Promise<void> {
    const lc = this.lc;
    this.lc = undefined;
    this.crank = undefined;
    for (const d of this.subscriptions.splice(0)) d.dispose();
    if (lc) {
      try {
        await lc.stop(5000);
      } catch (err) {
        this.output.appendLine(`Stopping the server: ${String(err)}`);
      }
    }
    this.setStatus("down");
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: "Crank: API key",
      prompt: "Stored in VS Code's secret storage and handed to the server when it starts; never written to settings.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key.trim()) await this.context.secrets.store(SECRET_KEY, key.trim());
    else await this.context.secrets.delete(SECRET_KEY);
    await this.restart();
  }

  async clearApiKey(): Promise<void> {
    await this.context.secrets.delete(SECRET_KEY);
    void vscode.window.showInformationMessage("Crank: API key removed.");
    await this.restart();
  }

  /** Trust was granted: tell the server so it reloads the project's prompt (AGENTS.md, skills). */
  private async trustGranted(): Promise<void> {
    const lc = this.lc;
    if (!lc || this.status !== "running") return;
    await lc.sendNotification("workspace/didChangeConfiguration", {
      settings: { crank: initOptions(readSettings(), undefined, true) },
    });
    this.output.appendLine("Workspace trusted: sent trusted=true to the server.");
  }

  private configChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration("crank")) return;
    if (e.affectsConfiguration("crank.permissionMode")) {
      const mode = readSettings().permissionMode;
      void this.client?.setPermissionMode({ mode }).catch((err: Error) => {
        this.output.appendLine(`crank/setPermissionMode ${mode} failed: ${err.message}`);
        void vscode.window.showErrorMessage(`Crank: the permission mode setting (${mode}) was not applied: ${err.message}`);
      });
    }
    if (["crank.server", "crank.provider", "crank.sessionDir"].some((s) => e.affectsConfiguration(s))) {
      void vscode.window.showInformationMessage("Crank: restart the server to apply the new settings?", "Restart").then((pick) => {
        if (pick) void this.restart();
      });
    }
  }

  dispose(): void {
    void this.stop();
    this.output.dispose();
    this.statusEmitter.dispose();
    this.eventEmitter.dispose();
  }
}
