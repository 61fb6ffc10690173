/**
 * Owns the `crank serve` process through vscode-languageclient: start, stop, restart,
 * the output channel, the API key from SecretStorage, and Workspace Trust. Everything
 * above it talks to the server through `CrankClient`, so it survives restarts.
 *
 * The server is not started at activation: `ensureStarted()` starts it the first time
 * the chat view, a command or a code action needs it, so a window where Crank is never
 * used never runs a Python process. A missing server is reported in a notification
 * once per command line (remembered across windows and start-ups); after that the
 * chat view and the status bar say it, and a command the user runs says it again.
 */
import { calmCleanExits } from "./protocol/exits";
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
import { afterServerSettings, commandLine, findExecutable, initOptions, platformNote, redacted, rememberedCommand, serverCommand, settingsFrom, type CrankSettings, type ServerCommand, type StartState } from "./protocol/launch";
import { redactingChannel } from "./protocol/redact";
import { answerDiagnostics } from "./protocol/diagnostics";
import { answerSave, type SaveHost } from "./protocol/save";
import { errorCodesFrom, type ErrorCodeName, type EventParams, type PermissionRequest, type PermissionResponse } from "./protocol/types";
import type { BarServerStatus } from "./chat/status";

const SECRET_KEY = "crank.apiKey";
/** globalState: the command line whose "not found" message was last shown. */
const MISSING_SHOWN_KEY = "crank.missingServerShown";
/** globalState: the server command the User settings last started successfully (`rememberedCommand`). */
const USER_COMMAND_KEY = "crank.lastUserServerCommand";

/** Only what the user set (never a contributed default); restricted settings from the user alone while untrusted. */
export function readSettings(): CrankSettings {
  const c = vscode.workspace.getConfiguration("crank");
  return settingsFrom((key) => c.inspect(key), vscode.workspace.isTrusted);
}

/** The server command the User settings alone give, or undefined when they set none. */
function userServerCommand(): ServerCommand | undefined {
  const c = vscode.workspace.getConfiguration("crank");
  const user = settingsFrom(<T,>(key: string) => {
    const i = c.inspect<T>(key);
    return i && { globalValue: i.globalValue };
  }, false);
  return user.command.some((x) => x.trim()) || user.python.trim() ? serverCommand(user) : undefined;
}

/** Where `crank.server.*` come from right now (each layer's value), for the log. */
function serverSettingsLine(): string {
  const c = vscode.workspace.getConfiguration("crank");
  const layers = (key: string) => {
    const i = c.inspect(key);
    return JSON.stringify({ user: i?.globalValue, workspace: i?.workspaceValue, folder: i?.workspaceFolderValue });
  };
  return `crank.server.python ${layers("server.python")}, crank.server.command ${layers("server.command")}`;
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

/** crank/saveDocument in VS Code: the open TextDocument with that URI, saved with `save()`. */
const vscodeSaveHost: SaveHost = {
  find(uri) {
    const wanted = vscode.Uri.parse(uri).toString();
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === wanted);
    return doc && { name: doc.uri.path.split("/").pop() ?? doc.uri.path, save: () => Promise.resolve(doc.save()) };
  },
  inform(message) {
    void vscode.window.showInformationMessage(message);
  },
};

export class ServerManager implements vscode.Disposable {
  /** Every stored key handed to a server: taken out of every line the channel gets (traces included). */
  private readonly keys = new Set<string>();
  /** A log channel (levels, timestamps, the user's chosen log level) that redacts keys from every line. */
  readonly output = redactingChannel(vscode.window.createOutputChannel("Crank", { log: true }), () => this.keys);
  private lc: LanguageClient | undefined;
  /** Crank's error codes by name, as the running server advertised them. */
  errorCodes: Partial<Record<ErrorCodeName, number>> = {};
  private crank: CrankClient | undefined;
  private status: BarServerStatus = "idle";
  private statusMessage: string | undefined;
  private starting: Promise<void> | undefined;
  /** The command line the last start tried (undefined before the first). */
  private tried: string | undefined;
  private readonly statusEmitter = new vscode.EventEmitter<{ status: BarServerStatus; message?: string }>();
  private readonly eventEmitter = new vscode.EventEmitter<EventParams>();
  private readonly commandsEmitter = new vscode.EventEmitter<{ workspace: string }>();
  private subscriptions: vscode.Disposable[] = [];
  readonly onStatus = this.statusEmitter.event;
  readonly onEvent = this.eventEmitter.event;
  /** crank/commandsChanged from the running server. */
  readonly onCommandsChanged = this.commandsEmitter.event;
  /** Set by the chat view: answers crank/requestPermission. */
  permissionHandler: ((p: PermissionRequest, cancelled: (listener: () => void) => void) => Promise<PermissionResponse>) | undefined;
  /** Called before a server-side command (quick fix) runs, so the chat can come forward. */
  beforeServerCommand: (() => void) | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.output.info(`Settings at activation: ${serverSettingsLine()}`);
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
  get currentStatus(): { status: BarServerStatus; message?: string } {
    return { status: this.status, message: this.statusMessage };
  }

  private setStatus(status: BarServerStatus, message?: string): void {
    this.status = status;
    this.statusMessage = message;
    this.statusEmitter.fire({ status, message });
  }

  /**
   * The running client, starting the server first if it has not been started yet (or
   * a start is under way). `userAsked`: a command the user ran needs it, so a missing
   * server is said again even if the message was shown before.
   */
  async ensureStarted(userAsked = false): Promise<CrankClient | undefined> {
    if (this.status === "idle") await this.start(userAsked);
    else if (this.starting) await this.starting;
    else if (userAsked && this.status === "notInstalled") await this.start(true);
    return this.client;
  }

  start(userAsked = true): Promise<void> {
    if (this.starting) return this.starting;
    this.starting = this.doStart(userAsked).finally(() => {
      this.starting = undefined;
      // The settings may have changed while it started (their event found it under way).
      this.serverSettingsMoved("after the start");
    });
    return this.starting;
  }

  private startState(): StartState {
    if (this.starting) return "starting";
    if (this.tried === undefined) return "never";
    return this.status === "notInstalled" ? "notInstalled" : "started";
  }

  /** Acts on a server command in the settings other than the one the last start tried. */
  private serverSettingsMoved(when: string): boolean {
    const now = commandLine(readSettings());
    const move = afterServerSettings(this.startState(), this.tried, now);
    if (move === "startNow") {
      this.output.info(`The server command is now ${now} (${when}; ${this.tried} was not found): starting again`);
      void this.restart();
    } else if (move === "offerRestart") this.offerRestart();
    return move !== "nothing";
  }

  private offerRestart(): void {
    void vscode.window.showInformationMessage("Crank: restart the server to apply the new settings?", "Restart").then((pick) => {
      if (pick) void this.restart();
    });
  }

  private async doStart(userAsked: boolean): Promise<void> {
    const settings = readSettings();
    let { command, args } = serverCommand(settings);
    const line = commandLine(settings);
    this.tried = line;
    const fallback = findExecutable(command) ? undefined : rememberedCommand(settings, this.context.globalState.get<ServerCommand>(USER_COMMAND_KEY), (c) => !!findExecutable(c));
    if (fallback) {
      this.output.warn(
        `\`${command}\` is not found and this window's settings name no Crank server (crank.server.*: ${serverSettingsLine()}): ` +
          `starting ${[fallback.command, ...fallback.args].join(" ")}, the one your User settings started last time. ` +
          "A reloaded code-server window can come up without the User settings; reload it if other User settings are missing too.",
      );
      ({ command, args } = fallback);
      this.tried = commandLine({ command: [command, ...args], python: "" });
    }
    if (!findExecutable(command)) {
      const msg = [`Cannot find \`${command}\` to start the Crank server (${line}).`, platformNote()].filter(Boolean).join(" ");
      this.output.error(msg);
      this.output.info(`Settings when not found: ${serverSettingsLine()}`);
      // Once per command line, across windows and start-ups; again when the user asked for something.
      const shown = this.context.globalState.get<string>(MISSING_SHOWN_KEY) === line;
      if (userAsked || !shown) {
        await this.context.globalState.update(MISSING_SHOWN_KEY, line);
        void vscode.window.showErrorMessage(msg, "How to Install", "Open Settings").then((pick) => {
          if (pick === "How to Install") void vscode.commands.executeCommand("crank.installHelp");
          if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "crank.server");
        });
      }
      this.setStatus("notInstalled", msg);
      return;
    }
    if (this.context.globalState.get(MISSING_SHOWN_KEY) !== undefined) await this.context.globalState.update(MISSING_SHOWN_KEY, undefined);
    const apiKey = await this.context.secrets.get(SECRET_KEY);
    if (apiKey) this.keys.add(apiKey);
    const init = initOptions(settings, apiKey, vscode.workspace.isTrusted);
    this.output.info(`Starting ${[command, ...args].join(" ")} with ${JSON.stringify(redacted(init))}`);
    const serverOptions: ServerOptions = { command, args, options: { env: process.env } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: calmCleanExits(this.output),
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
        if (e.newState === State.Stopped && this.lc === lc) this.setStatus("down", platformNote() ?? "The server process exited. Its log is in the Crank output channel.");
      }),
      this.crank.onEvent((p) => this.eventEmitter.fire(p)),
      this.crank.onCommandsChanged((p) => this.commandsEmitter.fire(p)),
      this.crank.onPermissionRequest((p, cancelled) => (this.permissionHandler ? this.permissionHandler(p, cancelled) : Promise.resolve({ decision: "reject", reason: "no chat view to ask in" }))),
      this.crank.onSaveDocument((p) => answerSave(p, vscodeSaveHost)),
      this.crank.onDiagnostics((p) => answerDiagnostics(p, (uri) => vscode.languages.getDiagnostics(vscode.Uri.parse(uri)))),
    );
    this.setStatus("starting");
    try {
      await lc.start();
      this.errorCodes = errorCodesFrom(lc.initializeResult);
      this.setStatus("running");
      // What the User settings (alone) started: the command to fall back on when a window comes up without them.
      const user = userServerCommand();
      if (!fallback && user && user.command === command && user.args.join(" ") === args.join(" ")) await this.context.globalState.update(USER_COMMAND_KEY, user);
    } catch (err) {
      const msg = `The Crank server failed to start: ${err instanceof Error ? err.message : String(err)}`;
      this.output.error(msg);
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
        this.output.warn(`Stopping the server: ${String(err)}`);
      }
    }
    this.setStatus("down");
  }

  async restart(): Promise<void> {
    this.output.info(`Restarting the server (${this.status})`);
    // A start under way ends first: stopping it midway and then calling start() got that
    // same start's promise back, so Restart Server pressed while the chat was starting
    // the server left none running (seen 2 in 22 e2e runs under load).
    if (this.starting) await this.starting.catch(() => undefined);
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
    this.output.info("Workspace trusted: sent trusted=true to the server.");
  }

  private configChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration("crank")) return;
    this.output.info(`Settings changed (server ${this.status}): ${serverSettingsLine()}`);
    if (e.affectsConfiguration("crank.permissionMode")) {
      const mode = readSettings().permissionMode ?? "ask";
      void this.client?.setPermissionMode({ mode }).catch((err: Error) => {
        this.output.error(`crank/setPermissionMode ${mode} failed: ${err.message}`);
        void vscode.window.showErrorMessage(`Crank: the permission mode setting (${mode}) was not applied: ${err.message}`);
      });
    }
    // The server command: compared with what the last start tried (afterServerSettings).
    if (e.affectsConfiguration("crank.server") && this.serverSettingsMoved("a settings change")) return;
    const state = this.startState();
    if (state !== "started" && state !== "starting") return; // never started, or no server to restart
    if (["crank.provider", "crank.sessionDir"].some((s) => e.affectsConfiguration(s))) this.offerRestart();
  }

  dispose(): void {
    void this.stop();
    this.output.dispose();
    this.statusEmitter.dispose();
    this.eventEmitter.dispose();
    this.commandsEmitter.dispose();
  }
}
