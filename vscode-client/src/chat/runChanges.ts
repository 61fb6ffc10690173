/**
 * The files a finished run changed, as the chat shows them under that run: one item per
 * run (`crank/changes` for it), each file with what happened to it and its +/- lines,
 * whether a revert put it back (`revertedBy`: Redo offered) or the user kept it (`kept`:
 * its row leaves the list), and the conflicts of the last Undo (with Force offered).
 *
 * Pure (no `vscode`, no DOM): the reducer and the page use it, and node --test runs it.
 * Where the list goes: after the run's last tool card that changed a file, at the end of
 * that run (just before the next message the user typed). A run whose cards are not in
 * the chat (another branch) is not shown; a run that just settled goes at the end.
 */
import type { ChangedFile, RevertConflict, RunChangesJson } from "../protocol/types";

export interface ChangesItem {
  kind: "changes";
  /** The run's id (one list per run). */
  id: string;
  files: ChangedFile[];
  /** What the last Undo of this run could not put back, and why (Force overwrites them). */
  conflicts?: RevertConflict[];
}

/** What the chat calls each status (the words the user reads: created, not "added"). */
export const CHANGE_KIND: Record<ChangedFile["status"], "created" | "edited" | "deleted"> = {
  added: "created",
  modified: "edited",
  deleted: "deleted",
};

interface Placeable {
  kind: string;
  id: string;
  summary?: unknown;
}

/** A file of the run an Undo can still take back (restorable, not put back already, not kept). */
export function undoable(f: ChangedFile): boolean {
  return f.restorable && !f.revertedBy && !f.kept;
}

/** A file of the run still waiting for the user's answer (Keep or Undo): neither kept nor put back. */
export function pending(f: ChangedFile): boolean {
  return !f.revertedBy && !f.kept;
}

/** The files the list shows as rows: every one but those kept (a kept file has had its answer). */
export function shownFiles(item: ChangesItem): ChangedFile[] {
  return item.files.filter((f) => !f.kept);
}

/** The paths "Undo all" sends: every file of the run not already put back, not kept, and restorable. */
export function undoAllPaths(item: ChangesItem): string[] {
  return item.files.filter(undoable).map((f) => f.path);
}

/** The paths "Keep all" sends: every file still pending. */
export function keepAllPaths(item: ChangesItem): string[] {
  return item.files.filter(pending).map((f) => f.path);
}

/** "+3 -1": the lines the file's change added and removed, or "" when the server did not count them (binary, too large). */
export function lineCounts(f: ChangedFile): string {
  if (typeof f.linesAdded !== "number" || typeof f.linesRemoved !== "number") return "";
  return `+${f.linesAdded} -${f.linesRemoved}`;
}

/**
 * Where `item` goes in `items` (an index to insert at), or -1 when none of its tool
 * cards is there: after the last card of a call that changed one of its files, past the
 * rest of that run (up to the next user message that is not a summary).
 */
export function placeOf<T extends Placeable>(items: readonly T[], item: ChangesItem): number {
  const calls = new Set(item.files.flatMap((f) => f.byTool));
  let last = -1;
  items.forEach((it, i) => {
    if (it.kind === "tool" && calls.has(it.id)) last = i;
  });
  if (last < 0) return -1;
  for (let i = last + 1; i < items.length; i++) {
    const it = items[i];
    if (it.kind === "user" && !it.summary) return i;
    if (it.kind === "changes") return i; // the next run's list: this run ended before it
  }
  return items.length;
}

/**
 * `items` with `item` in its place (one list per run: an earlier one is replaced where
 * it is); a list with no files is removed. `atEnd`: a run that just settled, whose
 * items are all the last ones (a steer in the middle of it included).
 */
export function withRunChanges<T extends Placeable>(items: readonly T[], item: ChangesItem, atEnd = false): (T | ChangesItem)[] {
  const i = items.findIndex((it) => it.kind === "changes" && it.id === item.id);
  // The same list read again (every refresh reads them): nothing changes, so nothing is redrawn.
  if (i >= 0 && sameList(items[i] as unknown as ChangesItem, item)) return items as (T | ChangesItem)[];
  if (i >= 0 && item.files.length) {
    const copy: (T | ChangesItem)[] = items.slice();
    copy[i] = item;
    return copy;
  }
  const rest = i >= 0 ? items.filter((_, j) => j !== i) : items.slice();
  if (!item.files.length) return rest;
  if (atEnd) return [...rest, item];
  const at = placeOf(rest, item);
  if (at < 0) return rest;
  return [...rest.slice(0, at), item, ...rest.slice(at)];
}

/** `items` (a transcript just read) with every run's list in its place, none other; a list shown already and read again unchanged keeps its identity. */
export function withAllRunChanges<T extends Placeable>(items: readonly T[], runs: readonly (RunChangesJson | ChangesItem)[]): (T | ChangesItem)[] {
  const shown = new Map(runChangesIn(items).map((c) => [c.id, c]));
  let out: (T | ChangesItem)[] = items.filter((it) => it.kind !== "changes");
  for (const run of runs) {
    const item: ChangesItem = "kind" in run ? run : { kind: "changes", id: run.runId, files: run.files };
    const old = shown.get(item.id);
    out = withRunChanges(out, old && sameList(old, item) ? old : item);
  }
  return out;
}

function sameList(a: ChangesItem, b: ChangesItem): boolean {
  return a === b || (JSON.stringify(a.files) === JSON.stringify(b.files) && JSON.stringify(a.conflicts ?? []) === JSON.stringify(b.conflicts ?? []));
}

/** The lists an item list holds, oldest first (kept across a transcript read). */
export function runChangesIn(items: readonly Placeable[]): ChangesItem[] {
  return items.filter((it): it is ChangesItem & Placeable => it.kind === "changes") as ChangesItem[];
}

/** The line under the run's title: how many files, and how many of them were put back or kept. */
export function changesSummary(item: ChangesItem): string {
  const n = item.files.length;
  const files = `${n} file${n === 1 ? "" : "s"} changed`;
  const parts = [
    [item.files.filter((f) => f.revertedBy).length, "undone"],
    [item.files.filter((f) => f.kept).length, "kept"],
  ] as const;
  const said = parts.filter(([count]) => count > 0).map(([count, word]) => `${count === n ? "all" : count} ${word}`);
  return [files, ...said].join(", ");
}
