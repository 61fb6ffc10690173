/**
 * The chat's MCP line: one row per server of `crank/state` `mcp` (kept current by
 * `mcp_changed`), with the actions `crank/mcpServer` takes. Shared by the page (what a
 * row shows and which buttons it has), the host (checking the page's request, then
 * sending it) and the tests. No `vscode` import: it runs in the webview and under node.
 */
import type { McpServerParams, McpServerResult, McpServerState } from "../protocol/types";
import type { ChatAction } from "./state";

export type McpAction = McpServerParams["action"];

/** Each action's button label: a Record, so an action the generated types gain fails the type-check until it has one. */
const BUTTON: Record<McpAction, string> = { restart: "Restart", disable: "Disable", enable: "Enable" };

/** Every action `crank/mcpServer` takes (docs/protocol.md); the page's request is checked against it. */
export const MCP_ACTIONS = Object.keys(BUTTON) as readonly McpAction[];

export function isMcpAction(v: unknown): v is McpAction {
  return typeof v === "string" && (MCP_ACTIONS as readonly string[]).includes(v);
}

export interface McpRow {
  name: string;
  state: McpServerState["state"];
  /** What the row says of the state: a ready server is "running". */
  label: string;
  /** Tools offered and where the server comes from, e.g. "13 tools · editor". */
  detail: string;
  /** Hover text: source, transport, pid, tools left out. */
  title: string;
  pid?: number;
  /** A failed server: the first line of its error... */
  error?: string;
  /** ...and the rest of it, the stderr tail the server kept (shown as written). */
  stderr?: string;
  actions: { action: McpAction; label: string }[];
}

const LABEL: Record<McpServerState["state"], string> = { idle: "starts at the first prompt", ready: "running", starting: "starting…", failed: "failed", disabled: "disabled" };

/** The rows, by name as the server lists them; none when no server is configured. */
export function mcpRows(servers: readonly McpServerState[] | undefined): McpRow[] {
  return (servers ?? []).map(mcpRow);
}

export function mcpRow(s: McpServerState): McpRow {
  const n = s.tools.length;
  const detail = s.state === "ready" ? `${n} tool${n === 1 ? "" : "s"} · ${s.source}` : s.source;
  const title = [`MCP server ${s.name}: ${s.source}, ${s.transport}`, s.pid !== undefined ? `pid ${s.pid}` : "", ...(s.problems ?? [])].filter(Boolean).join("\n");
  const row: McpRow = { name: s.name, state: s.state, label: LABEL[s.state], detail, title, actions: actionsFor(s.state) };
  if (s.pid !== undefined) row.pid = s.pid;
  if (s.state === "failed") {
    const text = s.error ?? "no reason given";
    const cut = text.indexOf("\n");
    row.error = cut < 0 ? text : text.slice(0, cut);
    if (cut >= 0 && text.slice(cut + 1).trim()) row.stderr = text.slice(cut + 1);
  }
  return row;
}

function actionsFor(state: McpServerState["state"]): McpRow["actions"] {
  const which: McpAction[] = state === "disabled" ? ["enable"] : state === "starting" ? ["disable"] : ["restart", "disable"];
  return which.map((action) => ({ action, label: BUTTON[action] }));
}

/** The part of the extension's client the host needs for the line's actions. */
export interface McpClient {
  mcpServer(t: { workspace?: string; name: string; action: McpAction }): Promise<McpServerResult>;
}

/**
 * The host's handling of a row's button: `crank/mcpServer`, then what the page is told.
 * The servers' list in the answer replaces the page's (the `mcp_changed` events say the
 * same, and the notices come from those); a refusal (an unknown name, a server without
 * the request) is an error line naming the server and the action. Always one answer,
 * so the page can enable the row's buttons again.
 */
export async function runMcpAction(client: McpClient, workspace: string | undefined, name: string, action: McpAction): Promise<ChatAction> {
  try {
    const { servers } = await client.mcpServer({ workspace, name, action });
    return { type: "mcp", servers: Array.isArray(servers) ? servers : [] };
  } catch (err) {
    const why = (err as { message?: string })?.message ?? String(err);
    return { type: "notice", level: "error", text: `MCP server ${name}: ${action} failed: ${why}` };
  }
}
