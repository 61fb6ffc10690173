/**
 * The chat webview. It owns the chat state (the pure reducer in ../chat/state), renders
 * it, and talks to the extension only through postMessage. Rendering is keyed by item
 * identity: an item the reducer did not touch keeps its DOM, so streaming redraws one
 * bubble, not the whole transcript.
 */
import { contextFraction, initialState, persistable, reduce, restoredState, sandboxLine, type ChatItem, type ChatState, type PermissionItem, type ToolItem } from "../chat/state";
import { parseImages, type HostMessage, type ViewMessage } from "../chat/protocol";
import type { CommandInfo, PermissionDecision, PermissionMode } from "../protocol/types";
import { acceptCommand, commandQuery, matchCommands } from "../chat/commands";
import { pathArg, snippetDiff } from "../chat/edits";
import type { BranchInfo } from "../chat/branches";
import { modelLabel } from "../chat/status";
import { button, h } from "./dom";
import { ImageCache, imageCaption, imageLabel, imageOfBytes, imageView } from "../chat/images";
import type { ShownImage, PromptImage } from "../protocol/types";
import { renderMarkdown } from "./markdown";
import { mcpRows, type McpAction } from "../chat/mcp";
import { CHANGE_KIND, changesSummary, keepAllPaths, lineCounts, pending, shownFiles, undoable, undoAllPaths, type ChangesItem } from "../chat/runChanges";

interface VsCodeApi {
  postMessage(msg: unknown): void;
  getState(): unknown;
  setState(s: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (m: ViewMessage) => vscode.postMessage(m);

/** What survives a reload of the page or the window: the chat, the unsent text and the images attached to it. */
interface Persisted { chat: ChatState; input: string; images?: PromptImage[] }
const saved = vscode.getState() as Persisted | undefined;
let state: ChatState = saved?.chat ? restoredState(saved.chat) : initialState();
let contextChips: { label: string }[] = [];
/** Images attached to the next prompt (pasted, dropped or picked), shown as thumbnails; checked again when restored. */
let pendingImages: PromptImage[] = parseImages(saved?.images) ?? [];
/** Stored images of the session shown, fetched through the host when first shown. */
const imageCache = new ImageCache();
let workspaceInfo: { name?: string; folders: number } = { folders: 0 };
let showSessions = false;
let branches: BranchInfo[] = [];
let showBranches = false;
let enterWhileRunning: "steer" | "followUp" = "steer";
/** The server's commands (crank/commands) for this workspace, in its order. */
let commands: CommandInfo[] = [];
let renderQueued = false;
/** The draft (text and attached images) the host was last told of. */
let draftSent: { text: string; images: PromptImage[] } = { text: saved?.input ?? "", images: pendingImages };
/** The draft as the page's saved state gave it: shown until the host's copy comes, which replaces it unless the user changed it meanwhile. */
const draftRestored = draftSent;
const itemCache = new Map<string, { ref: ChatItem; el: HTMLElement }>();

// ---- static skeleton ---------------------------------------------------------------

const app = document.getElementById("app")!;
app.textContent = "";

const banner = h("div", { class: "banner", role: "alert", hidden: true });
const wsButton = h("button", { type: "button", class: "ws", title: "Pick the workspace folder the chat works on", onclick: () => post({ type: "pickWorkspace" }) });
const modelSelect = h("select", { class: "model", "aria-label": "Model" });
modelSelect.addEventListener("change", () => {
  const [api, ...rest] = modelSelect.value.split("/");
  if (api && rest.length) post({ type: "setModel", api, id: rest.join("/") });
});
const modeSelect = h("select", { class: "mode", "aria-label": "Permission mode" });
for (const [value, label] of [["ask", "Ask"], ["autoEdit", "Auto-edit"], ["auto", "Auto"], ["readOnly", "Read-only"]] as const) {
  modeSelect.append(h("option", { value }, label));
}
modeSelect.addEventListener("change", () => post({ type: "setPermissionMode", mode: modeSelect.value as PermissionMode }));
const sessionsButton = button("History", () => {
  showSessions = !showSessions;
  if (showSessions) post({ type: "listSessions" });
  schedule();
}, { class: "secondary", "aria-expanded": "false", title: "Sessions of this workspace" });
const newButton = button("New", () => post({ type: "newSession" }), { class: "secondary", title: "Start a new session" });
const sandboxNote = h("span", { class: "sandbox", hidden: true });
const branchesButton = button("Branches", () => {
  showBranches = !showBranches;
  schedule();
}, { class: "secondary", "aria-expanded": "false", title: "Branches of this session (made by Edit and resend)", hidden: true });
const header = h("header", { class: "toolbar" }, wsButton, modelSelect, modeSelect, sandboxNote, h("span", { class: "spacer" }), branchesButton, sessionsButton, newButton);

const mcpLine = h("section", { class: "mcp-line", "aria-label": "MCP servers", hidden: true });
const sessionsPanel = h("nav", { class: "sessions", "aria-label": "Sessions", hidden: true });
const branchesPanel = h("nav", { class: "sessions branches", "aria-label": "Branches", hidden: true });
const list = h("div", { class: "items", role: "log", "aria-live": "polite", "aria-relevant": "additions" });
const empty = h(
  "div",
  { class: "empty" },
  h("p", {}, "Ask Crank to change something in this workspace."),
  h("p", { class: "hint" }, "Add the current selection with Ctrl+K L, or right-click a file: “Crank: Fix This File”."),
);
/**
 * How many of the chat's last items are drawn at first, and how many more each "Show
 * earlier" draws. A page that drew every item of a long session paid a layout and a
 * paint of all of them at every streamed token (about 100 ms a frame at 5,000
 * messages, a freeze while the reply streamed) and a stall at every pause in typing.
 */
const DRAWN_STEP = 200;
let drawn = DRAWN_STEP;
/** The session `drawn` counts for: another session starts again from its last items. */
let drawnSession: string | undefined;
const earlier = button("Show earlier", () => drawEarlier(), { class: "secondary earlier", hidden: true });
const scroller = h("div", { class: "scroller" }, empty, earlier, list);

/** The page of the transcript asked for and not yet arrived (what `transcriptStart` was). */
let loadingBefore: number | undefined;

/**
 * Draws `DRAWN_STEP` more of the earlier items, the view kept on what it showed; when
 * every item held is drawn, asks the host for the transcript's page before them (the
 * chat reads only the newest at first), drawn when it comes.
 */
function drawEarlier(): void {
  const start = state.transcriptStart ?? 0;
  if (state.items.length <= drawn && start > 0) {
    if (loadingBefore === start) return;
    loadingBefore = start;
    earlier.disabled = true;
    post({ type: "loadEarlier", before: start, ...(state.sessionId ? { sessionId: state.sessionId } : {}) });
    return;
  }
  const fromBottom = scroller.scrollHeight - scroller.scrollTop;
  drawn += DRAWN_STEP;
  renderItems();
  scroller.scrollTop = scroller.scrollHeight - fromBottom;
}

const status = h("div", { class: "status", "aria-live": "polite" });
const meterBar = h("div", { class: "meter-fill" });
const meter = h("div", { class: "meter", role: "meter", "aria-label": "Context window used", "aria-valuemin": "0", "aria-valuemax": "100" }, meterBar);
const meterText = h("span", { class: "meter-text" });
const cost = h("span", { class: "cost" });
const footer = h("div", { class: "footer" }, status, h("span", { class: "spacer" }), meter, meterText, cost);

const queueList = h("ul", { class: "queue", "aria-label": "Queued messages", hidden: true });
const chips = h("div", { class: "chips", hidden: true });
const commandMenu = h("ul", { class: "command-menu", id: "command-menu", role: "listbox", "aria-label": "Commands", hidden: true });
const thumbs = h("div", { class: "thumbs", "aria-label": "Images to send", hidden: true });
const composerNote = h("div", { class: "composer-note", role: "status", hidden: true });
const input = h("textarea", {
  class: "input",
  rows: "3",
  placeholder: "Ask Crank…",
  "aria-label": "Message",
  role: "combobox",
  "aria-autocomplete": "list",
  "aria-controls": "command-menu",
  "aria-expanded": "false",
}) as HTMLTextAreaElement;
input.value = saved?.input ?? "";
const addContextButton = button("@", () => post({ type: "addContext" }), { class: "secondary icon", title: "Add a file or the selection as context", "aria-label": "Add context" });
const attachImageButton = button("Image", () => post({ type: "attachImage" }), { class: "secondary attach-image", title: "Attach an image (or paste or drop one into the message box)", "aria-label": "Attach an image" });
const sendButton = button("Send", () => send(false), { class: "send" });
const stopButton = button("Stop", () => post({ type: "abort" }), { class: "stop", hidden: true, title: "Stop the agent (Esc)" });
const hint = h("div", { class: "hint input-hint" });
const composer = h("div", { class: "composer" }, queueList, chips, commandMenu, thumbs, composerNote, input, h("div", { class: "composer-row" }, addContextButton, attachImageButton, hint, h("span", { class: "spacer" }), stopButton, sendButton));

app.append(header, mcpLine, banner, sessionsPanel, branchesPanel, scroller, footer, composer);

// ---- input -------------------------------------------------------------------------

function send(alternate: boolean): void {
  const text = input.value.trim();
  if (!text && !pendingImages.length) return;
  let mode: "prompt" | "steer" | "followUp" = "prompt";
  if (state.running) mode = alternate === (enterWhileRunning === "steer") ? "followUp" : "steer";
  post(pendingImages.length ? { type: "send", text: text || "(see the image)", mode, images: pendingImages } : { type: "send", text, mode });
  pendingImages = [];
  input.value = "";
  note("");
  renderThumbs();
  updateMenu();
  scroller.scrollTop = scroller.scrollHeight;
  persist();
}

// ---- completing / commands -----------------------------------------------------------
// The list opens while the caret is in a leading `/name`, filtered as it is typed. The
// textarea is the combobox: focus stays in it, the active option is aria-activedescendant.

let menuItems: CommandInfo[] = [];
let menuIndex = 0;
/** Escape (or leaving the input) closed the list; typing opens it again. */
let menuClosed = false;

function updateMenu(): void {
  const query = commandQuery(input.value, input.selectionStart ?? 0);
  const items = query === undefined || menuClosed ? [] : matchCommands(commands, query);
  const selected = menuItems[menuIndex]?.name;
  menuItems = items;
  menuIndex = Math.max(0, items.findIndex((c) => c.name === selected));
  commandMenu.textContent = "";
  items.forEach((c, i) =>
    commandMenu.append(
      h(
        "li",
        {
          id: `command-option-${i}`,
          class: "command-option",
          role: "option",
          "aria-selected": "false",
          "data-name": c.name,
          title: `/${c.name}${c.argumentHint ? ` ${c.argumentHint}` : ""}: ${c.description}`,
          // mousedown, not click: the textarea keeps the focus (and so the list its meaning).
          onmousedown: (e: MouseEvent) => {
            e.preventDefault();
            acceptMenu(i);
          },
        },
        h("span", { class: "command-name" }, `/${c.name}`),
        c.argumentHint ? h("span", { class: "command-hint" }, c.argumentHint) : null,
        c.kind !== "builtin" ? h("span", { class: "command-kind" }, c.kind) : null,
        h("span", { class: "command-desc" }, c.description),
      ),
    ),
  );
  commandMenu.hidden = items.length === 0;
  input.setAttribute("aria-expanded", String(items.length > 0));
  selectMenu(menuIndex);
}

function selectMenu(i: number): void {
  if (!menuItems.length) {
    input.removeAttribute("aria-activedescendant");
    return;
  }
  menuIndex = (i + menuItems.length) % menuItems.length;
  Array.from(commandMenu.children).forEach((el, j) => {
    el.setAttribute("aria-selected", String(j === menuIndex));
    el.classList.toggle("selected", j === menuIndex);
  });
  input.setAttribute("aria-activedescendant", `command-option-${menuIndex}`);
  commandMenu.children[menuIndex]?.scrollIntoView({ block: "nearest" });
}

function acceptMenu(i: number): void {
  const c = menuItems[i];
  if (!c) return;
  const next = acceptCommand(input.value, c.name);
  input.value = next.text;
  input.setSelectionRange(next.caret, next.caret);
  updateMenu();
  persist();
}

/** Keys the open list takes; true when it took this one. */
function menuKey(e: KeyboardEvent): boolean {
  if (!menuItems.length || e.isComposing) return false;
  if (e.key === "ArrowDown" || e.key === "ArrowUp") selectMenu(menuIndex + (e.key === "ArrowDown" ? 1 : -1));
  else if (e.key === "Tab" && !e.shiftKey) acceptMenu(menuIndex);
  else if (e.key === "Enter" && !e.shiftKey) {
    // The name is typed in full already: Enter sends it, as it would without the list.
    if (commandQuery(input.value, input.selectionStart ?? 0) === menuItems[menuIndex].name && input.value.trim() === `/${menuItems[menuIndex].name}`) return false;
    acceptMenu(menuIndex);
  } else if (e.key === "Escape") {
    menuClosed = true;
    updateMenu();
  } else return false;
  e.preventDefault();
  return true;
}

input.addEventListener("click", () => updateMenu());
input.addEventListener("keyup", (e) => {
  if (["ArrowLeft", "ArrowRight", "Home", "End"].includes(e.key)) updateMenu();
});
input.addEventListener("blur", () => {
  menuClosed = true;
  updateMenu();
});
input.addEventListener("focus", () => {
  menuClosed = false;
  updateMenu();
});

input.addEventListener("keydown", (e) => {
  if (menuKey(e)) return;
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    send(e.altKey || e.ctrlKey || e.metaKey);
  } else if (e.key === "Escape" && state.running) {
    e.preventDefault();
    post({ type: "abort" });
  }
});
input.addEventListener("input", (e) => {
  persist();
  menuClosed = false;
  updateMenu();
  // "@" typed at the start or after a space opens the context picker (files, selection).
  const pos = input.selectionStart ?? 0;
  if ((e as InputEvent).data === "@" && (pos === 1 || /\s/.test(input.value.charAt(pos - 2)))) {
    input.value = input.value.slice(0, pos - 1) + input.value.slice(pos);
    input.setSelectionRange(pos - 1, pos - 1);
    post({ type: "addContext" });
  }
});

// ---- images: paste, drop, the host's file dialog --------------------------------------

function note(text: string): void {
  composerNote.textContent = text;
  composerNote.hidden = !text;
}

async function addFiles(files: File[]): Promise<void> {
  for (const file of files) {
    const image = imageOfBytes(new Uint8Array(await file.arrayBuffer()), file.name || "pasted image");
    if (typeof image === "string") note(image);
    else {
      pendingImages = [...pendingImages, image];
      note("");
    }
  }
  renderThumbs();
}

function imageFiles(list: DataTransferItemList | null | undefined): File[] {
  const out: File[] = [];
  for (const item of Array.from(list ?? [])) {
    const file = item.kind === "file" && item.type.startsWith("image/") ? item.getAsFile() : null;
    if (file) out.push(file);
  }
  return out;
}

input.addEventListener("paste", (e) => {
  const files = imageFiles(e.clipboardData?.items);
  if (!files.length) return; // text pastes as usual
  e.preventDefault();
  void addFiles(files);
});
composer.addEventListener("dragover", (e) => {
  if (Array.from(e.dataTransfer?.items ?? []).some((i) => i.kind === "file")) e.preventDefault();
});
composer.addEventListener("drop", (e) => {
  const files = imageFiles(e.dataTransfer?.items);
  if (!files.length) return;
  e.preventDefault();
  void addFiles(files);
});

/**
 * One image as the chat shows it, in the composer, on a user message or on a tool card:
 * the picture (inline, or a stored one fetched through the host the first time it is
 * shown), or its name and why it cannot be shown; never a broken picture. `captioned`
 * adds its name, type and size as text.
 */
function thumbnail(image: ShownImage | PromptImage, opts: { extra?: Node; captioned?: boolean } = {}): HTMLElement {
  const block: ShownImage = { type: "image", ...image };
  const label = imageLabel(block);
  const view = imageView(block, imageCache);
  if ("pending" in view && view.fetch && block.sha256) post({ type: "image", sha256: block.sha256, ...(state.sessionId ? { sessionId: state.sessionId } : {}) });
  const media =
    "src" in view
      ? h("img", { src: view.src, alt: label })
      : "error" in view
        ? h("span", { class: "thumb-error", role: "note" }, `${block.name || block.mimeType}: ${view.error}`)
        : h("span", { class: "thumb-label thumb-loading" }, label);
  const cls = `thumb${"src" in view && view.fetched ? " fetched" : ""}${"error" in view ? " failed" : ""}${"pending" in view ? " loading" : ""}`;
  return h(
    "span",
    { class: cls, title: imageCaption(block), "data-sha256": block.sha256 },
    media,
    opts.captioned ? h("span", { class: "thumb-caption" }, imageCaption(block)) : null,
    opts.extra,
  );
}

/** The images a message or a tool returned, each with its caption. */
function imageList(images: ShownImage[] | undefined): HTMLElement | null {
  if (!images?.length) return null;
  return h("div", { class: "thumbs sent" }, ...images.map((image) => thumbnail(image, { captioned: true })));
}

/** A stored image arrived (or failed): redraw the items that show it, nothing else. */
function imageArrived(sha256: string): void {
  for (const [key, c] of itemCache) {
    const images = c.ref.kind === "user" || c.ref.kind === "tool" ? (c.ref.images ?? []) : [];
    if (images.some((i) => i.sha256 === sha256)) itemCache.set(key, { ...c, ref: { ...c.ref } }); // a copy: never the state's item, so it is drawn again
  }
}

function renderThumbs(): void {
  thumbs.replaceChildren(
    ...pendingImages.map((image, i) =>
      thumbnail(image, {
        extra: button("×", () => {
          pendingImages = pendingImages.filter((_, j) => j !== i);
          renderThumbs();
        }, { class: "secondary icon", "aria-label": `Remove image ${image.name ?? i + 1}` }),
      }),
    ),
  );
  thumbs.hidden = pendingImages.length === 0;
  persistNow(); // attached images survive a reload until they are sent or removed, with no moment they could be lost
}

// ---- messages from the host ----------------------------------------------------------

window.addEventListener("message", (e: MessageEvent<HostMessage>) => {
  const m = e.data;
  if (!m || typeof m !== "object") return;
  switch (m.type) {
    case "action":
      const held = state.items.length;
      state = reduce(state, m.action);
      if (m.action.type === "transcript") {
        imageCache.forgetErrors();
        if (loadingBefore !== undefined) {
          loadingBefore = undefined; // what it was for is gone; a page that still comes is not taken
          earlier.disabled = false;
        }
      }
      if (m.action.type === "earlierTranscript" && m.action.before === loadingBefore) {
        loadingBefore = undefined;
        earlier.disabled = false;
        if ((state.transcriptStart ?? 0) < m.action.before) {
          // Taken: every item it had was drawn, so the new ones are drawn from there.
          drawn = Math.min(drawn, held);
          drawEarlier();
        }
      }
      imageCache.forSession(state.sessionId);
      break;
    case "image":
      if (imageCache.put(m.sessionId, m.sha256, m.answer)) imageArrived(m.sha256);
      break;
    case "restoreInput":
      input.value = input.value ? `${m.text}\n${input.value}` : m.text;
      if (m.images?.length) {
        pendingImages = [...m.images, ...pendingImages];
        renderThumbs();
      }
      input.focus();
      updateMenu();
      break;
    case "commands":
      commands = m.commands;
      updateMenu();
      break;
    case "context":
      contextChips = m.items;
      break;
    case "workspace":
      workspaceInfo = m;
      break;
    case "prefs":
      enterWhileRunning = m.enterWhileRunning;
      break;
    case "branches":
      branches = m.branches;
      if (branches.length < 2) showBranches = false;
      break;
    case "draft":
      // The host's copy (it owns the draft): it replaces what the page's saved state gave,
      // which may be stale, unless the user has changed the draft since the page loaded.
      if (input.value === draftRestored.text && pendingImages === draftRestored.images) {
        input.value = m.text;
        pendingImages = m.images;
        draftSent = { text: m.text, images: m.images };
        renderThumbs();
        updateMenu();
      }
      break;
    case "mcpDone":
      mcpDone(m.name);
      break;
    case "draftSaved":
      // Nothing on screen changes: no redraw (at every pause in typing it laid out the whole page).
      composer.dataset.draftSaved = String(Number(composer.dataset.draftSaved ?? 0) + 1);
      return;
    case "addImages":
      pendingImages = [...pendingImages, ...m.images];
      renderThumbs();
      break;
  }
  schedule();
});

function schedule(): void {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    render();
    persist();
  });
}

let persistTimer: number | undefined;
/** Save the page's state soon (at most every 250 ms: streaming changes it at every token). */
function persist(): void {
  if (persistTimer !== undefined) return;
  persistTimer = window.setTimeout(persistNow, 250);
}
function persistNow(): void {
  if (persistTimer !== undefined) window.clearTimeout(persistTimer);
  persistTimer = undefined;
  vscode.setState({ chat: persistable(state), input: input.value, images: pendingImages } satisfies Persisted);
  // The page's state does not survive a window reload in every VS Code (code-server's
  // does not): the host keeps the draft too. `pendingImages` is replaced, never changed in place.
  if (input.value !== draftSent.text || pendingImages !== draftSent.images) {
    const images = pendingImages !== draftSent.images ? pendingImages : undefined;
    draftSent = { text: input.value, images: pendingImages };
    post(images ? { type: "draft", text: input.value, images } : { type: "draft", text: input.value });
    composer.dataset.draftPosted = String(Number(composer.dataset.draftPosted ?? 0) + 1);
  }
}

// ---- rendering -----------------------------------------------------------------------

let resyncAsked = false;
function render(): void {
  // A missed event means the transcript on screen may be wrong: ask the host to re-read it.
  if (state.gap && !resyncAsked && state.server.status === "running") {
    resyncAsked = true;
    post({ type: "resync" });
  }
  if (!state.gap) resyncAsked = false;
  renderBanner();
  renderToolbar();
  renderMcp();
  renderSessions();
  renderBranches();
  renderItems();
  renderFooter();
  renderComposer();
}

function renderBanner(): void {
  const s = state.server;
  banner.textContent = "";
  banner.className = `banner ${s.status}`;
  if (s.status === "running") {
    banner.hidden = true;
    return;
  }
  banner.hidden = false;
  if (s.status === "starting") {
    banner.append(h("span", {}, s.message ?? "Starting the Crank server…"));
    return;
  }
  const title = s.status === "notInstalled" ? "The Crank server was not found." : "The Crank server is not running.";
  banner.append(
    h("strong", {}, title),
    s.message ? h("div", { class: "detail" }, s.message) : "",
    h(
      "div",
      { class: "actions" },
      button("Restart server", () => post({ type: "restartServer" })),
      s.status === "notInstalled" ? button("How to install", () => post({ type: "installHelp" }), { class: "secondary" }) : null,
      button("Show log", () => post({ type: "showLog" }), { class: "secondary" }),
    ),
  );
}

// ---- the MCP line: a row per server, its state, Restart / Disable / Enable ---------------

/** Servers with a crank/mcpServer request out: their buttons wait for the host's answer. */
const mcpPending = new Set<string>();
/** What the line was last drawn from: it is drawn again only when that changes (not at every streamed token, which would swap a button under the pointer). */
let mcpDrawn: { servers: ChatState["mcp"]; pending: string; up: boolean } | undefined;

function mcpDone(name: string): void {
  mcpPending.delete(name);
}

function mcpAct(name: string, action: McpAction): void {
  mcpPending.add(name);
  post({ type: "mcpServer", name, action });
  schedule();
}

function renderMcp(): void {
  const pending = Array.from(mcpPending).sort().join("\n");
  const up = state.server.status === "running";
  if (mcpDrawn && mcpDrawn.servers === state.mcp && mcpDrawn.pending === pending && mcpDrawn.up === up) return;
  mcpDrawn = { servers: state.mcp, pending, up };
  const rows = mcpRows(state.mcp);
  mcpLine.hidden = rows.length === 0;
  mcpLine.replaceChildren(
    ...rows.map((r) =>
      h(
        "div",
        { class: `mcp-server ${r.state}`, "data-name": r.name, "data-state": r.state, ...(r.pid !== undefined ? { "data-pid": String(r.pid) } : {}), title: r.title },
        h(
          "div",
          { class: "mcp-head" },
          h("span", { class: "mcp-label" }, "MCP"),
          h("span", { class: "mcp-name" }, r.name),
          h("span", { class: `badge mcp-state ${r.state}` }, r.label),
          h("span", { class: "mcp-detail" }, r.detail),
          h("span", { class: "spacer" }),
          ...r.actions.map((a) =>
            button(a.label, () => mcpAct(r.name, a.action), {
              class: "secondary mcp-action",
              "data-action": a.action,
              disabled: mcpPending.has(r.name) || !up,
              "aria-label": `${a.label} the MCP server ${r.name}`,
            }),
          ),
        ),
        r.error !== undefined ? h("div", { class: "mcp-error", role: "alert" }, r.error) : null,
        r.stderr !== undefined ? h("pre", { class: "mcp-stderr", "aria-label": `The end of what ${r.name} wrote to stderr` }, r.stderr) : null,
      ),
    ),
  );
}

function renderToolbar(): void {
  wsButton.textContent = workspaceInfo.name ?? "No folder";
  wsButton.disabled = workspaceInfo.folders < 2;
  const current = state.model ? `${state.model.api}/${state.model.id}` : "";
  const options = state.models.map((m) => `${m.api}/${m.id}`);
  if (current && !options.includes(current)) options.unshift(current);
  const have = Array.from(modelSelect.options).map((o) => o.value).join("\n");
  if (have !== options.join("\n")) {
    modelSelect.textContent = "";
    for (const o of options) modelSelect.append(h("option", { value: o, title: o }, modelLabel(o.split("/").slice(1).join("/") || o)));
    if (!options.length) modelSelect.append(h("option", { value: "" }, "model"));
  }
  modelSelect.value = current;
  modelSelect.disabled = state.server.status !== "running";
  if (state.permissionMode) modeSelect.value = state.permissionMode;
  modeSelect.disabled = state.server.status !== "running";
  newButton.disabled = state.running;
  const sb = sandboxLine(state.sandbox);
  sandboxNote.hidden = !sb;
  if (sb) {
    sandboxNote.textContent = sb.text;
    sandboxNote.className = `sandbox ${sb.level}`;
    sandboxNote.title = sb.title;
  }
  sessionsButton.setAttribute("aria-expanded", String(showSessions));
}

function renderSessions(): void {
  sessionsPanel.hidden = !showSessions;
  if (!showSessions) return;
  sessionsPanel.textContent = "";
  sessionsPanel.append(h("div", { class: "sessions-title" }, "Sessions"));
  if (!state.sessions.length) sessionsPanel.append(h("div", { class: "hint" }, "No saved sessions yet."));
  for (const s of state.sessions) {
    const when = s.modified ? new Date(s.modified).toLocaleString() : "";
    const current = s.sessionId === state.sessionId;
    sessionsPanel.append(
      h(
        "button",
        {
          type: "button",
          class: `session${current ? " current" : ""}`,
          disabled: state.running,
          onclick: () => {
            showSessions = false;
            post({ type: "openSession", sessionId: s.sessionId });
          },
        },
        h("span", { class: "session-title" }, s.title || s.firstMessage || s.sessionId),
        h("span", { class: "session-meta" }, `${when}${s.messageCount !== undefined ? ` · ${s.messageCount} messages` : ""}`),
      ),
    );
  }
}

function renderBranches(): void {
  branchesButton.hidden = branches.length < 2;
  branchesButton.textContent = `Branches (${branches.length})`;
  branchesButton.setAttribute("aria-expanded", String(showBranches));
  branchesPanel.hidden = !showBranches;
  if (!showBranches) return;
  branchesPanel.textContent = "";
  branchesPanel.append(h("div", { class: "sessions-title" }, "Branches of this session"));
  for (const b of branches) {
    branchesPanel.append(
      h(
        "button",
        {
          type: "button",
          class: `session branch${b.current ? " current" : ""}`,
          disabled: state.running || b.current,
          "aria-current": b.current ? "true" : "false",
          onclick: () => {
            showBranches = false;
            post({ type: "switchBranch", entryId: b.entryId });
          },
        },
        h("span", { class: "session-title" }, b.title),
        h("span", { class: "session-meta" }, `${b.messages} messages${b.current ? " · current" : ""}`),
      ),
    );
  }
}

/** Edit and resend: the host goes back to before this message and puts its text in the input box. */
function editUserMessage(it: ChatItem & { kind: "user" }): void {
  const users = state.items.filter((x) => x.kind === "user");
  const at = users.findIndex((x) => x.id === it.id);
  if (at < 0) return;
  post({ type: "editResend", fromEnd: users.length - 1 - at, text: it.text });
}

function renderItems(): void {
  empty.hidden = state.items.length > 0;
  if (state.sessionId !== drawnSession) {
    drawnSession = state.sessionId;
    drawn = DRAWN_STEP;
  }
  const from = Math.max(0, state.items.length - drawn);
  const unread = state.transcriptStart ?? 0;
  earlier.hidden = from === 0 && unread === 0;
  const label = from > 0 ? `Show earlier (${from} more)` : `Show earlier (${unread} more messages)`;
  if (earlier.textContent !== label) earlier.textContent = label;
  const seen = new Set<string>();
  const els: HTMLElement[] = [];
  /** The page's element in each place as it is now (a redrawn item's old one), to tell a new order from redrawn items. */
  const shown: HTMLElement[] = [];
  const replaced: [HTMLElement, HTMLElement][] = [];
  for (let at = from; at < state.items.length; at++) {
    const it = state.items[at];
    const key = `${it.kind}:${it.id}`;
    seen.add(key);
    const cached = itemCache.get(key);
    if (cached && cached.ref === it) {
      els.push(cached.el);
      shown.push(cached.el);
      continue;
    }
    const el = renderItem(it);
    if (cached) replaced.push([cached.el, el]);
    itemCache.set(key, { ref: it, el });
    els.push(el);
    shown.push(cached ? cached.el : el);
  }
  for (const key of Array.from(itemCache.keys())) if (!seen.has(key)) itemCache.delete(key);
  const current = list.children;
  const reordered = current.length !== shown.length || shown.some((el, i) => current[i] !== el);
  if (!replaced.length && !reordered) return; // nothing to draw: the page's layout is not asked for
  // Read before the change (a layout of the page as it is): a view kept at the bottom stays there.
  const nearBottom = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 60;
  for (const [old, el] of replaced) old.replaceWith(el);
  if (reordered) list.replaceChildren(...els);
  if (nearBottom) scroller.scrollTop = scroller.scrollHeight;
}

function renderItem(it: ChatItem): HTMLElement {
  switch (it.kind) {
    case "user":
      if (it.summary)
        return h(
          "details",
          { class: `msg summary ${it.summary}` },
          h("summary", { class: "who" }, it.summary === "compaction" ? "Summary of the earlier conversation (compacted)" : "Summary of an abandoned branch"),
          h("div", { class: "text" }, it.text),
        );
      return h(
        "div",
        { class: "msg user" },
        h(
          "div",
          { class: "who" },
          "You",
          h("span", { class: "spacer" }),
          button("Edit", () => editUserMessage(it), { class: "secondary edit-resend", title: "Edit and resend: go back to before this message (the current branch is kept)", "aria-label": "Edit and resend this message" }),
        ),
        h("div", { class: "text" }, it.text),
        imageList(it.images),
      );
    case "assistant": {
      const el = h("div", { class: `msg assistant${it.streaming ? " streaming" : ""}` });
      for (const b of it.blocks) {
        if (b.type === "text" && b.text) el.append(renderMarkdown(b.text, (code) => post({ type: "copy", text: code })));
        else if (b.type === "thinking" && b.thinking)
          el.append(h("details", { class: "thinking" }, h("summary", {}, it.streaming ? "Thinking…" : "Thinking"), h("div", { class: "thinking-text" }, b.thinking)));
        else if (b.type === "toolCall" && it.streaming) el.append(h("div", { class: "preparing" }, `Preparing ${b.name || "a tool call"}…`));
      }
      if (it.stopReason === "length") el.append(h("div", { class: "note warning" }, "Cut short: the reply hit the length limit."));
      // a run cut off by the server's shutdown (a reload, a restart) says so; Stop is the user's
      if (it.stopReason === "aborted") el.append(h("div", { class: "note" }, it.errorMessage?.startsWith("Interrupted") ? it.errorMessage : "Stopped."));
      if (it.stopReason === "error") el.append(h("div", { class: "note error" }, `Error: ${it.errorMessage ?? "the model request failed."}`));
      return el;
    }
    case "tool":
      return it.edit ? renderEdit(it) : renderTool(it);
    case "permission":
      return renderPermission(it);
    case "notice":
      return h("div", { class: `notice ${it.level}`, role: it.level === "error" ? "alert" : "status" }, it.text);
    case "changes":
      return renderRunChanges(it);
  }
}

/**
 * The files a finished run changed, under it: each with its kind, its +/- lines and a
 * click for its diff, Keep and Undo per file, Keep all and Undo all; a file the user
 * kept leaves the list (the summary counts it); a file a revert put back says "undone"
 * and offers Redo; what the last Undo could not put back is listed with its reason and a
 * Force button.
 */
function renderRunChanges(c: ChangesItem): HTMLElement {
  const undoAll = undoAllPaths(c);
  const keepAll = keepAllPaths(c);
  const card = h("div", { class: "card changes", "data-run": c.id, role: "group", "aria-label": "Files this run changed" });
  card.append(
    h(
      "div",
      { class: "card-head" },
      h("span", { class: "tool-name" }, "Changed files"),
      h("span", { class: "changes-summary" }, changesSummary(c)),
      h("span", { class: "spacer" }),
      button("Keep all", () => post({ type: "keepChanges", runId: c.id, paths: keepAll }), { class: "secondary keep-all", disabled: !keepAll.length, title: "Accept every change of this run still waiting: the files leave this list" }),
      button("Undo all", () => post({ type: "undoChanges", runId: c.id, paths: undoAll }), { class: "secondary undo-all", disabled: !undoAll.length, title: "Put back every file of this run as it was before it" }),
    ),
  );
  const rows = h("ul", { class: "change-files" });
  for (const f of shownFiles(c)) {
    const kind = CHANGE_KIND[f.status];
    const lines = lineCounts(f);
    rows.append(
      h(
        "li",
        { class: `change-file ${kind}${f.revertedBy ? " undone" : ""}`, "data-path": f.path },
        h("span", { class: "change-kind" }, kind),
        h("button", { type: "button", class: "change-path", title: `Open the diff of ${f.path} (before the run ↔ now)`, onclick: () => post({ type: "changeDiff", runId: c.id, path: f.path }) }, f.path),
        lines ? h("span", { class: "change-lines", title: `${f.linesAdded} line(s) added, ${f.linesRemoved} removed` }, h("span", { class: "lines-added" }, `+${f.linesAdded}`), " ", h("span", { class: "lines-removed" }, `-${f.linesRemoved}`)) : null,
        f.revertedBy ? h("span", { class: "badge undone" }, "undone") : null,
        !f.restorable ? h("span", { class: "change-note", title: f.reason ?? "" }, f.reason?.includes("not restorable") ? f.reason : `not restorable: ${f.reason ?? "its content was not kept"}`) : null,
        h("span", { class: "spacer" }),
        f.revertedBy ? button("Redo", () => post({ type: "redoChange", runId: c.id, revertId: f.revertedBy!, path: f.path }), { class: "secondary redo-file", "aria-label": `Redo the change to ${f.path}` }) : null,
        pending(f) ? button("Keep", () => post({ type: "keepChanges", runId: c.id, paths: [f.path] }), { class: "secondary keep-file", "aria-label": `Keep the change to ${f.path}` }) : null,
        undoable(f) ? button("Undo", () => post({ type: "undoChanges", runId: c.id, paths: [f.path] }), { class: "secondary undo-file", "aria-label": `Undo the change to ${f.path}` }) : null,
      ),
    );
  }
  card.append(rows);
  if (c.conflicts?.length) {
    const paths = c.conflicts.map((x) => x.path);
    card.append(
      h("div", { class: "note warning change-conflicts", role: "alert" }, ...c.conflicts.map((x) => h("div", { class: "change-conflict" }, `Not undone: ${x.path}: ${x.reason}`))),
      h("div", { class: "actions" }, button("Force", () => post({ type: "undoChanges", runId: c.id, paths, force: true }), { class: "secondary force-undo", title: "Undo anyway: overwrite what changed since the run" })),
    );
  }
  return card;
}

const statusLabel: Record<ToolItem["status"], string> = { pending: "waiting", running: "running", done: "done", failed: "failed" };

function keyArg(t: ToolItem): string {
  const a = t.args;
  const pick = a.command ?? pathArg(a) ?? a.pattern ?? a.query ?? a.url;
  if (typeof pick === "string") return pick;
  const json = JSON.stringify(a);
  return json === "{}" ? "" : json;
}

function tail(text: string, lines: number): string {
  const parts = text.split("\n");
  return parts.length <= lines ? text : `… ${parts.length - lines} earlier lines\n${parts.slice(-lines).join("\n")}`;
}

function toolHeader(t: ToolItem, title: string, arg: string): HTMLElement {
  return h(
    "div",
    { class: "card-head" },
    t.asked && t.status === "running"
      ? h("span", { class: "badge waiting" }, "waiting for approval")
      : h("span", { class: `badge ${t.status}` }, statusLabel[t.status]),
    h("span", { class: "tool-name" }, title),
    h("code", { class: "tool-arg", title: arg }, arg),
  );
}

function renderTool(t: ToolItem): HTMLElement {
  const card = h("div", { class: `card tool ${t.status}`, "data-tool": t.name, "data-id": t.id });
  card.append(toolHeader(t, t.name, keyArg(t)));
  const images = imageList(t.images);
  if (images) card.append(images);
  if (t.output && t.status === "running") card.append(h("pre", { class: "live" }, tail(t.output, 40)));
  if (t.result !== undefined) {
    const body = t.result || t.output;
    card.append(
      h("details", { class: "result", open: t.status === "failed" }, h("summary", {}, t.status === "failed" ? "Error" : "Output"), h("pre", {}, tail(body || "(no output)", 200))),
    );
  }
  return card;
}

/** A line diff of two snippets, cut at `max` lines with a note saying how many were left out. */
function diffView(oldText: string, newText: string, path: string, max: number): HTMLElement {
  const diff = h("pre", { class: "diff", "aria-label": `Change to ${path}` });
  const lines = snippetDiff(oldText, newText);
  for (const l of lines.slice(0, max)) diff.append(h("div", { class: `line ${l.sign === "+" ? "add" : l.sign === "-" ? "del" : "ctx"}` }, `${l.sign} ${l.text}`));
  if (lines.length > max) diff.append(h("div", { class: "line ctx" }, `… ${lines.length - max} more lines`));
  return diff;
}

function renderEdit(t: ToolItem): HTMLElement {
  const e = t.edit!;
  const card = h("div", { class: `card tool edit ${t.status}`, "data-tool": t.name, "data-id": t.id });
  card.append(toolHeader(t, e.mode === "write" ? "Write" : "Edit", e.path));
  // While a question asks about this edit, its card shows the diff; showing it here too would say it twice.
  if (t.asked) card.append(h("div", { class: "note asked" }, "The change is shown in the question above."));
  else card.append(diffView(e.oldText, e.newText, e.path, 80));
  if (t.status === "failed" && t.result) card.append(h("div", { class: "note error" }, t.result));
  card.append(
    h(
      "div",
      { class: "actions" },
      button("Open diff", () => post({ type: "openDiff", toolCallId: t.id }), { class: "secondary" }),
      button("Undo this edit", () => post({ type: "undoEdit", toolCallId: t.id }), { class: "secondary", disabled: t.status !== "done" }),
      button("Open file", () => post({ type: "openFile", path: e.path }), { class: "secondary" }),
    ),
  );
  return card;
}

const decisionLabel: Record<PermissionDecision, string> = {
  allow: "Allowed once",
  allowSession: "Allowed for this session",
  allowAlways: "Always allowed",
  reject: "Rejected",
};

function renderPermission(p: PermissionItem): HTMLElement {
  const r = p.request;
  const card = h("div", { class: `card permission${p.decision ? " answered" : ""}`, "data-id": p.id, role: "group", "aria-label": `Permission for ${r.toolName}` });
  card.append(h("div", { class: "card-head" }, h("span", { class: "tool-name" }, `Allow ${r.toolName}?`)));
  const pv = r.preview;
  if (p.decision) {
    const what = pv?.kind === "diff" ? pv.path : pv?.kind === "command" ? pv.command : keyArg({ args: r.arguments } as ToolItem);
    card.querySelector(".card-head")!.append(h("code", { class: "tool-arg", title: what }, what));
    const label = p.withdrawn ? "Not answered" : decisionLabel[p.decision];
    card.append(h("div", { class: `decision ${p.withdrawn ? "withdrawn" : p.decision}` }, `${label}${p.reason ? `: ${p.reason}` : ""}`));
    return card;
  }
  if (r.warning) card.append(h("div", { class: "warning" }, r.warning));
  if (pv?.kind === "command") card.append(h("pre", { class: "command" }, pv.command));
  else if (pv?.kind === "diff") {
    card.append(h("div", { class: "path" }, pv.path));
    if (pv.unsavedChanges) card.append(h("div", { class: "unsaved-note" }, "Your unsaved changes to this file are saved with it."));
    if (pv.oldTextOmitted !== undefined)
      card.append(h("div", { class: "note" }, `The old file (${pv.oldTextOmitted} bytes) is too large or not text: it is replaced whole, with no diff, and cannot be restored by undo.`));
    card.append(diffView(pv.oldText, pv.newText, pv.path, 60));
  } else card.append(h("pre", { class: "command" }, keyArg({ args: r.arguments } as ToolItem)));
  const reason = h("input", { type: "text", class: "reason", placeholder: "Reason (optional, sent with Reject)", "aria-label": "Reason for rejecting" }) as HTMLInputElement;
  const answer = (decision: PermissionDecision) => {
    const why = decision === "reject" ? reason.value.trim() : "";
    post(why ? { type: "permission", id: p.id, decision, reason: why } : { type: "permission", id: p.id, decision });
  };
  reason.addEventListener("keydown", (e) => {
    if (e.key === "Enter") answer("reject");
  });
  card.append(
    h(
      "div",
      { class: "actions" },
      button("Allow", () => answer("allow"), { class: "allow" }),
      button("Allow for this session", () => answer("allowSession"), { class: "secondary" }),
      button("Always allow", () => answer("allowAlways"), { class: "secondary" }),
      button("Reject", () => answer("reject"), { class: "reject secondary" }),
    ),
    reason,
  );
  return card;
}

function formatTokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(n >= 100000 ? 0 : 1)}k` : String(n);
}

function renderFooter(): void {
  let text = "";
  if (state.compacting) text = "Compacting…";
  else if (state.retry) text = `Retrying (attempt ${state.retry.attempt})…`;
  else if (state.running) text = "Working…";
  status.textContent = text;
  status.className = `status${state.running ? " busy" : ""}`;
  const f = contextFraction(state);
  meter.hidden = f === undefined;
  if (f !== undefined && state.usage) {
    const pct = Math.round(f * 100);
    meterBar.style.width = `${pct}%`;
    meter.className = `meter${f > 0.9 ? " high" : f > 0.7 ? " mid" : ""}`;
    meter.setAttribute("aria-valuenow", String(pct));
    meterText.textContent = `${formatTokens(state.usage.contextTokens)} / ${formatTokens(state.usage.contextWindow)} (${pct}%)`;
    meter.title = `Context: ${state.usage.contextTokens} of ${state.usage.contextWindow} tokens. Input ${state.usage.input}, output ${state.usage.output}, cache read ${state.usage.cacheRead}, cache write ${state.usage.cacheWrite}.`;
    cost.textContent = `$${state.usage.cost.toFixed(state.usage.cost < 1 ? 4 : 2)}`;
  } else {
    meterText.textContent = "";
    cost.textContent = "";
  }
}

function renderComposer(): void {
  document.body.classList.toggle("running", state.running);
  const down = state.server.status !== "running";
  stopButton.hidden = !state.running;
  sendButton.textContent = state.running ? (enterWhileRunning === "steer" ? "Steer" : "Queue") : "Send";
  sendButton.title = state.running ? "While the agent runs: Enter and this button do the same; Alt+Enter does the other" : "Send (Enter)";
  sendButton.disabled = down;
  const steerFirst = enterWhileRunning === "steer";
  input.placeholder = down
    ? "The server is not running."
    : state.running
      ? steerFirst
        ? "Steer the agent (Enter) or queue a follow-up (Alt+Enter)…"
        : "Queue a follow-up (Enter) or steer the agent (Alt+Enter)…"
      : "Ask Crank… (Enter to send, Shift+Enter for a new line)";
  hint.textContent = state.running ? (steerFirst ? "Enter: steer · Alt+Enter: follow-up · Esc: stop" : "Enter: follow-up · Alt+Enter: steer · Esc: stop") : "";
  const q = state.queue;
  queueList.textContent = "";
  queueList.hidden = q.steering.length + q.followUp.length === 0;
  const row = (kind: "steering" | "followUp", text: string, index: number) =>
    h(
      "li",
      { class: `queued ${kind}` },
      h("span", { class: "queued-kind" }, kind === "steering" ? "steer" : "follow-up"),
      h("span", { class: "queued-text" }, text),
      button("×", () => post({ type: "removeQueued", kind, index, text }), { class: "secondary icon", "aria-label": `Remove queued message: ${text}`, title: "Remove from the queue" }),
    );
  q.steering.forEach((t, i) => queueList.append(row("steering", t, i)));
  q.followUp.forEach((t, i) => queueList.append(row("followUp", t, i)));
  chips.textContent = "";
  chips.hidden = contextChips.length === 0;
  contextChips.forEach((c, i) =>
    chips.append(
      h("span", { class: "chip" }, c.label, button("×", () => post({ type: "removeContext", index: i }), { class: "secondary icon", "aria-label": `Remove context ${c.label}` })),
    ),
  );
}

imageCache.forSession(state.sessionId);
renderThumbs();
render();
post({ type: "ready" });
