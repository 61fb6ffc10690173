/**
 * How the extension starts `crank serve` and what it tells it at `initialize`.
 * Plain functions over plain settings (no `vscode`), so the rules are unit-tested.
 */
import { accessSync, constants } from "node:fs";
import * as path from "node:path";
import type { CrankInitOptions, PermissionMode, SandboxMode } from "./types";

/** The user's settings; "" (or undefined) where the user set nothing, so the server's own layering applies. */
export interface CrankSettings {
  command: string[];
  python: string;
  api: string;
  baseUrl: string;
  model: string;
  /** Tokens; 0 = not set (the server finds it, see docs/vendors.md). */
  contextWindow?: number;
  permissionMode: PermissionMode | undefined;
  sessionDir: string;
  sandboxMode?: SandboxMode;
  sandboxNetwork?: boolean;
  /** `crank.mcpServers`: Claude Code's `mcpServers` object (docs/mcp.md); undefined when unset. */
  mcpServers?: Record<string, unknown>;
  /** `crank.mcpStart`; undefined when unset (the server starts them when the folder opens). */
  mcpStart?: "open" | "firstUse";
}

/** The parts of `WorkspaceConfiguration.inspect` used here. */
export interface Inspected<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/**
 * Settings (under `crank.`) that lower safety, start a program, send traffic (and the
 * key) elsewhere or choose what the key pays for (the model). In an untrusted workspace only the user's own value counts. The same
 * list is `capabilities.untrustedWorkspaces.restrictedConfigurations` in package.json
 * (a unit test checks), and the server enforces its side (docs/protocol.md).
 */
export const RESTRICTED_SETTINGS = [
  "server.command",
  "server.python",
  "provider.api",
  "provider.baseUrl",
  "provider.model",
  "permissionMode",
  "sessionDir",
  "sandbox.mode",
  "sandbox.network",
  "mcpServers",
] as const;

/**
 * The value the user set, or undefined when only the contributed default applies (a
 * default sent to the server would override the environment and the config file). A
 * restricted setting in an untrusted workspace: the user's (global) value only.
 */
export function userValue<T>(inspected: Inspected<T> | undefined, restricted: boolean, trusted: boolean): T | undefined {
  if (!inspected) return undefined;
  if (restricted && !trusted) return inspected.globalValue;
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/**
 * The restricted settings this workspace or folder sets while it is not trusted: each
 * was ignored (the user's own value, or none, was used instead). Empty when trusted.
 */
export function ignoredSettings(inspect: <T>(key: string) => Inspected<T> | undefined, trusted: boolean): string[] {
  if (trusted) return [];
  return RESTRICTED_SETTINGS.filter((key) => {
    const i = inspect<unknown>(key);
    return i !== undefined && (i.workspaceValue !== undefined || i.workspaceFolderValue !== undefined);
  }).map((key) => `crank.${key}`);
}

/**
 * The restricted settings a folder's own `.vscode/settings.json` (its text, JSON with
 * comments) sets. In Restricted Mode VS Code hides those values from the extension
 * (`inspect` has no workspace value for them), so the file is the only place that
 * says the user's folder asked for something that was ignored. Text that does not
 * parse sets nothing.
 */
export function restrictedIn(settingsText: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(withoutComments(settingsText));
  } catch {
    return [];
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return [];
  const keys = Object.keys(parsed);
  return RESTRICTED_SETTINGS.filter((key) => keys.includes(`crank.${key}`)).map((key) => `crank.${key}`);
}

/** JSONC as JSON: comments out (strings kept whole), commas before a closing bracket out. */
function withoutComments(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 1;
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, "$1");
}

/** The one chat line that says which folder settings Restricted Mode ignored, and why. */
export function ignoredLine(keys: readonly string[]): string | undefined {
  if (!keys.length) return undefined;
  return `This workspace is not trusted (Restricted Mode), so its ${keys.join(", ")} ${keys.length === 1 ? "was" : "were"} ignored: a cloned folder must not choose the model, endpoint or safety settings your key and machine are used with. Set ${keys.length === 1 ? "it" : "them"} in your user settings, or trust the folder.`;
}

/** `CrankSettings` from an `inspect` function (`vscode.workspace.getConfiguration("crank").inspect`). */
export function settingsFrom(inspect: <T>(key: string) => Inspected<T> | undefined, trusted: boolean): CrankSettings {
  const restricted: readonly string[] = RESTRICTED_SETTINGS;
  const get = <T>(key: string): T | undefined => userValue(inspect<T>(key), restricted.includes(key), trusted);
  return {
    command: get<string[]>("server.command") ?? [],
    python: get<string>("server.python") ?? "",
    api: get<string>("provider.api") ?? "",
    baseUrl: get<string>("provider.baseUrl") ?? "",
    model: get<string>("provider.model") ?? "",
    permissionMode: get<PermissionMode>("permissionMode"),
    sessionDir: get<string>("sessionDir") ?? "",
    contextWindow: get<number>("provider.contextWindow") ?? 0,
    ...sandboxOf(get<SandboxMode>("sandbox.mode"), get<boolean>("sandbox.network")),
    ...mcpOf(get<Record<string, unknown>>("mcpServers")),
    ...startOf(get<string>("mcpStart")),
  };
}

/** `mcpServers`, present only when the user set some. */
function mcpOf(servers: Record<string, unknown> | undefined): Pick<CrankSettings, "mcpServers"> {
  return servers && typeof servers === "object" && Object.keys(servers).length ? { mcpServers: servers } : {};
}

/** `mcpStart`, present only when the user chose one of its values. */
function startOf(start: string | undefined): Pick<CrankSettings, "mcpStart"> {
  return start === "open" || start === "firstUse" ? { mcpStart: start } : {};
}

/** The sandbox fields, present only when the user set them. */
function sandboxOf(mode: SandboxMode | undefined, network: boolean | undefined): Pick<CrankSettings, "sandboxMode" | "sandboxNetwork"> {
  const out: Pick<CrankSettings, "sandboxMode" | "sandboxNetwork"> = {};
  if (mode !== undefined) out.sandboxMode = mode;
  if (network !== undefined) out.sandboxNetwork = network;
  return out;
}

/** The server's argv: the explicit command, else `<python> -m crank serve`, else `crank serve`. */
export function serverCommand(s: Pick<CrankSettings, "command" | "python">): { command: string; args: string[] } {
  const explicit = s.command.map((x) => x.trim()).filter(Boolean);
  if (explicit.length) return { command: explicit[0], args: explicit.slice(1) };
  if (s.python.trim()) return { command: s.python.trim(), args: ["-m", "crank", "serve"] };
  return { command: "crank", args: ["serve"] };
}

/** Where the server's start is, as far as a change of `crank.server.*` is concerned. */
export type StartState = "never" | "starting" | "notInstalled" | "started";

/** What a settings change (or a start that just ended) calls for. */
export type SettingsMove = "nothing" | "startNow" | "offerRestart" | "lookWhenStarted";

/**
 * What to do about the server command the settings give `now`, given the command line
 * the last start `tried`. VS Code promises no order between an extension's activation
 * and the user's settings reaching its host: in a reloaded code-server window the
 * User settings can arrive after the first start read them (a change event follows),
 * even while that start is still under way (its event comes before it has decided).
 * So every change, and the end of every start, compares the two: a start that found no
 * server tries the new command at once; a running one offers a restart; a start under
 * way looks again when it ends. The same line is nothing, whatever the event says.
 */
export function afterServerSettings(state: StartState, tried: string | undefined, now: string): SettingsMove {
  if (state === "never" || tried === undefined || tried === now) return "nothing";
  if (state === "starting") return "lookWhenStarted";
  return state === "notInstalled" ? "startNow" : "offerRestart";
}

/** A server command (argv split as `serverCommand` gives it). */
export interface ServerCommand {
  command: string;
  args: string[];
}

/**
 * The server command to use when the settings' one is not found: the last one the
 * user's own settings (the User layer, never a workspace's) started successfully, when
 * this window's settings name no server at all and that command still exists. In
 * code-server a reloaded window sometimes loads no User settings whatever (VS Code's
 * web workbench reads User/settings.json once at start-up and takes a failed read as
 * an empty file, re-reading it only when the file changes), so no settings change event
 * ever brings `crank.server.python` back; the command it gave last time is the user's
 * choice all the same. Undefined: report "not found" as it is.
 */
export function rememberedCommand(settings: Pick<CrankSettings, "command" | "python">, remembered: ServerCommand | undefined, exists: (command: string) => boolean): ServerCommand | undefined {
  if (settings.command.some((x) => x.trim()) || settings.python.trim()) return undefined; // the settings chose: they are right
  if (!remembered || typeof remembered.command !== "string" || !Array.isArray(remembered.args)) return undefined;
  return exists(remembered.command) ? { command: remembered.command, args: remembered.args.map(String) } : undefined;
}

/** A server command as one line, for comparing and for messages. */
export function commandLine(s: Pick<CrankSettings, "command" | "python">): string {
  const { command, args } = serverCommand(s);
  return [command, ...args].join(" ");
}

/**
 * The absolute path a command resolves to on PATH, or undefined when it cannot run.
 * Checked before launching so a missing server gets a "how to install" message rather
 * than a languageclient stack trace.
 */
export function findExecutable(command: string, envPath = process.env.PATH ?? "", platform = process.platform): string | undefined {
  const exts = platform === "win32" ? ["", ".exe", ".cmd", ".bat"] : [""];
  const isExec = (p: string) => {
    try {
      accessSync(p, platform === "win32" ? constants.F_OK : constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (command.includes("/") || command.includes("\\")) return exts.map((e) => command + e).find(isExec);
  for (const dir of envPath.split(path.delimiter).filter(Boolean)) {
    const hit = exts.map((e) => path.join(dir, command + e)).find(isExec);
    if (hit) return hit;
  }
  return undefined;
}

/** `initializationOptions.crank`: only what the user set, so the server's own fallbacks apply. */
export function initOptions(s: CrankSettings, apiKey: string | undefined, trusted: boolean): CrankInitOptions {
  const provider: NonNullable<CrankInitOptions["provider"]> = {};
  if (s.api) provider.api = s.api;
  if (s.baseUrl) provider.baseUrl = s.baseUrl;
  if (s.model) provider.model = s.model;
  if (s.contextWindow && s.contextWindow > 0) provider.contextWindow = s.contextWindow;
  if (apiKey) provider.apiKey = apiKey;
  const out: CrankInitOptions = { trusted };
  if (s.permissionMode) out.permissionMode = s.permissionMode;
  if (Object.keys(provider).length) out.provider = provider;
  if (s.sessionDir) out.sessionDir = s.sessionDir;
  // Only a choice that differs from the server's default, so the user config file still applies.
  if ((s.sandboxMode && s.sandboxMode !== "workspace-write") || s.sandboxNetwork) {
    out.sandbox = { mode: s.sandboxMode ?? "workspace-write", network: s.sandboxNetwork ?? false };
  }
  if (s.mcpServers) out.mcpServers = s.mcpServers;
  if (s.mcpStart) out.mcpStart = s.mcpStart;
  return out;
}

/** A copy safe to print: the API key replaced. */
export function redacted(o: CrankInitOptions): CrankInitOptions {
  if (!o.provider?.apiKey) return o;
  return { ...o, provider: { ...o.provider, apiKey: "<redacted>" } };
}

/**
 * What to tell a user whose platform cannot run the server itself, or undefined. On
 * Windows the server needs WSL (process groups, the command sandbox): saying so beats
 * "the server process exited".
 */
export function platformNote(platform: string = process.platform): string | undefined {
  if (platform !== "win32") return undefined;
  return "On Windows the Crank server runs inside WSL: open this folder with the WSL extension (\"WSL: Reopen Folder in WSL\") and install Crank there.";
}

export const INSTALL_HELP = `# Installing the Crank server

The extension starts the Crank server (\`crank serve\`), a Python program. It was not found.

1. Install Python 3.11 or newer.
2. Install Crank into an environment, for example from a checkout of the repository:

   \`\`\`sh
   python3 -m venv ~/.crank-venv
   ~/.crank-venv/bin/pip install /path/to/crank
   \`\`\`

3. Either put \`~/.crank-venv/bin\` on your PATH (so \`crank serve\` works), or set
   **Crank › Server: Python** to \`~/.crank-venv/bin/python\` (the extension then runs
   \`python -m crank serve\`), or set **Crank › Server: Command** to the full command.
4. Run **Crank: Set API Key** (or point **Crank › Provider: Base URL** at a local
   OpenAI-compatible server such as Ollama), then **Crank: Restart Server**.
`;
