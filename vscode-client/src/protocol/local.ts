/**
 * The client's own declarations beside the generated wire types (./types.ts re-exports
 * this file): constants and helpers, and the few shapes that never travel on Crank's
 * wire (the page's own marks, VS Code's initialization options, command arguments).
 */
import type { ContextUsage, ImageBlock as WireImageBlock, InlineImage, QueueState, Range } from "./types";

/** An image as the page holds it: the wire's, plus `restored`, the page's own mark (never on the wire): saved without its bytes, which the transcript read after a reload brings back. `bytes` may be unknown for an image the page attached itself. */
export type ShownImage = Omit<WireImageBlock, "bytes"> & { bytes?: number; restored?: boolean };
/** An image the user attaches to a prompt (`crank/prompt` `images`). */
export type PromptImage = InlineImage;
/** Both queues, as `queue_update` and `crank/state` carry them. */
export type Queue = QueueState;
/** The context meter (`crank/state` `usage`, the fields of `usage_update`). */
export type UsageUpdate = ContextUsage;

export const IMAGE_MIME_TYPES: readonly string[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** The server's limit per image (5 MB), checked here too so the user hears at once. */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;

export interface FixFileArgs { uri: string; diagnostics?: unknown[]; range?: Range; instruction?: string }

/** Crank's own refusals, by name: the numbers are the server's (docs/protocol.md). */
export type ErrorCodeName = "runInProgress" | "noSuchSession" | "noSuchWorkspace" | "noProvider" | "sessionUnreadable" | "refusedWhileRunning" | "sessionLocked" | "unknownCommand" | "noSuchImage";

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
  permissionMode?: import("./types").PermissionMode;
  sandbox?: { mode: import("./types").SandboxMode; network: boolean };
  /** MCP servers by name, in Claude Code's `mcpServers` format (docs/mcp.md). */
  mcpServers?: Record<string, unknown>;
  /** When they start: "open" (the server's default) or "firstUse" (the first prompt). */
  mcpStart?: "open" | "firstUse";
}
