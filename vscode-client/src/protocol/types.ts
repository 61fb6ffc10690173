/**
 * The Crank wire contract (protocol version 1) as TypeScript types.
 *
 * GENERATED from docs/protocol.schema.json by `python -m crank.workspace.schema`
 * (server/crank/workspace/contract.py is the source): do not edit; `./dev test` fails
 * when this file is stale. The client's own declarations are in ./local.ts.
 */

export const PROTOCOL_VERSION = 1;

export interface AbortResult {
  stopReason: "aborted" | "idle";
}

export interface AgentEnd {
  type: "agent_end";
  stopReason: StopReason;
}

/** The last event of every run, exactly once. */
export interface AgentSettled {
  type: "agent_settled";
}

export interface AgentStart {
  type: "agent_start";
}

export interface AssistantMessage {
  role: "assistant";
  content: ContentBlock[];
  stopReason: StopReason;
  usage: Usage;
  model: string;
  timestamp: number;
  errorMessage?: string;
  api?: string;
  errorKind?: ErrorKind;
}

export type AttachedImage = InlineImage | PathImage;

export interface BranchParams {
  workspace?: string;
  sessionId?: string;
  entryId: string;
  summarize?: boolean;
}

export interface BranchResult {
  tip: string | null;
}

export interface ChangedFile {
  /** Workspace-relative; an ignored folder ends in ``/``. */
  path: string;
  status: "added" | "modified" | "deleted";
  byTool: string[];
  restorable: boolean;
  before?: string;
  after?: string;
  reason?: string;
  /** (additive, a run's list) the revert that put this file back, when one did. */
  revertedBy?: string;
  /** (additive, a run's list) ``true``: the user kept this change (``crank/keep``). */
  kept?: boolean;
  /** (additive) lines the change added; absent when not counted (binary, too large). */
  linesAdded?: number;
  /** (additive) lines the change removed; absent exactly when ``linesAdded`` is. */
  linesRemoved?: number;
}

export interface ChangesParams {
  workspace?: string;
  sessionId?: string;
  runId?: string;
}

export interface ChangesResult {
  files: ChangedFile[];
  /** (additive) without ``runId``: each run's own list, oldest first (reverts left out). */
  runs?: RunChangesJson[];
}

/** ``bash``: how the command ended, and where its whole output was saved. */
export interface CommandDetails {
  exitCode: number | null;
  timedOut: boolean;
  fullOutputPath: string | null;
}

/** One entry of ``crank/commands``: typed as ``/name args``; ``name`` has no slash. */
export interface CommandInfo {
  name: string;
  description: string;
  kind: CommandKind;
  argumentHint?: string;
}

export type CommandKind = "builtin" | "skill" | "template" | "mcp";

export interface CommandPreview {
  kind: "command";
  command: string;
}

export interface CommandsChangedParams {
  workspace: string;
}

export interface CommandsResult {
  commands: CommandInfo[];
}

export interface CompactParams {
  workspace?: string;
  sessionId?: string;
  instructions?: string;
}

export interface CompactResult {
  compacted: boolean;
  tokensBefore?: number;
  tokensAfter?: number;
  reason?: string;
}

export interface CompactionEnd {
  type: "compaction_end";
  compacted: boolean;
  error?: string;
}

export type CompactionReason = "threshold" | "overflow" | "manual";

export interface CompactionStart {
  type: "compaction_start";
  reason: CompactionReason;
}

export type ContentBlock = TextBlock | ThinkingBlock | ToolCallBlock;

/** A file (or a range of one) the prompt points at; with ``diagnostics`` (the editor's for that file, ``@problems``), its problems instead of its text. */
export interface ContextItem {
  uri: string;
  range?: Range;
  diagnostics?: LspDiagnostic[];
}

/** The context meter and the session's spend: what ``crank/state`` reports as ``usage`` and what a ``usage_update`` event carries. Defined once here, the lowest layer that uses it. */
export interface ContextUsage {
  contextTokens: number;
  contextWindow: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
}

export type CrankEvent = AgentStart | TurnStart | MessageStart | MessageUpdate | MessageEnd | ToolExecutionStart | ToolExecutionUpdate | ToolExecutionEnd | TurnEnd | AgentEnd | AgentSettled | QueueUpdate | CompactionStart | CompactionEnd | RetryStart | RetryEnd | UsageUpdate | ImagesOmitted | Notice | SystemPromptChanged | SessionChanged | McpChanged;

export interface CurrentModel {
  api: string;
  id: string;
  contextWindow?: number;
  /** The endpoint the model is asked at, credentials taken out (additive): absent while no provider is configured and for the scripted model. What a client checks is listening (Neovim's ``:checkhealth crank``), whichever layer set it. */
  baseUrl?: string;
}

/** Any changing tool whose call the user declined. */
export interface DeclinedDetails {
  declined: boolean;
  reason: string | null;
}

/** New text of one block. Concatenating the deltas of a ``contentIndex`` gives the block's text in its ``message_end``; a tool call's first delta names the call. */
export interface Delta {
  kind: DeltaKind;
  contentIndex: number;
  text: string;
  toolCallId?: string;
  toolName?: string;
}

export type DeltaKind = "text" | "thinking" | "toolCall";

export interface DiagnosticsParams {
  uris: string[];
}

export interface DiagnosticsResult {
  items: FileDiagnostics[];
}

export interface DiffPreview {
  kind: "diff";
  path: string;
  oldText: string;
  newText: string;
  /** The file is open with text the disk does not hold (the user's unsaved edits): the change is saved together with them, so the question says so. */
  unsavedChanges?: boolean;
  /** Set (to the old file's size in bytes) when the old file was too large or not text, so it was not loaded: ``oldText`` is then empty and is NOT the old content (a client must not offer to restore it). */
  oldTextOmitted?: number;
  /** True when the file does not exist yet: ``oldText`` is empty because there is no old file (ACP's diff then says ``oldText: null``). */
  created?: boolean;
}

export type ErrorKind = "rate_limit" | "overloaded" | "server" | "auth" | "invalid_request" | "overflow" | "network" | "timeout";

/** ``crank/event`` params: the event and where it belongs. */
export interface EventParams {
  workspace: string;
  sessionId: string;
  runId?: string;
  seq: number;
  event: CrankEvent;
}

/** ``edit`` and ``write``: the whole file before and after, and the diff shown. */
export interface FileChangeDetails {
  path: string;
  oldText: string;
  newText: string;
  diff: string;
  /** The old file's size in bytes when it was too large or not text to load: ``oldText`` is then empty and is NOT the old content. */
  oldTextOmitted?: number;
}

export interface FileContentParams {
  workspace?: string;
  sessionId?: string;
  sha256: string;
}

export interface FileContentResult {
  sha256: string;
  text: string;
}

export interface FileDiagnostics {
  uri: string;
  diagnostics: LspDiagnostic[];
}

/** An image on a user message or a tool result (``images``). Exactly one of ``data`` (the bytes, base64, inline) and ``sha256`` (a blob stored beside the session file, docs/session.md) says where its bytes are; a request is always built with them inline (or with a placeholder when they cannot be had). */
export interface ImageBlock {
  type: "image";
  /** ``image/png`` | ``image/jpeg`` | ``image/gif`` | ``image/webp`` (agent.images). */
  mimeType: string;
  /** The size of the image itself (decoded), for placeholders and the transcript. */
  bytes: number;
  /** A file name to show (``screenshot.png``); never a path the model can use. */
  name?: string;
  width?: number;
  height?: number;
  data?: string;
  sha256?: string;
}

export interface ImageParams {
  workspace?: string;
  sessionId?: string;
  sha256: string;
}

export interface ImageResult {
  mimeType: string;
  data: string;
  bytes: number;
}

/** Said once per session and model: a request left images out (placeholders stand in for them), because the model takes none or a stored copy is missing. */
export interface ImagesOmitted {
  type: "images_omitted";
  count: number;
  message: string;
}

/** An image attached by value: base64 ``data``. */
export interface InlineImage {
  mimeType: string;
  data: string;
  name?: string;
}

export interface KeepParams {
  workspace?: string;
  sessionId?: string;
  runId: string;
  paths?: string[];
}

export interface KeepResult {
  kept: string[];
  /** The paths not kept, each with why (not changed by the run, put back by a revert). */
  conflicts: RevertConflict[];
}

/** An LSP ``Diagnostic`` as the editor reports it (the fields Crank reads). */
export interface LspDiagnostic {
  range: Range;
  severity?: number;
  message: string;
  source?: string;
  code?: string | number;
}

/** A server started, failed, stopped or changed its tools (``crank/state`` ``mcp``). */
export interface McpChanged {
  type: "mcp_changed";
  servers: McpServerState[];
}

export interface McpServerParams {
  workspace?: string;
  name: string;
  action: "restart" | "disable" | "enable";
}

export interface McpServerResult {
  servers: McpServerState[];
}

/** One server as ``crank/state`` ``mcp`` and the ``mcp_changed`` event list it. */
export interface McpServerState {
  name: string;
  source: "user" | "editor" | "workspace" | "acp";
  transport: "stdio" | "http" | "sse";
  state: "idle" | "starting" | "ready" | "failed" | "disabled";
  /** The names the model sees (``mcp__<server>__<tool>``). */
  tools: string[];
  error?: string;
  pid?: number;
  problems?: string[];
}

export type Message = UserMessage | AssistantMessage | ToolResultMessage;

export interface MessageEnd {
  type: "message_end";
  message: Message;
  /** The message's id in the session file, set by the log's listener. */
  entryId?: string;
}

export interface MessageStart {
  type: "message_start";
  message: Message;
}

export interface MessageUpdate {
  type: "message_update";
  delta: Delta;
}

/** Either of ``limit`` and ``before`` asks for one page of the transcript: at most ``limit`` messages (at least 1; default all) ending before position ``before`` (0-based; default the end, a larger one is taken as the end). A page never begins with a tool result: it starts earlier, at the message holding the call, so it can be a few results longer than ``limit``. */
export interface MessagesParams {
  workspace?: string;
  sessionId?: string;
  limit?: number;
  before?: number;
}

export interface MessagesResult {
  messages: Message[];
  /** Only for a page: the position of its first message in the whole transcript (0: nothing earlier to ask for). */
  start?: number;
  /** Only for a page: how many messages the whole transcript holds. */
  total?: number;
}

/** One entry of ``crank/models``: who lists it, and the window Crank uses for it. */
export interface ModelInfo {
  api: string;
  id: string;
  contextWindow: number;
  source: "server" | "catalog" | "config";
}

export interface ModelRef {
  api: string;
  id: string;
}

export interface ModelsResult {
  models: ModelInfo[];
}

/** One line for the chat, said once: the server cannot call tools, the window was learned from a refusal, the one served model was chosen, folder settings were ignored, a "Fix This File" run left its file unchanged. ``kind`` says which; ``message`` is the text to show. */
export interface Notice {
  type: "notice";
  kind: "tools_unsupported" | "window_learned" | "model_discovered" | "settings_ignored" | "fix_not_applied";
  message: string;
}

export interface OpenSessionParams {
  workspace?: string;
  sessionId: string;
}

/** An image attached by a path the server reads (inside the workspace). */
export interface PathImage {
  path: string;
  name?: string;
}

export interface PathPreview {
  kind: "path";
  path: string;
}

export type PermissionDecision = "allow" | "allowSession" | "allowAlways" | "reject";

export type PermissionMode = "ask" | "autoEdit" | "auto" | "readOnly";

/** ``crank/requestPermission`` params: one tool call the user is asked about. */
export interface PermissionRequest {
  workspace: string;
  sessionId: string;
  runId: string;
  toolCallId: string;
  /** The tool, or the pseudo tool ``outside`` for a path outside the workspace. */
  toolName: string;
  arguments: Record<string, unknown>;
  preview?: Preview;
  /** What to know before answering, for a person: the command would run unconfined, a remembered rule names the program but does not cover this command, or both. */
  warning?: string;
  /** True when the command would run unconfined (the sandbox is wanted but missing); ``warning`` then says so. A client that decides by itself reads this, not ``warning``. */
  unconfined?: boolean;
}

/** ``crank/requestPermission`` result. */
export interface PermissionResponse {
  decision: PermissionDecision;
  reason?: string;
}

export interface Position {
  line: number;
  character: number;
}

export type Preview = DiffPreview | CommandPreview | PathPreview;

export interface PromptParams {
  workspace?: string;
  sessionId?: string;
  text: string;
  context?: ContextItem[];
  images?: AttachedImage[];
  whileRunning?: WhileRunning;
}

/** A run started (``runId``), a message queued (``queued``), or a built-in command performed (``command`` and ``result``, what that command's own request answers). */
export interface PromptResult {
  sessionId: string;
  runId?: string;
  queued?: "steer" | "followUp";
  command?: string;
  result?: unknown;
  /** A sentence: the model takes no images, so the prompt's were left out. */
  imagesOmitted?: string;
}

export type QueueKind = "steering" | "followUp";

/** ``crank/steer`` and ``crank/followUp``. */
export interface QueueParams {
  workspace?: string;
  sessionId?: string;
  text: string;
  images?: AttachedImage[];
}

/** The queues after ``crank/steer`` or ``crank/followUp``. */
export interface QueueResult {
  steering: string[];
  followUp: string[];
  imagesOmitted?: string;
}

/** Both queues as the wire shows them (``queue_update``, ``crank/state`` queue). */
export interface QueueState {
  steering: string[];
  followUp: string[];
}

export interface QueueUpdate {
  steering: string[];
  followUp: string[];
  type: "queue_update";
}

/** An LSP range (UTF-16 positions). */
export interface Range {
  start: Position;
  end: Position;
}

/** ``read``: which file, and whether the text came from an open editor buffer. */
export interface ReadDetails {
  path: string;
  openInEditor: boolean;
  /** The buffer holds text the disk does not (the user's unsaved edits). */
  unsaved: boolean;
}

export interface RemoveQueuedParams {
  workspace?: string;
  sessionId?: string;
  queue: QueueKind;
  index: number;
  text?: string;
}

export interface RemoveQueuedResult {
  steering: string[];
  followUp: string[];
  /** The text taken out, or null when it was already gone (taken by the run). */
  removed: string | null;
}

export type ResultShown = "first_line" | "last_lines" | "line_count" | "joined";

export interface RetryEnd {
  type: "retry_end";
  attempt: number;
  success: boolean;
}

/** The vendor is about to wait ``delayMs`` and try again (nothing streamed yet). */
export interface RetryStart {
  type: "retry_start";
  attempt: number;
  delayMs: number;
  error: string;
}

export interface RevertConflict {
  path: string;
  reason: string;
}

export interface RevertParams {
  workspace?: string;
  sessionId?: string;
  runId: string | string[];
  paths?: string[];
  force?: boolean;
}

export interface RevertResult {
  reverted: string[];
  conflicts: RevertConflict[];
  revertId?: string;
}

export interface RunChangesJson {
  runId: string;
  files: ChangedFile[];
}

export type SandboxMode = "read-only" | "workspace-write" | "off";

/** How the agent's commands are confined (docs/protocol.md "Sandbox"). */
export interface SandboxState {
  mode: SandboxMode;
  network: boolean;
  available: boolean;
  confined: boolean;
  detail: string;
}

export interface SaveDocumentParams {
  uri: string;
  /** The document also held the user's unsaved edits, which this save writes too. */
  unsavedChanges?: boolean;
}

export interface SaveDocumentResult {
  saved: boolean;
  reason?: string;
}

/** The workspace's active session is another one now (new, opened). */
export interface SessionChanged {
  type: "session_changed";
  sessionId: string;
}

export type SessionEnd = "error" | "aborted";

/** One line of the session list (``crank/sessions``, ``crank sessions list``): what a picker shows, read without parsing the whole file. Not a summary of the content. */
export interface SessionInfo {
  sessionId: string;
  title: string;
  created: string;
  modified: string;
  messageCount: number;
  firstMessage: string;
  /** The last line is incomplete; ``crank sessions repair`` the file before writing. */
  torn?: boolean;
  /** The file cannot be listed (bad header); it is shown, never silently left out. */
  error?: string;
  ended?: SessionEnd;
}

/** A request about the active session may name it; another id is refused (1002). */
export interface SessionParams {
  workspace?: string;
  sessionId?: string;
}

/** ``crank/newSession`` and ``crank/openSession``. */
export interface SessionResult {
  sessionId: string;
}

export interface SessionsResult {
  sessions: SessionInfo[];
}

export interface SetModelParams {
  workspace?: string;
  sessionId?: string;
  api: string;
  id: string;
}

export interface SetModelResult {
  model: ModelRef;
}

export interface SetPermissionModeParams {
  workspace?: string;
  mode: PermissionMode;
}

export interface SetPermissionModeResult {
  mode: PermissionMode;
}

/** One entry of the source map, as ``crank/systemPrompt`` returns it. */
export interface Source {
  kind: SourceKind;
  path?: string;
  name?: string;
  reason?: string;
}

export type SourceKind = "tool" | "contextFile" | "skill" | "setting" | "skipped";

export interface StateResult {
  sessionId: string;
  running: boolean;
  /** Only while a run is active. */
  runId?: string;
  model: CurrentModel;
  permissionMode: PermissionMode;
  trusted: boolean;
  sandbox: SandboxState;
  queue: QueueState;
  usage: ContextUsage;
  sessionFile: string;
  /** The last seq the server sent for the session (from 0 again in a new process). */
  seq: number;
  /** Only while no provider is configured: what to set. */
  configError?: string;
  viewRepairs?: ViewRepairs;
  /** Whether the session has more than one branch (an entry went back: ``crank/branch``), so a client need not read ``crank/tree`` to list one. Absent when only reading the history an open left unread would tell (a compaction written before ``forkedBefore``), and from a server before it. */
  branched?: boolean;
  /** The tools the next run offers, each as it describes itself. */
  tools?: ToolInfoJson[];
  /** Only when an MCP server is configured (docs/mcp.md). */
  mcp?: McpServerState[];
}

export type StopReason = "stop" | "toolUse" | "length" | "error" | "aborted";

/** The prompt for the next run was rebuilt (its bytes changed). */
export interface SystemPromptChanged {
  type: "system_prompt_changed";
  hash: string;
  sources: Array<Record<string, unknown>>;
}

export interface SystemPromptResult {
  text: string;
  hash: string;
  sources: Source[];
}

export interface TextBlock {
  type: "text";
  text: string;
}

export interface ThinkingBlock {
  type: "thinking";
  thinking: string;
  /** Opaque provider token; Anthropic needs it sent back unchanged. */
  signature?: string;
  /** Reasoning the provider encrypted (Anthropic ``redacted_thinking``): opaque data, never shown, sent back unchanged; ``thinking`` is then empty. */
  redacted?: string;
}

export interface ToolCallBlock {
  type: "toolCall";
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ToolExecutionEnd {
  type: "tool_execution_end";
  toolCallId: string;
  result: ToolOutcome;
}

export interface ToolExecutionStart {
  type: "tool_execution_start";
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
}

export interface ToolExecutionUpdate {
  type: "tool_execution_update";
  toolCallId: string;
  /** Only what is new since the last update. */
  output: string;
}

/** What a tool says about itself (``crank.agent.tools.ToolInfo``), so a client never matches tool names: its kind (ACP's vocabulary), a label, which argument says what a call does, how its result is summed up, whether it changes files through the edit path, and the name of its ``details`` type in this schema. */
export interface ToolInfoJson {
  name: string;
  kind: ToolKind;
  label: string;
  shows?: string;
  result: ResultShown;
  editsFiles: boolean;
  details?: string;
}

export type ToolKind = "read" | "edit" | "delete" | "move" | "search" | "execute" | "think" | "fetch" | "other";

export interface ToolOutcome {
  content: string;
  isError: boolean;
  /** For clients (a diff, a saved-output path); never sent to the model. */
  details?: Record<string, unknown>;
}

export interface ToolResultMessage {
  role: "toolResult";
  toolCallId: string;
  toolName: string;
  content: string;
  isError: boolean;
  timestamp: number;
  /** Images the tool returned (``read`` of an image file), after the text. */
  images?: ImageBlock[];
}

/** One entry of the session file's tree, in file order. */
export interface TreeEntry {
  id: string;
  parentId: string | null;
  type: string;
  role?: string;
  preview?: string;
  label?: string;
}

export interface TreeResult {
  tip: string | null;
  entries: TreeEntry[];
}

export interface TurnEnd {
  type: "turn_end";
  message: AssistantMessage;
}

export interface TurnStart {
  type: "turn_start";
  /** 1-based within the run. */
  turn: number;
}

export interface Usage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  /** US dollars for this one reply, when the model's prices are known. */
  cost?: number;
}

export interface UsageUpdate {
  contextTokens: number;
  contextWindow: number;
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  cost: number;
  type: "usage_update";
}

export interface UserMessage {
  role: "user";
  content: string;
  timestamp: number;
  /** Images sent with the text, after it, in order. */
  images?: ImageBlock[];
  /** What the user typed when ``content`` is its expansion (a ``/command``): clients show this, the model is sent ``content``. */
  typed?: string;
}

/** What the view repaired on the way from the record to the model's request. */
export interface ViewRepairs {
  interruptedResults: number;
  droppedOrphanResults: number;
  droppedDuplicateResults: number;
  droppedEmptyReplies: number;
}

export type WhileRunning = "steer" | "followUp" | "reject";

/** Every ``crank/*`` request may name its workspace folder (its URI); it may be left out when only one folder is open. */
export interface WorkspaceParams {
  workspace?: string;
}

/** Every request a client sends: its params and its result. */
export interface Requests {
  "crank/prompt": { params: PromptParams; result: PromptResult };
  "crank/commands": { params: WorkspaceParams; result: CommandsResult };
  "crank/steer": { params: QueueParams; result: QueueResult };
  "crank/followUp": { params: QueueParams; result: QueueResult };
  "crank/clearQueue": { params: SessionParams; result: QueueState };
  "crank/removeQueued": { params: RemoveQueuedParams; result: RemoveQueuedResult };
  "crank/abort": { params: SessionParams; result: AbortResult };
  "crank/state": { params: SessionParams; result: StateResult };
  "crank/messages": { params: MessagesParams; result: MessagesResult };
  "crank/image": { params: ImageParams; result: ImageResult };
  "crank/sessions": { params: WorkspaceParams; result: SessionsResult };
  "crank/newSession": { params: WorkspaceParams; result: SessionResult };
  "crank/openSession": { params: OpenSessionParams; result: SessionResult };
  "crank/tree": { params: SessionParams; result: TreeResult };
  "crank/branch": { params: BranchParams; result: BranchResult };
  "crank/compact": { params: CompactParams; result: CompactResult };
  "crank/models": { params: WorkspaceParams; result: ModelsResult };
  "crank/setModel": { params: SetModelParams; result: SetModelResult };
  "crank/systemPrompt": { params: WorkspaceParams; result: SystemPromptResult };
  "crank/setPermissionMode": { params: SetPermissionModeParams; result: SetPermissionModeResult };
  "crank/changes": { params: ChangesParams; result: ChangesResult };
  "crank/revert": { params: RevertParams; result: RevertResult };
  "crank/keep": { params: KeepParams; result: KeepResult };
  "crank/fileContent": { params: FileContentParams; result: FileContentResult };
  "crank/mcpServer": { params: McpServerParams; result: McpServerResult };
}

/** Every request the server sends the client: its params and the answer it expects. */
export interface ServerRequests {
  "crank/requestPermission": { params: PermissionRequest; result: PermissionResponse };
  "crank/saveDocument": { params: SaveDocumentParams; result: SaveDocumentResult };
  "crank/diagnostics": { params: DiagnosticsParams; result: DiagnosticsResult };
}

/** Every notification the server sends: its params. */
export interface Notifications {
  "crank/event": { params: EventParams };
  "crank/commandsChanged": { params: CommandsChangedParams };
}

/** Every event's `type`, as `crank/event` carries it. */
export type EventType = CrankEvent["type"];

export * from "./local";
