/**
 * How the extension starts `crank serve` and what it tells it at `initialize`.
 * Plain functions over plain settings (no `vscode`), so the rules are unit-tested.
 */
import { accessSync, constants } from "node:fs";
import * as path from "node:path";
import type { CrankInitOptions, PermissionMode, SandboxMode } from "./types";

export interface CrankSettings {
  command: string[];
  python: string;
  api: string;
  baseUrl: string;
  model: string;
  permissionMode: PermissionMode;
  sessionDir: string;
  sandboxMode?: SandboxMode;
  sandboxNetwork?: boolean;
}

/** The server's argv: the explicit command, else `<python> -m crank serve`, else `crank serve`. */
export function serverCommand(s: Pick<CrankSettings, "command" | "python">): { command: string; args: string[] } {
  const explicit = s.command.map((x) => x.trim()).filter(Boolean);
  if (explicit.length) return { command: explicit[0], args: explicit.slice(1) };
  if (s.python.trim()) return { command: s.python.trim(), args: ["-m", "crank", "serve"] };
  return { command: "crank", args: ["serve"] };
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
  if (apiKey) provider.apiKey = apiKey;
  const out: CrankInitOptions = { trusted, permissionMode: s.permissionMode };
  if (Object.keys(provider).length) out.provider = provider;
  if (s.sessionDir) out.sessionDir = s.sessionDir;
  // Only a choice that differs from the server's default, so the user config file still applies.
  if ((s.sandboxMode && s.sandboxMode !== "workspace-write") || s.sandboxNetwork) {
    out.sandbox = { mode: s.sandboxMode ?? "workspace-write", network: s.sandboxNetwork ?? false };
  }
  return out;
}

/** A copy safe to print: the API key replaced. */
export function redacted(o: CrankInitOptions): CrankInitOptions {
  if (!o.provider?.apiKey) return o;
  return { ...o, provider: { ...o.provider, apiKey: "<redacted>" } };
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
