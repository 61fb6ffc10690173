/**
 * Messages between the extension host and the chat webview. Shared by both sides and
 * by the webview test, which posts these into the page in place of VS Code.
 */
import type { ContextItem, PermissionDecision, PermissionMode } from "../protocol/types";
import type { ChatAction } from "./state";

/** Host to webview: a reducer action, or a UI-only instruction. */
export type HostMessage =
  | { type: "action"; action: ChatAction }
  | { type: "restoreInput"; text: string }
  | { type: "context"; items: { label: string; item: ContextItem }[] }
  | { type: "workspace"; name?: string; folders: number; hidden?: boolean }
  | { type: "prefs"; enterWhileRunning: "steer" | "followUp" };

/** Webview to host. */
export type ViewMessage =
  | { type: "ready" }
  | { type: "resync" }
  | { type: "send"; text: string; mode: "prompt" | "steer" | "followUp" }
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
  | { type: "installHelp" };
