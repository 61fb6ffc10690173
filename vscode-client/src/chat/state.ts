/**
 * The chat's state: protocol events and host facts in, a view model out.
 *
 * `reduce` is pure: it never mutates its input, and an item that did not change keeps
 * its identity, so the renderer can redraw only the items whose reference changed.
 * It does not import `vscode` (it runs inside the webview and under node --test).
 */
import type {
  ToolInfoJson,
  ContentBlock,
  EventParams,
  ShownImage,
  McpServerState,
  Message,
  ModelInfo,
  ModelRef,
  PermissionDecision,
  PermissionMode,
  PermissionRequest,
  Queue,
  SandboxState,
  SessionInfo,
  StateResult,
  ToolResultMessage,
  ContextUsage,
  UserMessage,
} from "../protocol/types";
import { editOf, type EditInfo } from "./edits";
import { runChangesIn, withAllRunChanges, withRunChanges, type ChangesItem } from "./runChanges";
import type { ChangedFile, RevertConflict, RunChangesJson } from "../protocol/types";

/** A user message; `images` as the server sent them (inline ones carry their data). */
export interface UserItem {
  kind: "user";
  id: string;
  text: string;
  images?: ShownImage[];
  /** Not typed by the user: the summary replay puts in place of compacted (or abandoned) messages. */
  summary?: "compaction" | "branch";
}

/** How crank/messages marks the summaries it replays as user messages (server/crank/session/replay.py). */
const SUMMARY_PREFIXES: [string, "compaction" | "branch"][] = [
  ["Previous conversation summary:", "compaction"],
  ["Summary of an abandoned branch:", "branch"],
];
export interface AssistantItem {
  kind: "assistant";
  id: string;
  blocks: ContentBlock[];
  streaming: boolean;
  stopReason?: string;
  errorMessage?: string;
}
export interface ToolItem {
  kind: "tool";
  id: string; // the toolCallId
  name: string;
  args: Record<string, unknown>;
  output: string;
  status: "pending" | "running" | "done" | "failed";
  result?: string;
  edit?: EditInfo;
  /** An open permission card asks about this call: the card shows the diff, so this one does not. */
  asked?: boolean;
  /** The images the tool returned (its toolResult message's `images`), shown on the card. */
  images?: ShownImage[];
}
export interface PermissionItem {
  kind: "permission";
  id: string; // the host's request id
  request: PermissionRequest;
  decision?: PermissionDecision;
  reason?: string;
  /** The question was withdrawn unanswered (the run stopped, or the host no longer holds it). */
  withdrawn?: boolean;
}
export interface NoticeItem { kind: "notice"; id: string; level: "info" | "warning" | "error"; text: string }
export type ChatItem = UserItem | AssistantItem | ToolItem | PermissionItem | NoticeItem | ChangesItem;
export type { ChangesItem } from "./runChanges";

export type ServerStatus = "starting" | "running" | "down" | "notInstalled";

export interface ChatState {
  workspace?: string;
  sessionId?: string;
  runId?: string;
  running: boolean;
  items: ChatItem[];
  queue: Queue;
  usage?: ContextUsage;
  lastSeq: number;
  /** True when an event was missed; the host should re-read the transcript. */
  gap: boolean;
  server: { status: ServerStatus; message?: string };
  model?: ModelRef;
  models: ModelInfo[];
  permissionMode?: PermissionMode;
  trusted?: boolean;
  sandbox?: SandboxState;
  /** What each tool says about itself (`crank/state` `tools`), so no card matches names. */
  tools?: ToolInfoJson[];
  /** The MCP servers (crank/state `mcp`, then `mcp_changed`). */
  mcp?: McpServerState[];
  sessions: SessionInfo[];
  compacting: boolean;
  /** The hash of the last system_prompt_changed: an event with the same hash announces nothing. */
  promptHash?: string;
  /** The prompt hash known when the last run started (what it was sent), if known. */
  runPromptHash?: string;
  /** A run started since this page loaded: before that, no prompt the user saw used can change. */
  sawRun?: boolean;
  retry?: { attempt: number; delayMs: number; error: string };
  /**
   * Where the first message the chat holds is in the session's transcript: the earlier
   * ones are on the server, read a page at a time when the user asks (0 or absent:
   * the chat holds the transcript from its start).
   */
  transcriptStart?: number;
}

/**
 * How many of the transcript's newest messages the chat reads at first, and how many
 * more at a time. The page draws 200 items at first; a long session's whole transcript
 * (50,000 messages, 42 MB) went through the host to the page at every refresh: 11 s in
 * code-server before its last message showed.
 */
export const TRANSCRIPT_PAGE = 400;

export type ChatAction =
  | { type: "event"; params: EventParams }
  /** The transcript, or its newest page: `start` is its first message's place in the whole (0 or absent: all of it). */
  | { type: "transcript"; messages: Message[]; sessionId?: string; workspace?: string; start?: number }
  /** The page before the chat's first message (`before`, what `transcriptStart` was when the page asked), from `start` (`before` itself when nothing was read). */
  | { type: "earlierTranscript"; messages: Message[]; sessionId?: string; before: number; start: number }
  | { type: "state"; state: StateResult; workspace?: string }
  | { type: "permissionRequest"; id: string; request: PermissionRequest }
  | { type: "permissionResolved"; id: string; decision: PermissionDecision; reason?: string; withdrawn?: boolean }
  /** The host's open questions: any other open card is stale (answered elsewhere, or from before a reload). */
  | { type: "permissionsOpen"; ids: string[] }
  | { type: "server"; status: ServerStatus; message?: string }
  | { type: "sessions"; sessions: SessionInfo[] }
  | { type: "models"; models: ModelInfo[] }
  | { type: "queue"; queue: Queue }
  /** `once`: not added again while the chat shows the same line (a line re-sent after every transcript read). */
  | { type: "notice"; level: NoticeItem["level"]; text: string; once?: boolean }
  /** The MCP servers as crank/mcpServer answered (the chat line's Restart/Disable/Enable). */
  | { type: "mcp"; servers: McpServerState[] }
  /** One run's changed files (crank/changes), shown under it; `settled`: the run just ended (its list goes last). */
  | { type: "runChanges"; runId: string; files: ChangedFile[]; conflicts?: RevertConflict[]; settled?: boolean }
  /** Every run's list of the session (crank/changes `runs`), after the transcript was read. */
  | { type: "allRunChanges"; runs: RunChangesJson[] };

export function initialState(): ChatState {
  return {
    running: false,
    items: [],
    queue: { steering: [], followUp: [] },
    lastSeq: -1,
    gap: false,
    server: { status: "starting" },
    models: [],
    sessions: [],
    compacting: false,
  };
}

let noticeCounter = 0;
function notice(level: NoticeItem["level"], text: string): NoticeItem {
  noticeCounter += 1;
  return { kind: "notice", id: `notice-${Date.now().toString(36)}-${noticeCounter}`, level, text };
}

/** A question goes just before the card of the call it asks about (question, answer,
 * then the call's result, in reading order); at the end when that card is not shown. */
function placePermission(items: ChatItem[], q: PermissionItem): ChatItem[] {
  const at = items.findIndex((it) => it.kind === "tool" && it.id === q.request.toolCallId);
  return at < 0 ? [...items, q] : [...items.slice(0, at), q, ...items.slice(at)];
}

/** Close open permission cards that `which` selects, as withdrawn with `reason`. */
function withdrawPermissions(items: ChatItem[], which: (p: PermissionItem) => boolean, reason: string): ChatItem[] {
  if (!items.some((it) => it.kind === "permission" && !it.decision && which(it))) return items;
  return items.map((it) => (it.kind === "permission" && !it.decision && which(it) ? { ...it, decision: "reject" as const, reason, withdrawn: true } : it));
}

function replaceItem(items: ChatItem[], id: string, kind: ChatItem["kind"], f: (it: any) => ChatItem): ChatItem[] {
  const i = findLast(items, (it) => it.kind === kind && it.id === id);
  if (i < 0) return items;
  const copy = items.slice();
  copy[i] = f(items[i]);
  return copy;
}

/** The index of the last of `xs` before `end` (default: all of them) that `p` holds for, or -1. */
function findLast<T>(xs: T[], p: (x: T) => boolean, end = xs.length): number {
  for (let i = end - 1; i >= 0; i--) if (p(xs[i])) return i;
  return -1;
}

/** An item that shows a message (a user's, a reply, a tool's card), not a notice, a question or a run's list. */
function isMessageItem(it: ChatItem): boolean {
  return it.kind === "user" || it.kind === "assistant" || it.kind === "tool";
}

function blockText(b: ContentBlock): string {
  return b.type === "text" ? b.text : b.type === "thinking" ? b.thinking : "";
}

/** Tool cards for the calls in a finished assistant message, skipping ones already shown. */
function toolCardsFor(items: ChatItem[], m: Message, tools?: readonly ToolInfoJson[]): ChatItem[] {
  if (m.role !== "assistant") return items;
  let out = items;
  for (const b of m.content) {
    if (b.type !== "toolCall") continue;
    if (out.some((it) => it.kind === "tool" && it.id === b.id)) continue;
    out = [...out, toolItem(b.id, b.name, b.arguments, tools)];
  }
  return out;
}

function userItem(id: string, m: UserMessage): UserItem {
  const text = userText(m);
  const summary = typeof m.typed === "string" ? undefined : SUMMARY_PREFIXES.find(([prefix]) => text.startsWith(prefix));
  if (summary) return { kind: "user", id, text: text.slice(summary[0].length).trim(), summary: summary[1] };
  return m.images && m.images.length ? { kind: "user", id, text, images: m.images } : { kind: "user", id, text };
}

function toolItem(id: string, name: string, args: Record<string, unknown>, tools?: readonly ToolInfoJson[]): ToolItem {
  return { kind: "tool", id, name, args: args ?? {}, output: "", status: "pending", edit: editOf(name, args ?? {}, tools) };
}

function assistantFinal(id: string, m: Extract<Message, { role: "assistant" }>): AssistantItem {
  return { kind: "assistant", id, blocks: m.content, streaming: false, stopReason: m.stopReason, errorMessage: m.errorMessage };
}

/** What the chat shows for a user message: what was typed (`/skill:review src/`), not the expansion the model got. */
function userText(m: Extract<Message, { role: "user" }>): string {
  return typeof m.typed === "string" ? m.typed : m.content;
}

/**
 * Rebuild the items from a transcript (resume, session switch, or after a gap). One pass,
 * appending to one list, each tool card found by its call id in a map: a resumed session
 * can be 50,000 messages, and copying the list for every message (and looking back for
 * each result's card) took minutes there.
 */
export function itemsFromMessages(messages: Message[], tools?: readonly ToolInfoJson[], start = 0): ChatItem[] {
  const items: ChatItem[] = [];
  /** Where each call's card is: a call id gets one card, its first call's. */
  const cards = new Map<string, number>();
  messages.forEach((m, i) => {
    // Named by the place in the whole transcript: a page read later has ids of its own.
    if (m.role === "user") items.push(userItem(`m${start + i}`, m));
    else if (m.role === "assistant") {
      items.push(assistantFinal(`m${start + i}`, m));
      for (const b of m.content) {
        if (b.type !== "toolCall" || cards.has(b.id)) continue;
        cards.set(b.id, items.length);
        items.push(toolItem(b.id, b.name, b.arguments, tools));
      }
    } else {
      const at = cards.get(m.toolCallId);
      if (at === undefined) return;
      const t = items[at] as ToolItem;
      items[at] = { ...withToolImages(t, m), status: m.isError ? "failed" : "done", result: m.content };
    }
  });
  return items;
}

/**
 * A transcript read while a run streams holds what the session file holds: a reply is
 * saved when it ends, and a tool's output so far is in no message. So the reply still
 * streaming stays after the transcript (the rest of its stream lands there), and a
 * running tool's card keeps what the events told it. A transcript of another session
 * replaces everything.
 */
function withLiveItems(s: ChatState, sessionId: string | undefined, read: ChatItem[]): ChatItem[] {
  if (sessionId !== undefined && s.sessionId !== undefined && sessionId !== s.sessionId) return read;
  // A card the transcript has no result for yet (pending) is the running one the events drew.
  const running = new Map<string, ToolItem>();
  for (const it of s.items) if (it.kind === "tool" && it.status === "running") running.set(it.id, it);
  const items = running.size ? read.map((it) => (it.kind === "tool" && it.status === "pending" && running.get(it.id)) || it) : read;
  // The reply still streaming is kept, unless the transcript already ends with it (read
  // after the reply was saved, before its message_end arrived): two bubbles of one reply.
  const last = items.at(-1);
  const saved = last?.kind === "assistant" ? replyText(last.blocks) : undefined;
  const streaming = s.items.filter((it) => it.kind === "assistant" && it.streaming && (saved === undefined || !saved.startsWith(replyText(it.blocks))));
  return streaming.length ? [...items, ...streaming] : items;
}

/** The text blocks of a reply, joined: what a streaming bubble and its saved reply share. */
function replyText(blocks: ContentBlock[]): string {
  return blocks.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/** The card with the images its tool result carries (none: the card as it was). */
function withToolImages(t: ToolItem, m: ToolResultMessage): ToolItem {
  return m.images && m.images.length ? { ...t, images: m.images } : t;
}

function onEvent(s: ChatState, p: EventParams): ChatState {
  const ev = p.event;
  if (ev.type === "session_changed") {
    return { ...s, sessionId: ev.sessionId, items: [], lastSeq: -1, running: false, gap: true, queue: { steering: [], followUp: [] }, transcriptStart: 0 };
  }
  if (s.sessionId !== undefined && p.sessionId !== s.sessionId) return s;
  if (p.seq <= s.lastSeq) return s; // a duplicate or a stale event: already applied
  const gap = s.gap || (s.lastSeq >= 0 && p.seq !== s.lastSeq + 1);
  s = { ...s, sessionId: p.sessionId, workspace: s.workspace ?? p.workspace, lastSeq: p.seq, gap };
  const items = s.items;
  switch (ev.type) {
    case "agent_start":
      return { ...s, running: true, runId: p.runId, retry: undefined, sawRun: true, runPromptHash: s.promptHash };
    case "turn_start":
      return s;
    case "message_start": {
      const m = ev.message;
      if (m.role === "user") return { ...s, items: [...items, userItem(`u${p.seq}`, m)] };
      if (m.role === "assistant")
        return { ...s, items: [...items, { kind: "assistant", id: `a${p.seq}`, blocks: m.content ?? [], streaming: true }] };
      return s;
    }
    case "message_update": {
      const i = findLast(items, (it) => it.kind === "assistant" && it.streaming);
      if (i < 0) return s;
      const a = items[i] as AssistantItem;
      const { kind, contentIndex, text } = ev.delta;
      const blocks = a.blocks.slice();
      while (blocks.length <= contentIndex) blocks.push({ type: "text", text: "" });
      const prev = blocks[contentIndex];
      if (kind === "text") blocks[contentIndex] = { type: "text", text: blockText(prev) + text };
      else if (kind === "thinking") blocks[contentIndex] = { type: "thinking", thinking: blockText(prev) + text };
      else {
        const partial = prev.type === "toolCall" ? String(prev.arguments?.__partial ?? "") : "";
        const name = prev.type === "toolCall" ? prev.name : "";
        const id = prev.type === "toolCall" ? prev.id : "";
        blocks[contentIndex] = { type: "toolCall", id, name, arguments: { __partial: partial + text } };
      }
      const copy = items.slice();
      copy[i] = { ...a, blocks };
      return { ...s, items: copy };
    }
    case "message_end": {
      const m = ev.message;
      if (m.role === "assistant") {
        const i = findLast(items, (it) => it.kind === "assistant" && it.streaming);
        const copy = items.slice();
        // A transcript read between the reply's save and this event has it already, before the
        // bubble kept for it. Notices, cards and run lists do not count: the host posts a
        // notice after every transcript in an untrusted window, so the saved reply need not
        // be the last item.
        const before = i > 0 ? copy[findLast(copy, isMessageItem, i)] : undefined;
        const last = copy[findLast(copy, isMessageItem)];
        if (i >= 0 && before?.kind === "assistant" && JSON.stringify(before.blocks) === JSON.stringify(m.content)) copy.splice(i, 1);
        else if (i >= 0) copy[i] = assistantFinal(copy[i].id, m);
        else if (last?.kind === "assistant" && !last.streaming && JSON.stringify(last.blocks) === JSON.stringify(m.content)) return s; // the transcript has it
        else copy.push(assistantFinal(`a${p.seq}`, m));
        return { ...s, items: toolCardsFor(copy, m, s.tools) };
      }
      if (m.role === "user") {
        // Already shown by its message_start, perhaps with a notice after it (images left out, a retry).
        const i = findLast(items, isMessageItem);
        const last = items[i];
        if (last && last.kind === "user" && last.text === userText(m)) return s;
        return { ...s, items: [...items, userItem(`u${p.seq}`, m)] };
      }
      // A tool result: tool_execution_end gave the text; this message carries its images.
      if (!m.images?.length) return s;
      return { ...s, items: replaceItem(items, m.toolCallId, "tool", (t: ToolItem) => withToolImages(t, m)) };
    }
    case "tool_execution_start": {
      const exists = items.some((it) => it.kind === "tool" && it.id === ev.toolCallId);
      const base = exists ? items : [...items, toolItem(ev.toolCallId, ev.toolName, ev.arguments, s.tools)];
      return {
        ...s,
        items: replaceItem(base, ev.toolCallId, "tool", (t: ToolItem) => ({
          ...t,
          name: ev.toolName,
          args: ev.arguments ?? t.args,
          edit: editOf(ev.toolName, ev.arguments ?? t.args, s.tools) ?? t.edit,
          status: "running",
        })),
      };
    }
    case "tool_execution_update":
      return { ...s, items: replaceItem(items, ev.toolCallId, "tool", (t: ToolItem) => ({ ...t, output: t.output + ev.output })) };
    case "tool_execution_end":
      return {
        ...s,
        items: replaceItem(items, ev.toolCallId, "tool", (t: ToolItem) => ({
          ...t,
          status: ev.result.isError ? "failed" : "done",
          result: ev.result.content,
        })),
      };
    case "turn_end":
      return s;
    case "agent_end":
      return s;
    case "agent_settled": {
      // Anything still marked as streaming or running was cut off: say so instead of spinning forever.
      const settled = items.map((it) =>
        it.kind === "assistant" && it.streaming
          ? { ...it, streaming: false }
          : it.kind === "tool" && (it.status === "running" || it.status === "pending")
            ? { ...it, status: "failed" as const, result: it.result ?? "(interrupted)" }
            : it,
      );
      // A settled run asks nothing more: a question of this run still open is stale.
      const closed = withdrawPermissions(settled, (q) => !p.runId || !q.request.runId || q.request.runId === p.runId, "the run ended before an answer");
      return { ...s, running: false, items: closed, compacting: false, retry: undefined };
    }
    case "queue_update":
      return { ...s, queue: { steering: ev.steering, followUp: ev.followUp } };
    case "compaction_start":
      return {
        ...s,
        compacting: true,
        items: [...items, notice("info", `Compacting the conversation (${ev.reason})…`)],
      };
    case "compaction_end":
      return {
        ...s,
        compacting: false,
        // The transcript now starts at the summary: nothing before it to read.
        ...(ev.compacted ? { transcriptStart: 0 } : {}),
        items: [
          ...items,
          ev.compacted
            ? notice("info", "The conversation was compacted: older messages were replaced by a summary.")
            : notice(ev.error ? "error" : "info", `Compaction did not happen${ev.error ? `: ${ev.error}` : "."}`),
        ],
      };
    case "images_omitted":
      return { ...s, items: [...items, notice("warning", ev.message)] };
    case "notice": {
      if (ev.kind !== "window_learned") return { ...s, items: [...items, notice("warning", ev.message)] };
      // A refusal taught the window and the turn was compacted and retried: that whole
      // recovery (the refused reply, "Retrying", "Compacting", "compacted") is this one line.
      const j = findLast(items, (it) => it.kind === "assistant" && it.stopReason === "error");
      const kept = j < 0 ? items : [...items.slice(0, j), ...items.slice(j + 1).filter((it) => it.kind !== "notice")];
      return { ...s, items: [...kept, notice("info", ev.message)] };
    }
    case "retry_start": {
      // The server opens the reply (message_start) before its request is refused: the
      // line goes before that still empty bubble, so the reply reads after the retry.
      const line = notice("warning", `Retrying (attempt ${ev.attempt}) in ${Math.round(ev.delayMs / 100) / 10}s: ${ev.error}`);
      const last = items.at(-1);
      const empty = last?.kind === "assistant" && last.streaming && last.blocks.length === 0;
      return {
        ...s,
        retry: { attempt: ev.attempt, delayMs: ev.delayMs, error: ev.error },
        items: empty ? [...items.slice(0, -1), line, last] : [...items, line],
      };
    }
    case "retry_end":
      return {
        ...s,
        retry: undefined,
        items: ev.success ? items : [...items, notice("error", `Gave up after attempt ${ev.attempt}.`)],
      };
    case "usage_update": {
      const { type: _t, ...usage } = ev;
      return { ...s, usage };
    }
    case "system_prompt_changed": {
      // Announced only when it differs from what the last run was sent: a fresh server
      // (after a reload) rebuilding the prompt a resumed session already had, or a
      // change and its undoing between two runs, changes nothing the model sees.
      const quiet = ev.hash === s.promptHash || !s.sawRun || (s.runPromptHash !== undefined && ev.hash === s.runPromptHash);
      if (quiet) return { ...s, promptHash: ev.hash };
      return { ...s, promptHash: ev.hash, items: [...items, notice("info", "The system prompt changed; the next run uses the new one.")] };
    }
    case "mcp_changed": {
      const lines = mcpNotices(s.mcp, ev.servers);
      return { ...s, mcp: ev.servers, items: lines.length ? [...items, ...lines] : items };
    }
    default:
      return s;
  }
}

/** A server's line in the chat: its name, state, tools or error. */
export function mcpLine(server: McpServerState): { level: NoticeItem["level"]; text: string } {
  const where = `MCP server ${server.name} (${server.source})`;
  if (server.state === "ready") {
    const n = server.tools.length;
    return { level: "info", text: `${where} is ready: ${n} tool${n === 1 ? "" : "s"}.` };
  }
  if (server.state === "failed") return { level: "error", text: `${where} failed: ${server.error ?? "no reason given"}` };
  if (server.state === "disabled") return { level: "info", text: `${where} is disabled.` };
  return { level: "info", text: `${where} is starting…` };
}

/** A notice per server whose state (or tool count, or error) changed; none for "starting". */
export function mcpNotices(before: McpServerState[] | undefined, after: McpServerState[]): NoticeItem[] {
  const old = new Map((before ?? []).map((m) => [m.name, m]));
  return after
    .filter((m) => {
      const was = old.get(m.name);
      if (m.state === "starting") return false;
      return !was || was.state !== m.state || was.tools.length !== m.tools.length || was.error !== m.error;
    })
    .map((m) => {
      const line = mcpLine(m);
      return notice(line.level, line.text);
    });
}

/**
 * The same diff is shown once: while a permission card asks about a tool call, the
 * call's own card leaves the diff to the question. Recomputed after every action; an
 * item whose flag did not change keeps its identity (so its DOM is kept).
 */
function syncAsked(s: ChatState): ChatState {
  const open = new Set<string>();
  for (const it of s.items) if (it.kind === "permission" && !it.decision) open.add(it.request.toolCallId);
  let changed = false;
  const items = s.items.map((it) => {
    if (it.kind !== "tool") return it;
    const asked = open.has(it.id);
    if (Boolean(it.asked) === asked) return it;
    changed = true;
    return { ...it, asked };
  });
  return changed ? { ...s, items } : s;
}

export function reduce(s: ChatState, a: ChatAction): ChatState {
  return syncAsked(reduceAction(s, a));
}

function reduceAction(s: ChatState, a: ChatAction): ChatState {
  switch (a.type) {
    case "event":
      return onEvent(s, a.params);
    case "transcript":
      return {
        ...s,
        // An open question is not in any transcript: keep its card, or it could not be answered.
        items: keptRunChanges(s, a.sessionId, pendingPermissions(s).reduce(placePermission, withLiveItems(s, a.sessionId, itemsFromMessages(a.messages, s.tools, a.start)))),
        sessionId: a.sessionId ?? s.sessionId,
        workspace: a.workspace ?? s.workspace,
        gap: false,
        transcriptStart: a.start ?? 0,
      };
    case "earlierTranscript":
      // Read for what the chat showed when the user asked: after another session, a
      // reload or a compaction it belongs nowhere.
      if (a.sessionId !== s.sessionId || a.before !== s.transcriptStart || a.start >= a.before) return s;
      return { ...s, items: [...itemsFromMessages(a.messages, s.tools, a.start), ...s.items], transcriptStart: a.start };
    case "state": {
      const st = a.state;
      const changed = s.sessionId !== undefined && s.sessionId !== st.sessionId;
      // An answer read before events the page has applied since (the host reads the state,
      // then the transcript, then passes both on; a run may have started meanwhile) is
      // stale in what those events tell: running, the queue, the usage. A new server
      // process, which counts seq from 0 again, is told by `server` and by a page load
      // (restoredState), never guessed from a lower seq here.
      const stale = !changed && typeof st.seq === "number" && st.seq < s.lastSeq;
      return {
        ...s,
        workspace: a.workspace ?? s.workspace,
        sessionId: st.sessionId,
        running: stale ? s.running : st.running,
        runId: stale ? s.runId : st.runId,
        model: st.model,
        permissionMode: st.permissionMode,
        trusted: st.trusted,
        sandbox: st.sandbox ?? s.sandbox,
        tools: st.tools ?? s.tools,
        mcp: st.mcp ?? [], // absent: none configured (for this workspace, or at all)
        queue: stale ? s.queue : st.queue,
        usage: stale ? s.usage : st.usage,
        // Another session's items go; an open question stays, as in "transcript": it is the
        // host's (a page restored on the last window's session may get one before this answer).
        items: changed ? pendingPermissions(s) : s.items,
        lastSeq: changed ? -1 : s.lastSeq,
      };
    }
    case "permissionRequest":
      // The host re-sends its open questions when the page (re)loads: one card per id.
      if (s.items.some((it) => it.kind === "permission" && it.id === a.id)) return s;
      return { ...s, items: placePermission(s.items, { kind: "permission", id: a.id, request: a.request }) };
    case "permissionResolved":
      return {
        ...s,
        items: replaceItem(s.items, a.id, "permission", (p: PermissionItem) =>
          p.decision ? p : { ...p, decision: a.decision, reason: a.reason, ...(a.withdrawn ? { withdrawn: true } : {}) },
        ),
      };
    case "permissionsOpen": {
      const open = new Set(a.ids);
      return { ...s, items: withdrawPermissions(s.items, (p) => !open.has(p.id), "no longer asked") };
    }
    case "server": {
      const down = a.status === "down" || a.status === "notInstalled";
      // A dead server answers no permission request: close open cards so no button lies.
      const items = down ? withdrawPermissions(s.items, () => true, "server stopped") : s.items;
      // A server that is running again is a new process: it counts seq from 0, and a page that
      // kept the old, higher lastSeq would drop every new event as a duplicate.
      const restarted = a.status === "running" && s.server.status !== "running";
      return { ...s, server: { status: a.status, message: a.message }, running: down ? false : s.running, items, lastSeq: restarted ? -1 : s.lastSeq };
    }
    case "sessions":
      return { ...s, sessions: a.sessions };
    case "models":
      return { ...s, models: a.models };
    case "queue":
      return { ...s, queue: a.queue };
    case "notice":
      if (a.once && s.items.some((it) => it.kind === "notice" && it.text === a.text)) return s;
      return { ...s, items: [...s.items, notice(a.level, a.text)] };
    case "mcp":
      return { ...s, mcp: a.servers };
    case "runChanges": {
      const item: ChangesItem = { kind: "changes", id: a.runId, files: a.files, ...(a.conflicts?.length ? { conflicts: a.conflicts } : {}) };
      return { ...s, items: withRunChanges(s.items, item, a.settled) as ChatItem[] };
    }
    case "allRunChanges":
      return { ...s, items: withAllRunChanges(s.items, a.runs) as ChatItem[] };
  }
}

/** The run lists shown stay, in their places, when the same session's transcript is read again (the host then reads them afresh). */
function keptRunChanges(s: ChatState, sessionId: string | undefined, read: ChatItem[]): ChatItem[] {
  if (sessionId !== undefined && s.sessionId !== undefined && sessionId !== s.sessionId) return read;
  const lists = runChangesIn(s.items);
  return lists.length ? (withAllRunChanges(read, lists) as ChatItem[]) : read;
}

/**
 * The page's saved state as it comes back when the page is (re)loaded: its seq was
 * counted by a server process that may be gone (a window reload starts a new one), so
 * the next event is taken whatever its seq; the host re-reads the transcript anyway.
 * Whether a server runs is not known until the host says (right after the page's
 * "ready"): the saved "running" described the old process, and a page that offered
 * Send and the run lists' buttons on its word sent clicks to a server still starting.
 */
export function restoredState(saved: ChatState): ChatState {
  return { ...saved, server: { status: "starting" }, lastSeq: -1, gap: false };
}

/** How many of the chat's last items the page keeps in its saved state. */
export const SAVED_ITEMS = 200;

/**
 * The chat as the page saves it (at most every 250 ms while a reply streams, and as the
 * user types): its last `SAVED_ITEMS` items, and their images without their bytes,
 * which are megabytes each and would be written again at every save. VS Code serializes
 * the whole saved state at each save, so a page that saved a transcript of 5,000
 * messages stalled for 50-90 ms four times a second while the user typed; the saved
 * chat is only what a reloaded page shows first, until the transcript is read again
 * from the server (the chat does that whenever it opens), which brings every item back,
 * and the bytes or the hash an image is fetched by.
 */
export function persistable(s: ChatState): ChatState {
  const items = s.items.length > SAVED_ITEMS ? s.items.slice(-SAVED_ITEMS) : s.items;
  if (items === s.items && !items.some(hasImageData)) return s;
  // Cut, the saved items no longer follow on from `transcriptStart`: nothing is read
  // before them until the transcript is read again.
  const cut = items === s.items ? {} : { transcriptStart: 0 };
  return { ...s, ...cut, items: items.map((it) => (hasImageData(it) ? { ...it, images: it.images.map(withoutData) } : it)) };
}

function hasImageData(it: ChatItem): it is (UserItem | ToolItem) & { images: ShownImage[] } {
  return (it.kind === "user" || it.kind === "tool") && !!it.images?.some((i) => i.data !== undefined);
}

function withoutData(i: ShownImage): ShownImage {
  if (i.data === undefined) return i;
  const { data: _bytes, ...rest } = i;
  return { ...rest, restored: true };
}

/** Pending permission requests, oldest first. */
export function pendingPermissions(s: ChatState): PermissionItem[] {
  return s.items.filter((it): it is PermissionItem => it.kind === "permission" && !it.decision);
}

/** Context use as a fraction in [0, 1], or undefined before the first usage report. */
export function contextFraction(s: ChatState): number | undefined {
  if (!s.usage || !s.usage.contextWindow) return undefined;
  return Math.min(1, Math.max(0, s.usage.contextTokens / s.usage.contextWindow));
}

/** The one line the chat shows about the sandbox: what confines the agent's commands. */
export function sandboxLine(sb: SandboxState | undefined): { text: string; level: "ok" | "warning"; title: string } | undefined {
  if (!sb) return undefined;
  if (sb.confined) {
    const net = sb.network ? "network on" : "network off";
    return { text: `Sandbox: ${sb.mode}, ${net}`, level: "ok", title: sb.detail };
  }
  if (sb.mode === "off") return { text: "Sandbox off: commands run as you", level: "warning", title: "crank.sandbox.mode is off" };
  return { text: "No sandbox: every command asks first", level: "warning", title: sb.detail };
}
