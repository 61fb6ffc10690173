/**
 * Messages between the extension host and the chat webview. Shared by both sides and
 * by the webview test, which posts these into the page in place of VS Code.
 */
import { IMAGE_MIME_TYPES, type CommandInfo, type ContextItem, type PermissionDecision, type PermissionMode, type PromptImage } from "../protocol/types";
import type { ChatAction } from "./state";
import type { BranchInfo } from "./branches";
import { isSha256, type FetchedImage } from "./images";
import { isMcpAction, type McpAction } from "./mcp";

/** Host to webview: a reducer action, or a UI-only instruction. */
export type HostMessage =
  | { type: "action"; action: ChatAction }
  /** Text (and images) that did not go after all: put back in the composer, nothing lost. */
  | { type: "restoreInput"; text: string; images?: PromptImage[] }
  | { type: "context"; items: { label: string; item: ContextItem }[] }
  | { type: "workspace"; name?: string; folders: number; hidden?: boolean }
  | { type: "prefs"; enterWhileRunning: "steer" | "followUp" }
  /** Images the user picked with the host's file dialog, to attach to the next prompt. */
  | { type: "addImages"; images: PromptImage[] }
  /** The session's branches (crank/tree), oldest first; the list shows when there is more than one. */
  | { type: "branches"; branches: BranchInfo[] }
  /** The commands `/` completes (crank/commands for the chat's workspace); empty when the server has none. */
  | { type: "commands"; commands: CommandInfo[] }
  /** crank/image's answer for a stored image the page asked for (or why it cannot be shown). */
  | { type: "image"; sessionId?: string; sha256: string; answer: FetchedImage }
  /**
   * The unsent draft as the host keeps it, sent when the page is (re)loaded: the host owns
   * it. The page's own saved state may be lost (code-server's window reload) or stale (an
   * old copy that still holds images sent since); the page shows the host's.
   */
  | { type: "draft"; text: string; images: PromptImage[] }
  /** The host stored the draft the page sent last. */
  | { type: "draftSaved" }
  /** The page's `mcpServer` request for this server got its answer (the row's buttons work again). */
  | { type: "mcpDone"; name: string };

/** Webview to host. */
export type ViewMessage =
  | { type: "ready" }
  | { type: "resync" }
  | { type: "send"; text: string; mode: "prompt" | "steer" | "followUp"; images?: PromptImage[] }
  /** Open the host's file dialog for images to attach. */
  | { type: "attachImage" }
  | { type: "abort" }
  | { type: "removeQueued"; kind: "steering" | "followUp"; index: number; text?: string }
  | { type: "permission"; id: string; decision: PermissionDecision; reason?: string }
  | { type: "newSession" }
  | { type: "openSession"; sessionId: string }
  | { type: "listSessions" }
  | { type: "setModel"; api: string; id: string }
  | { type: "setPermissionMode"; mode: PermissionMode }
  | { type: "openDiff"; toolCallId: string }
  | { type: "undoEdit"; toolCallId: string }
  | { type: "openFile"; path: string }
  | { type: "restartServer" }
  | { type: "showLog" }
  | { type: "copy"; text: string }
  | { type: "showSystemPrompt" }
  | { type: "addContext" }
  | { type: "removeContext"; index: number }
  | { type: "pickWorkspace" }
  | { type: "installHelp" }
  /** Edit and resend the user message `fromEnd` user messages before the last (0: the last): go back to before it. */
  | { type: "editResend"; fromEnd: number; text: string }
  | { type: "switchBranch"; entryId: string }
  /** Read the transcript's page before position `before` (the chat's `transcriptStart`) of the session shown. */
  | { type: "loadEarlier"; before: number; sessionId?: string }
  /** Fetch a stored image (a `sha256` without `data`) of the session shown, through crank/image. */
  | { type: "image"; sha256: string; sessionId?: string }
  /** The unsent text changed, or the attached images (`images` only then: they can be megabytes): the host keeps them for the workspace. */
  | { type: "draft"; text: string; images?: PromptImage[] }
  /** A button of the chat's MCP line: crank/mcpServer for that server. */
  | { type: "mcpServer"; name: string; action: McpAction }
  /** The diff of one file a run changed (before the run against now). */
  | { type: "changeDiff"; runId: string; path: string }
  /** Undo what a run did to these files (crank/revert); `force` overwrites what changed since. */
  | { type: "undoChanges"; runId: string; paths: string[]; force?: boolean }
  /** Keep what a run did to these files (crank/keep): they leave its list. */
  | { type: "keepChanges"; runId: string; paths: string[] }
  /** Redo a file's change that a revert put back (crank/revert of that revert, for that path). */
  | { type: "redoChange"; runId: string; revertId: string; path: string };

const DECISIONS = new Set(["allow", "allowSession", "allowAlways", "reject"]);
const MODES = new Set(["ask", "autoEdit", "auto", "readOnly"]);
const SEND_MODES = new Set(["prompt", "steer", "followUp"]);
const QUEUES = new Set(["steering", "followUp"]);
const isStr = (v: unknown): v is string => typeof v === "string";
const isIndex = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
const optStr = (v: unknown) => v === undefined || isStr(v);

/** A list of `{mimeType, data, name?}` with a type both APIs take, else undefined. */
export function parseImages(v: unknown): PromptImage[] | undefined {
  if (!Array.isArray(v)) return undefined;
  const out: PromptImage[] = [];
  for (const item of v) {
    if (!item || typeof item !== "object") return undefined;
    const o = item as Record<string, unknown>;
    if (!isStr(o.mimeType) || !IMAGE_MIME_TYPES.includes(o.mimeType) || !isStr(o.data) || !o.data || !optStr(o.name)) return undefined;
    out.push({ mimeType: o.mimeType, data: o.data, ...(isStr(o.name) ? { name: o.name } : {}) });
  }
  return out;
}

/**
 * The page's message checked field by field before the host acts on it. The page runs
 * model output through its renderer, so the host treats what it posts as untrusted: a
 * message of an unknown type, or with a field of the wrong type or value, is refused
 * (undefined) rather than half-applied, and the caller says so in the log.
 */
export function parseViewMessage(m: unknown): ViewMessage | undefined {
  if (!m || typeof m !== "object") return undefined;
  const o = m as Record<string, unknown>;
  switch (o.type) {
    case "ready":
    case "resync":
    case "abort":
    case "newSession":
    case "listSessions":
    case "restartServer":
    case "showLog":
    case "showSystemPrompt":
    case "addContext":
    case "pickWorkspace":
    case "installHelp":
    case "attachImage":
      return { type: o.type };
    case "send": {
      if (!(isStr(o.text) && isStr(o.mode) && SEND_MODES.has(o.mode))) return undefined;
      const images = o.images === undefined ? [] : parseImages(o.images);
      if (images === undefined) return undefined;
      const send: ViewMessage = { type: "send", text: o.text, mode: o.mode as "prompt" | "steer" | "followUp" };
      return images.length ? { ...send, images } : send;
    }
    case "removeQueued":
      return isStr(o.kind) && QUEUES.has(o.kind) && isIndex(o.index) && optStr(o.text)
        ? { type: "removeQueued", kind: o.kind as "steering" | "followUp", index: o.index, ...(isStr(o.text) ? { text: o.text } : {}) }
        : undefined;
    case "permission":
      return isStr(o.id) && isStr(o.decision) && DECISIONS.has(o.decision) && optStr(o.reason)
        ? { type: "permission", id: o.id, decision: o.decision as PermissionDecision, ...(isStr(o.reason) ? { reason: o.reason } : {}) }
        : undefined;
    case "openSession":
      return isStr(o.sessionId) && o.sessionId ? { type: "openSession", sessionId: o.sessionId } : undefined;
    case "setModel":
      return isStr(o.api) && o.api && isStr(o.id) && o.id ? { type: "setModel", api: o.api, id: o.id } : undefined;
    case "setPermissionMode":
      return isStr(o.mode) && MODES.has(o.mode) ? { type: "setPermissionMode", mode: o.mode as PermissionMode } : undefined;
    case "openDiff":
    case "undoEdit":
      return isStr(o.toolCallId) && o.toolCallId ? { type: o.type, toolCallId: o.toolCallId } : undefined;
    case "openFile":
      return isStr(o.path) && o.path ? { type: "openFile", path: o.path } : undefined;
    case "copy":
      return isStr(o.text) ? { type: "copy", text: o.text } : undefined;
    case "removeContext":
      return isIndex(o.index) ? { type: "removeContext", index: o.index } : undefined;
    case "editResend":
      return isIndex(o.fromEnd) && isStr(o.text) ? { type: "editResend", fromEnd: o.fromEnd, text: o.text } : undefined;
    case "switchBranch":
      return isStr(o.entryId) && o.entryId ? { type: "switchBranch", entryId: o.entryId } : undefined;
    case "loadEarlier":
      return isIndex(o.before) && o.before > 0 && optStr(o.sessionId)
        ? { type: "loadEarlier", before: o.before, ...(isStr(o.sessionId) ? { sessionId: o.sessionId } : {}) }
        : undefined;
    case "draft": {
      const images = o.images === undefined ? undefined : parseImages(o.images);
      if (!isStr(o.text) || (o.images !== undefined && !images)) return undefined;
      return images ? { type: "draft", text: o.text, images } : { type: "draft", text: o.text };
    }
    case "mcpServer":
      return isStr(o.name) && o.name && isMcpAction(o.action) ? { type: "mcpServer", name: o.name, action: o.action } : undefined;
    case "changeDiff":
    case "undoChanges":
    case "keepChanges":
    case "redoChange":
      return parseRunChangeMessage(o);
    case "image":
      return isSha256(o.sha256) && optStr(o.sessionId) ? { type: "image", sha256: o.sha256, ...(isStr(o.sessionId) ? { sessionId: o.sessionId } : {}) } : undefined;
    default:
      return undefined;
  }
}

/** `changeDiff` / `redoChange` / `undoChanges` / `keepChanges`: a run id, and a path or a non-empty list of paths (strings). */
function parseRunChangeMessage(o: Record<string, unknown>): ViewMessage | undefined {
  if (!isStr(o.runId) || !o.runId) return undefined;
  if (o.type === "changeDiff") return isStr(o.path) && o.path ? { type: "changeDiff", runId: o.runId, path: o.path } : undefined;
  if (o.type === "redoChange") return isStr(o.path) && o.path && isStr(o.revertId) && o.revertId ? { type: "redoChange", runId: o.runId, revertId: o.revertId, path: o.path } : undefined;
  if (!Array.isArray(o.paths) || !o.paths.length || !o.paths.every((p) => isStr(p) && p)) return undefined;
  if (o.type === "keepChanges") return { type: "keepChanges", runId: o.runId, paths: o.paths as string[] };
  if (!(o.force === undefined || typeof o.force === "boolean")) return undefined;
  return { type: "undoChanges", runId: o.runId, paths: o.paths as string[], ...(o.force ? { force: true } : {}) };
}
