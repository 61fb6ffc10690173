/**
 * What an edit tool call changed, and how to show or revert exactly that change.
 *
 * Pure string work, no `vscode`: the extension feeds it the document's current text and
 * applies the answer as a WorkspaceEdit, so undo touches only the lines this call wrote.
 */
import type { ToolInfoJson } from "../protocol/types";

export interface EditInfo {
  path: string;
  /** "replace": oldText became newText somewhere in the file; "write": the file became newText. */
  mode: "replace" | "write";
  oldText: string;
  newText: string;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** The path argument under the names tools commonly use. */
export function pathArg(args: Record<string, unknown>): string | undefined {
  return str(args.path) ?? str(args.file_path) ?? str(args.filePath) ?? str(args.file);
}

/**
 * Recognise an edit or write call from its arguments and what the tool says about itself
 * (`crank/state` `tools`: `editsFiles`); undefined for other tools. Only a server too old
 * to list its tools leaves the name to go by.
 */
export function editOf(name: string, args: Record<string, unknown>, tools?: readonly ToolInfoJson[]): EditInfo | undefined {
  const path = pathArg(args);
  if (!path) return undefined;
  const oldText = str(args.oldText) ?? str(args.old_string) ?? str(args.oldString);
  const newText = str(args.newText) ?? str(args.new_string) ?? str(args.newString);
  if (oldText !== undefined && newText !== undefined) return { path, mode: "replace", oldText, newText };
  const content = str(args.content);
  const info = tools?.find((t) => t.name === name);
  const writes = info ? info.editsFiles : /^(write|create)/i.test(name);
  if (writes && content !== undefined) return { path, mode: "write", oldText: "", newText: content };
  return undefined;
}

/** What a write replaced, for "Undo this edit": unknown when the server did not load it. */
export function previousFileOf(preview: { oldText: string; oldTextOmitted?: number }): string | undefined {
  return preview.oldTextOmitted === undefined ? preview.oldText : undefined;
}

function occurrences(hay: string, needle: string): number[] {
  const at: number[] = [];
  if (!needle) return at;
  for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) at.push(i);
  return at;
}

export type UndoPlan =
  | { ok: true; offset: number; length: number; replacement: string }
  | { ok: false; reason: string };

/**
 * Where to put the old text back. The edit's new text must still be in the file exactly
 * once; otherwise the file moved on and a blind revert could destroy later work, so we
 * refuse and say why.
 */
export function planUndo(current: string, e: EditInfo, previousFile?: string): UndoPlan {
  if (e.mode === "write") {
    if (current !== e.newText) return { ok: false, reason: `${e.path} changed after this write; not reverting over later work.` };
    if (previousFile === undefined) return { ok: false, reason: `the content of ${e.path} before this write is not known.` };
    return { ok: true, offset: 0, length: current.length, replacement: previousFile };
  }
  const at = occurrences(current, e.newText);
  if (at.length === 0) return { ok: false, reason: `the edited text is no longer in ${e.path}.` };
  if (at.length > 1) return { ok: false, reason: `the edited text appears ${at.length} times in ${e.path}; cannot tell which to revert.` };
  return { ok: true, offset: at[0], length: e.newText.length, replacement: e.oldText };
}

/** The whole file before and after the edit, for a side-by-side diff; falls back to the snippets. */
export function diffSides(current: string | undefined, e: EditInfo, previousFile?: string): { before: string; after: string } {
  if (current === undefined) return { before: e.mode === "write" ? previousFile ?? "" : e.oldText, after: e.newText };
  if (e.mode === "write") return { before: previousFile ?? "", after: current };
  const plan = planUndo(current, e);
  if (!plan.ok) return { before: e.oldText, after: e.newText };
  return { before: current.slice(0, plan.offset) + plan.replacement + current.slice(plan.offset + plan.length), after: current };
}

/** Both sides of a change the user is still asked about: the server's preview holds the
 * whole file as it is and as it would be (nothing is applied yet, so the file on disk
 * is the "before", not the "after"). An old file too large to load shows as empty. */
export function proposedSides(preview: { oldText: string; newText: string; oldTextOmitted?: number }): { before: string; after: string } {
  return { before: preview.oldTextOmitted === undefined ? preview.oldText : "", after: preview.newText };
}

/** What "Open diff" shows: the proposal while the change is not applied, else the applied change in the file. */
export function openDiffSides(
  t: { edit: EditInfo; previousFile?: string; proposed?: { before: string; after: string } },
  current: string | undefined,
): { before: string; after: string } {
  return t.proposed ?? diffSides(current, t.edit, t.previousFile);
}

/** A compact unified-style line diff of two snippets, for the card (not a full LCS diff). */
export function snippetDiff(oldText: string, newText: string): { sign: " " | "-" | "+"; text: string }[] {
  const a = oldText === "" ? [] : oldText.split("\n");
  const b = newText === "" ? [] : newText.split("\n");
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const out: { sign: " " | "-" | "+"; text: string }[] = [];
  for (const t of a.slice(0, head)) out.push({ sign: " ", text: t });
  for (const t of a.slice(head, a.length - tail)) out.push({ sign: "-", text: t });
  for (const t of b.slice(head, b.length - tail)) out.push({ sign: "+", text: t });
  for (const t of a.slice(a.length - tail)) out.push({ sign: " ", text: t });
  return out;
}
