/**
 * Branches of a session, read from crank/tree: where "edit and resend" goes back to,
 * and the list of branches the chat can switch between. Pure functions over the tree
 * (no `vscode`), unit-tested.
 *
 * A session file is a tree; the transcript is the path from the root to the tip. Going
 * back appends a `branch` entry whose parent is the entry gone back to, so every leaf
 * of the tree ends one branch. Leaves whose path holds the same messages (a `branch`
 * entry nothing followed) are one branch.
 */
import type { TreeEntry, TreeResult } from "../protocol/types";

export interface BranchInfo {
  /** The entry to go to (crank/branch entryId) to continue this branch: its last message. */
  entryId: string;
  current: boolean;
  /** The first user message after the fork from the branch before it, else its last user message. */
  title: string;
  /** Messages on the branch's path (root to its last message). */
  messages: number;
}

function index(tree: TreeResult): Map<string, TreeEntry> {
  return new Map(tree.entries.map((e) => [e.id, e]));
}

/** From `id` up to the root, nearest first; stops on a missing parent or a cycle. */
function ancestors(byId: Map<string, TreeEntry>, id: string | null): TreeEntry[] {
  const out: TreeEntry[] = [];
  let cur = id ? byId.get(id) : undefined;
  while (cur && out.length <= byId.size) {
    out.push(cur);
    cur = cur.parentId ? byId.get(cur.parentId) : undefined;
  }
  if (out.length <= byId.size) return out;
  // Longer than the tree: a cycle (a damaged file). Cut at the first entry met again;
  // only then is a set of ids kept (one per step cost half the time of a long session).
  const seen = new Set<string>();
  const once: TreeEntry[] = [];
  for (const e of out) {
    if (seen.has(e.id)) break;
    seen.add(e.id);
    once.push(e);
  }
  return once;
}

/** The nearest message entry at or above `id` (a branch entry stands for where it went back to). */
function nearestMessage(byId: Map<string, TreeEntry>, id: string | null): TreeEntry | undefined {
  // As `ancestors`: a walk longer than the tree went round a cycle.
  let cur = id ? byId.get(id) : undefined;
  for (let steps = 0; cur && steps <= byId.size; steps++) {
    if (cur.type === "message") return cur;
    cur = cur.parentId ? byId.get(cur.parentId) : undefined;
  }
  return undefined;
}

/**
 * The entry to branch to so that the next prompt replaces the user message that is
 * `fromEnd` user messages before the tip (0: the last one), i.e. that message's parent.
 * `text` must agree with the entry's preview (a guard against a transcript that moved
 * on); `null` when the message is the first entry of the session (nothing before it:
 * start a new session instead); undefined when no such message is on the path.
 */
export function forkPointFor(tree: TreeResult, fromEnd: number, text: string): { entryId: string | null } | undefined {
  const byId = index(tree);
  const users = ancestors(byId, tree.tip).filter((e) => e.type === "message" && e.role === "user");
  const hit = users[fromEnd];
  if (!hit || !previewMatches(hit.preview, text)) return undefined;
  return { entryId: hit.parentId };
}

/** The server's preview is the text with whitespace collapsed, perhaps cut with "…". */
function previewMatches(preview: string | undefined, text: string): boolean {
  if (preview === undefined) return true;
  const flat = text.split(/\s+/).filter(Boolean).join(" ");
  const p = preview.endsWith("…") ? preview.slice(0, -1) : preview;
  return preview.endsWith("…") ? flat.startsWith(p) : flat === p;
}

/** Every branch of the session, oldest first, the one at the tip marked current. */
export function branchesOf(tree: TreeResult): BranchInfo[] {
  const byId = index(tree);
  const parents = new Set(tree.entries.map((e) => e.parentId).filter((p): p is string => !!p));
  const current = nearestMessage(byId, tree.tip)?.id;
  const seen = new Set<string>();
  const out: BranchInfo[] = [];
  const paths: TreeEntry[][] = []; // each branch's, from its last message up to the root
  for (const leaf of tree.entries) {
    if (parents.has(leaf.id) && leaf.id !== tree.tip) continue;
    const last = nearestMessage(byId, leaf.id);
    if (!last || seen.has(last.id)) continue;
    seen.add(last.id);
    const up = ancestors(byId, last.id);
    paths.push(up);
    const path = up.filter((e) => e.type === "message");
    const users = path.filter((e) => e.role === "user");
    out.push({ entryId: last.id, current: last.id === current, title: users[users.length - 1]?.preview ?? last.preview ?? last.id, messages: path.length });
  }
  // Name each branch by its first user message after the point where it left the others.
  if (out.length > 1) {
    // An entry is a branch's own when no other branch's path holds it: counted once per
    // path (asking every other path for every entry was quadratic, seconds at 50,000).
    for (const up of paths) up.reverse();
    const holders = new Map<TreeEntry, number>();
    for (const path of paths) for (const e of path) holders.set(e, (holders.get(e) ?? 0) + 1);
    out.forEach((b, i) => {
      const firstUser = paths[i].find((e) => holders.get(e) === 1 && e.type === "message" && e.role === "user");
      if (firstUser?.preview) b.title = firstUser.preview;
    });
  }
  return out;
}
