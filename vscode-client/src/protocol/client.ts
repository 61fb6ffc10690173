/**
 * A thin typed wrapper over a JSON-RPC connection speaking Crank's protocol.
 *
 * It needs only three capabilities (send a request, listen to a notification, answer a
 * request), which both a vscode-jsonrpc MessageConnection and vscode-languageclient's
 * LanguageClient provide. So the extension and the Node integration test drive the
 * server through this same code. It does not import `vscode`.
 */
import type {
  ChangesResult,
  CommandInfo,
  ContextItem,
  DiagnosticsParams,
  DiagnosticsResult,
  EventParams,
  ImageResult,
  McpServerState,
  MessagesResult,
  ModelInfo,
  KeepResult,
  ModelRef,
  PermissionMode,
  PermissionRequest,
  PermissionResponse,
  PromptImage,
  PromptResult,
  Queue,
  RevertResult,
  SaveDocumentParams,
  SaveDocumentResult,
  SessionInfo,
  StateResult,
  SystemPromptResult,
  TreeResult,
  WhileRunning,
} from "./types";

export interface Disposable { dispose(): void }

/** The part of a JSON-RPC connection this client uses. */
export interface RpcChannel {
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onRequest(method: string, handler: (params: any, token?: Cancellation) => unknown): Disposable;
}

/** The part of a JSON-RPC cancellation token this client reads (vscode-jsonrpc's CancellationToken). */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): unknown;
}

/** Which workspace (and optionally session) a request acts on. */
export interface Target { workspace?: string; sessionId?: string }

export const Methods = {
  prompt: "crank/prompt",
  steer: "crank/steer",
  followUp: "crank/followUp",
  clearQueue: "crank/clearQueue",
  removeQueued: "crank/removeQueued",
  abort: "crank/abort",
  state: "crank/state",
  messages: "crank/messages",
  sessions: "crank/sessions",
  newSession: "crank/newSession",
  openSession: "crank/openSession",
  tree: "crank/tree",
  branch: "crank/branch",
  models: "crank/models",
  setModel: "crank/setModel",
  systemPrompt: "crank/systemPrompt",
  setPermissionMode: "crank/setPermissionMode",
  mcpServer: "crank/mcpServer",
  event: "crank/event",
  requestPermission: "crank/requestPermission",
  saveDocument: "crank/saveDocument",
  commands: "crank/commands",
  commandsChanged: "crank/commandsChanged",
  image: "crank/image",
  changes: "crank/changes",
  revert: "crank/revert",
  keep: "crank/keep",
  fileContent: "crank/fileContent",
  diagnostics: "crank/diagnostics",
} as const;

/** Drop undefined fields so the wire carries only what the caller said. */
function params(obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out[k] = v;
  return out;
}

export class CrankClient {
  constructor(private readonly rpc: RpcChannel) {}

  prompt(t: Target & { text: string; context?: ContextItem[]; images?: PromptImage[]; whileRunning?: WhileRunning }): Promise<PromptResult> {
    return this.rpc.sendRequest(Methods.prompt, params({ ...t }));
  }
  steer(t: Target & { text: string }): Promise<Queue> {
    return this.rpc.sendRequest(Methods.steer, params({ ...t }));
  }
  followUp(t: Target & { text: string }): Promise<Queue> {
    return this.rpc.sendRequest(Methods.followUp, params({ ...t }));
  }
  clearQueue(t: Target = {}): Promise<Queue> {
    return this.rpc.sendRequest(Methods.clearQueue, params({ ...t }));
  }
  abort(t: Target = {}): Promise<{ stopReason: "aborted" | "idle" }> {
    return this.rpc.sendRequest(Methods.abort, params({ ...t }));
  }
  state(t: Target = {}): Promise<StateResult> {
    return this.rpc.sendRequest(Methods.state, params({ ...t }));
  }
  /** The transcript, or with `limit` / `before` one page of it (with `start` and `total`). */
  messages(t: Target & { limit?: number; before?: number } = {}): Promise<MessagesResult> {
    return this.rpc.sendRequest(Methods.messages, params({ ...t }));
  }
  sessions(t: { workspace?: string } = {}): Promise<{ sessions: SessionInfo[] }> {
    return this.rpc.sendRequest(Methods.sessions, params({ ...t }));
  }
  newSession(t: { workspace?: string } = {}): Promise<{ sessionId: string }> {
    return this.rpc.sendRequest(Methods.newSession, params({ ...t }));
  }
  openSession(t: { workspace?: string; sessionId: string }): Promise<{ sessionId: string }> {
    return this.rpc.sendRequest(Methods.openSession, params({ ...t }));
  }
  tree(t: Target = {}): Promise<TreeResult> {
    return this.rpc.sendRequest(Methods.tree, params({ ...t }));
  }
  /** Go back to `entryId` (the session continues from there); refused with 1006 while running. */
  branch(t: Target & { entryId: string; summarize?: boolean }): Promise<{ tip: string }> {
    return this.rpc.sendRequest(Methods.branch, params({ ...t }));
  }
  models(t: { workspace?: string } = {}): Promise<{ models: ModelInfo[] }> {
    return this.rpc.sendRequest(Methods.models, params({ ...t }));
  }
  setModel(t: Target & ModelRef): Promise<{ model: ModelRef }> {
    return this.rpc.sendRequest(Methods.setModel, params({ ...t }));
  }
  systemPrompt(t: { workspace?: string } = {}): Promise<SystemPromptResult> {
    return this.rpc.sendRequest(Methods.systemPrompt, params({ ...t }));
  }
  setPermissionMode(t: { workspace?: string; mode: PermissionMode }): Promise<{ mode: PermissionMode }> {
    return this.rpc.sendRequest(Methods.setPermissionMode, params({ ...t }));
  }
  /** crank/mcpServer: restart, disable or enable one MCP server (docs/mcp.md). */
  mcpServer(t: { workspace?: string; name: string; action: "restart" | "disable" | "enable" }): Promise<{ servers: McpServerState[] }> {
    return this.rpc.sendRequest(Methods.mcpServer, params({ ...t }));
  }

  /**
   * Remove one queued message (crank/removeQueued). The text travels with the index so
   * the server never removes the wrong message when the run drained the queue meanwhile;
   * `removed` is null when the message was already gone. Returns the queues as they stand.
   */
  async removeQueued(t: Target, kind: "steering" | "followUp", index: number, text?: string): Promise<Queue> {
    const answer = await this.rpc.sendRequest<Queue & { removed: string | null }>(
      Methods.removeQueued,
      params({ ...t, queue: kind, index, text }),
    );
    return { steering: answer.steering, followUp: answer.followUp };
  }

  /** The commands the user can type as `/name args` (built-ins, skills, templates), in the server's order. */
  commands(t: { workspace?: string } = {}): Promise<{ commands: CommandInfo[] }> {
    return this.rpc.sendRequest(Methods.commands, params({ ...t }));
  }
  /**
   * A stored image's bytes (crank/image): only a blob a message of the session refers
   * to; error 1009 (no_such_image) when none does or the blob is missing.
   */
  image(t: Target & { sha256: string }): Promise<ImageResult> {
    return this.rpc.sendRequest(Methods.image, params({ ...t }));
  }
  /** What one run (or, without runId, the whole session) changed in the workspace. */
  changes(t: Target & { runId?: string }): Promise<ChangesResult> {
    return this.rpc.sendRequest(Methods.changes, params({ ...t }));
  }
  /** Put the run's files (or `paths`) back as they were before it; a file changed since is a conflict unless `force`. */
  revert(t: Target & { runId: string | string[]; paths?: string[]; force?: boolean }): Promise<RevertResult> {
    return this.rpc.sendRequest(Methods.revert, params({ ...t }));
  }
  /** The user accepts the run's change to `paths` (all its pending files without them): recorded in the session, nothing on disk changes. */
  keep(t: Target & { runId: string; paths?: string[] }): Promise<KeepResult> {
    return this.rpc.sendRequest(Methods.keep, params({ ...t }));
  }
  /** A kept before/after content of the session's changes, for a diff view. */
  fileContent(t: Target & { sha256: string }): Promise<{ sha256: string; text: string }> {
    return this.rpc.sendRequest(Methods.fileContent, params({ ...t }));
  }
  /** crank/commandsChanged: the list for `workspace` changed (a skill or template was added, removed, trust granted). */
  onCommandsChanged(handler: (p: { workspace: string }) => void): Disposable {
    return this.rpc.onNotification(Methods.commandsChanged, handler);
  }

  onEvent(handler: (p: EventParams) => void): Disposable {
    return this.rpc.onNotification(Methods.event, handler);
  }

  /**
   * Install the one handler that answers the server's permission requests. `cancelled`
   * fires when the server withdraws the question (`$/cancelRequest`: the run was
   * aborted), so the handler can close its prompt instead of leaving it open and stale.
   */
  onPermissionRequest(handler: (p: PermissionRequest, cancelled: (listener: () => void) => void) => Promise<PermissionResponse>): Disposable {
    return this.rpc.onRequest(Methods.requestPermission, (p: PermissionRequest, token?: Cancellation) =>
      handler(p, (listener) => {
        if (!token) return;
        if (token.isCancellationRequested) listener();
        else token.onCancellationRequested(listener);
      }),
    );
  }

  /** Install the one handler that answers crank/diagnostics (see diagnostics.ts). */
  onDiagnostics(handler: (p: DiagnosticsParams) => DiagnosticsResult | Promise<DiagnosticsResult>): Disposable {
    return this.rpc.onRequest(Methods.diagnostics, (p: DiagnosticsParams) => handler(p));
  }

  /** Install the one handler that answers crank/saveDocument (see save.ts). */
  onSaveDocument(handler: (p: SaveDocumentParams) => Promise<SaveDocumentResult>): Disposable {
    return this.rpc.onRequest(Methods.saveDocument, (p: SaveDocumentParams) => handler(p));
  }
}

/**
 * The `capabilities.experimental` block a client sends to get events and permission
 * requests, and to be asked to save the documents the agent changed (saveDocuments:
 * only a client that installs `onSaveDocument` may declare it).
 */
export const experimentalCapabilities = { crank: { events: true, permissionRequests: true, saveDocuments: true, diagnostics: true } };
