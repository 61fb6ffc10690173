/**
 * What the status bar item says, from the server's status and the runs' events: one
 * pure function and a small tracker, so the rules are unit-tested without VS Code.
 * The tracker also answers "is anything running?" for the `crank.running` context key
 * that Stop's keybinding and menu entries are bound to.
 */
import type { EventParams, ContextUsage } from "../protocol/types";
import type { ServerStatus } from "./state";

/**
 * What a model is called on screen: a local server that names its model by the file it
 * loaded (llama-server's id is the `-m` path) shows the file's name; anything else its
 * id. The id itself is what is sent and kept.
 */
export function modelLabel(id: string): string {
  return /^(\/|~\/|[A-Za-z]:\\)|\.(gguf|ggml|bin)$/i.test(id) ? id.split(/[\\/]/).pop() || id : id;
}

/** The server's status as the status bar sees it: "idle" is "not started yet" (it starts when first needed). */
export type BarServerStatus = ServerStatus | "idle";

export interface BarInput {
  server: BarServerStatus;
  /** Workspaces (folder URIs) with a run going. */
  running: number;
  /** Workspaces whose run waits for the user to answer a permission question. */
  waiting?: number;
  /** The chat's workspace's last usage report. */
  usage?: Pick<ContextUsage, "contextTokens" | "contextWindow">;
}

export interface BarView {
  text: string;
  tooltip: string;
  /** "error" when the server is missing or stopped (the item gets the error colours). */
  tone: "normal" | "error";
}

function tokens(n: number): string {
  return n >= 1000 ? `${Math.round(n / 100) / 10}k` : String(n);
}

export function statusBarView(s: BarInput): BarView {
  const ctx = s.usage && s.usage.contextWindow > 0 ? Math.min(100, Math.round((100 * s.usage.contextTokens) / s.usage.contextWindow)) : undefined;
  const ctxText = ctx === undefined ? "" : ` ${ctx}%`;
  const ctxTip = s.usage && ctx !== undefined ? `\nContext: ${tokens(s.usage.contextTokens)} of ${tokens(s.usage.contextWindow)} tokens (${ctx}%).` : "";
  const open = "\nClick to open the chat.";
  switch (s.server) {
    case "idle":
      return { text: "$(comment-discussion) Crank", tooltip: `Crank: the server starts when the chat or a command first needs it.${open}`, tone: "normal" };
    case "starting":
      return { text: "$(loading~spin) Crank", tooltip: `Crank: starting the server…${open}`, tone: "normal" };
    case "notInstalled":
      return { text: "$(error) Crank", tooltip: `Crank: the server was not found. The chat says how to install it.${open}`, tone: "error" };
    case "down":
      return { text: "$(error) Crank", tooltip: `Crank: the server is not running.${open}`, tone: "error" };
    case "running":
      if (s.waiting) return { text: `$(bell-dot) Crank${ctxText}`, tooltip: `Crank: waiting for your approval.${ctxTip}${open}`, tone: "normal" };
      if (s.running > 0) return { text: `$(loading~spin) Crank${ctxText}`, tooltip: `Crank: working.${ctxTip}${open}`, tone: "normal" };
      return { text: `$(comment-discussion) Crank${ctxText}`, tooltip: `Crank: idle.${ctxTip}${open}`, tone: "normal" };
  }
}

/** Which workspaces are running, and each workspace's last usage, from the event stream. */
export class RunTracker {
  private readonly running = new Set<string>();
  private readonly usage = new Map<string, ContextUsage>();

  /** Feeds one event; true when what the status bar shows may have changed. */
  onEvent(p: EventParams): boolean {
    const ev = p.event;
    if (ev.type === "agent_start") {
      this.running.add(p.workspace);
      return true;
    }
    if (ev.type === "agent_settled") return this.running.delete(p.workspace) || true;
    if (ev.type === "usage_update") {
      const { type: _t, ...u } = ev;
      this.usage.set(p.workspace, u);
      return true;
    }
    return false;
  }

  /** Set from crank/state (e.g. after a reload, when a run may already be going). */
  setRunning(workspace: string, running: boolean, usage?: ContextUsage): void {
    if (running) this.running.add(workspace);
    else this.running.delete(workspace);
    if (usage) this.usage.set(workspace, usage);
  }

  /** The usage crank/state reports (after a model switch the window changed, and no usage_update says so). */
  setUsage(workspace: string, usage: ContextUsage | undefined): void {
    if (usage) this.usage.set(workspace, usage);
  }

  /** The server went away: nothing runs any more. */
  clear(): void {
    this.running.clear();
  }

  get anyRunning(): boolean {
    return this.running.size > 0;
  }
  get runningCount(): number {
    return this.running.size;
  }
  usageOf(workspace: string | undefined): ContextUsage | undefined {
    return workspace ? this.usage.get(workspace) : undefined;
  }
}
