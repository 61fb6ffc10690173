/**
 * The Crank wire contract (protocol version 1) as TypeScript types.
 *
 * Mirrors ../shared/protocol.md: names and shapes are fixed there, so this file only
 * ever grows. Nothing here imports `vscode`; the webview, the extension and the
 * integration test all share it.
 */

export type PermissionMode = "ask" | "autoEdit" | "auto" | "readOnly";
export type WhileRunning = "steer" | "followUp" | "reject";
export type StopReason = "stop" | "toolUse" | "length" | "error" | "aborted";

export interface TextBlock { type: "text"; text: string }
export interface ThinkingBlock { type: "thinking"; thinking: string }
export interface ToolCallBlock { type: "toolCall"; id: string; name: string; arguments: Record<string, unknown> }
export type AssistantBlock = TextBlock | ThinkingBlock | ToolCallBlock;

export interface Usage { input: number; output: number; cacheRead: number; cacheWrite: number }

/**
 * An image on a user message or tool result (docs/protocol.md, "Messages"): `data`
 * (base64) when it is inline, else only `sha256` (stored beside the session file),
 * when a client can show it by name only.
 */
export interface ImageBlock { type: "image"; mimeType: string; bytes?: number; name?: string; width?: number; height?: number; data?: string; sha256?: string; /** The page's own mark (never on the wire): saved without its bytes, which the transcript read after a reload brings back. */ restored?: boolean }
/** What crank/image answers: the blob's bytes in base64 and their count. */
export interface ImageResult { mimeType: string; data: string; bytes: number }
/** An image the user attaches to a prompt (`crank/prompt` `images`). */
export interface PromptImage { mimeType: string; data: string; name?: string }
export const IMAGE_MIME_TYPES: readonly string[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** The server's limit per image (5 MB), checked here too so the user hears at once. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** `typed`: what the user typed when `content` is its expansion (a `/command`); the chat shows it, the model was sent `content`. */
export interface UserMessage { role: "user"; content: string; timestamp?: number | string; typed?: string; images?: ImageBlock[] }
export interface AssistantMessage {
  role: "assistant";
  content: AssistantBlock[];
  stopReason?: StopReason;
  errorMessage?: string;
  usage?: Usage;
  model?: string;
  timestamp?: number | string;
}
export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: string;
  isError: boolean;
  timestamp?: number | string;
  images?: ImageBlock[];
}
export type Message = UserMessage | AssistantMessage | ToolResultMessage;

export interface Queue { steering: string[]; followUp: string[] }

export interface UsageUpdate {
  contextTokens: number;
  contextWindow: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
}

export type DeltaKind = "text" | "thinking" | "toolCall";

export type CrankEvent =
  | { type: "agent_start" }
  | { type: "turn_start"; turn: number }
  | { type: "message_start"; message: Message }
  | { type: "message_update"; delta: { kind: DeltaKind; contentIndex: number; text: string } }
  | { type: "message_end"; message: Message; entryId?: string }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; arguments: Record<string, unknown> }
  | { type: "tool_execution_update"; toolCallId: string; output: string }
  | { type: "tool_execution_end"; toolCallId: string; result: { content: string; isError: boolean } }
  | { type: "turn_end"; message?: Message }
  | { type: "agent_end"; stopReason?: string }
  | { type: "agent_settled" }
  | ({ type: "queue_update" } & Queue)
  | { type: "compaction_start"; reason: "threshold" | "overflow" | "manual" }
  | { type: "compaction_end"; compacted: boolean; error?: string }
  | { type: "retry_start"; attempt: number; delayMs: number; error: string }
  | { type: "retry_end"; attempt: number; success: boolean }
  | ({ type: "usage_update" } & UsageUpdate)
  | { type: "images_omitted"; count: number; message: string }
  | { type: "notice"; kind: string; message: string }
  | { type: "system_prompt_changed"; hash: string; sources: PromptSource[] }
  | { type: "session_changed"; sessionId: string };

export interface EventParams {
  workspace: string;
  sessionId: string;
  runId?: string;
  seq: number;
  event: CrankEvent;
}

export interface PromptSource { kind: string; path?: string }

export interface ContextItem { uri: string; range?: Range }
export interface Range { start: { line: number; character: number }; end: { line: number; character: number } }

/**
 * What crank/prompt answers: a run started (`runId`), a message queued, or, for a
 * built-in command the text named (`/new`, `/compact`, `/model`), `command` (its name)
 * and `result` (what that command's own request would have answered) with no run.
 */
export interface PromptResult { sessionId: string; runId?: string; queued?: "steer" | "followUp"; command?: string; result?: unknown; imagesOmitted?: string }

/** Where a command comes from: one of the server's built-ins, a skill, or a prompt template. */
export type CommandKind = "builtin" | "skill" | "template";
/** One entry of crank/commands: typed as `/name args`; `name` has no slash. */
export interface CommandInfo { name: string; description: string; kind: CommandKind; argumentHint?: string }
export interface ModelRef { api: string; id: string }
/** `source`: "server" (the configured server serves it), "catalog" (a known cloud model), "config". */
export interface ModelInfo extends ModelRef { contextWindow?: number; source?: "server" | "catalog" | "config" }

export interface StateResult {
  sessionId: string;
  running: boolean;
  runId?: string;
  model: ModelRef;
  permissionMode: PermissionMode;
  trusted: boolean;
  /** How the agent's commands are confined (docs/protocol.md "Sandbox"). */
  sandbox?: SandboxState;
  queue: Queue;
  usage: UsageUpdate;
  sessionFile?: string;
  /** The last seq the server sent for the session (it counts from 0 again in a new server process). */
  seq?: number;
}

export type SandboxMode = "workspace-write" | "read-only" | "off";
export interface SandboxState { mode: SandboxMode; network: boolean; available: boolean; confined: boolean; detail: string }

/** One entry of crank/tree: the session file's tree, in file order. */
export interface TreeEntry { id: string; parentId: string | null; type: string; role?: string; preview?: string; label?: string }
export interface TreeResult { tip: string | null; entries: TreeEntry[] }

export interface SessionInfo {
  sessionId: string;
  title?: string;
  created?: string | number;
  modified?: string | number;
  messageCount?: number;
  firstMessage?: string;
}

export interface SystemPromptResult { text: string; hash: string; sources: PromptSource[] }

/**
 * `oldTextOmitted` (the old file's size in bytes) is set when the old file was too large or
 * not text, so the server never loaded it: `oldText` is then empty and is NOT its content.
 * `unsavedChanges`: the file holds the user's unsaved edits, which are saved with the change.
 */
export type DiffPreview = { kind: "diff"; path: string; oldText: string; newText: string; oldTextOmitted?: number; unsavedChanges?: boolean };
export type CommandPreview = { kind: "command"; command: string };

export interface PermissionRequest {
  workspace: string;
  sessionId: string;
  runId: string;
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  preview?: DiffPreview | CommandPreview;
  /** Set when the command would run unconfined (no sandbox on this machine). */
  warning?: string;
}

export type PermissionDecision = "allow" | "allowSession" | "allowAlways" | "reject";
export interface PermissionResponse { decision: PermissionDecision; reason?: string }

/**
 * crank/saveDocument (server to client, only when the client declared
 * `experimental.crank.saveDocuments`): save this open document now, so the agent's
 * next command sees the change it just applied. `unsavedChanges`: the document also
 * held the user's unsaved edits, which are saved with it (tell the user).
 */
export interface SaveDocumentParams { uri: string; unsavedChanges?: boolean }
export interface SaveDocumentResult { saved: boolean; reason?: string }

export interface FixFileArgs { uri: string; diagnostics?: unknown[]; range?: Range; instruction?: string }

/** Crank's own refusals, by name: the numbers are the server's (docs/protocol.md). */
export type ErrorCodeName = "runInProgress" | "noSuchSession" | "noSuchWorkspace" | "noProvider" | "sessionUnreadable" | "refusedWhileRunning" | "sessionLocked" | "noSuchImage";

/**
 * The codes the server advertises in its `initialize` result
 * (`capabilities.experimental.crank.errorCodes`), so the client never copies the
 * numbers; anything malformed is left out.
 */
export function errorCodesFrom(initializeResult: unknown): Partial<Record<ErrorCodeName, number>> {
  const codes = (initializeResult as { capabilities?: { experimental?: { crank?: { errorCodes?: unknown } } } } | undefined)?.capabilities?.experimental?.crank?.errorCodes;
  if (!codes || typeof codes !== "object") return {};
  return Object.fromEntries(Object.entries(codes).filter(([, code]) => Number.isInteger(code))) as Partial<Record<ErrorCodeName, number>>;
}

/** Options the extension puts under initializationOptions.crank. */
export interface CrankInitOptions {
  provider?: { api?: string; baseUrl?: string; model?: string; apiKey?: string; contextWindow?: number; maxOutputTokens?: number };
  sessionDir?: string;
  trusted?: boolean;
  permissionMode?: PermissionMode;
  sandbox?: { mode: SandboxMode; network: boolean };
}
