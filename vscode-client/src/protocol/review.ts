/**
 * What the review of a run's changes shows, free of `vscode` (unit-tested): one quick
 * pick item per changed file, with what happened to it (its +/- lines, whether the user
 * kept it) and, when it cannot be put back, why; and the sentence that sums up a revert.
 */
import type { ChangedFile, RevertResult } from "./types";

const ICON: Record<ChangedFile["status"], string> = { added: "$(diff-added)", modified: "$(diff-modified)", deleted: "$(diff-removed)" };

export interface ChangeItem {
  label: string;
  description: string;
  detail?: string;
  file: ChangedFile;
}

export function changeItems(files: readonly ChangedFile[]): ChangeItem[] {
  return files.map((file) => ({
    label: `${ICON[file.status]} ${file.path}`,
    description: [file.status, typeof file.linesAdded === "number" ? `+${file.linesAdded} -${file.linesRemoved ?? 0}` : "", file.kept ? "kept" : ""].filter(Boolean).join(" "),
    detail: file.restorable ? undefined : `not restorable: ${file.reason ?? "its content was not kept"}`,
    file,
  }));
}

export function revertSummary(result: RevertResult): { text: string; warn: boolean } {
  const put = `Crank put back ${result.reverted.length} file(s)`;
  if (!result.conflicts.length) return { text: `${put}.`, warn: false };
  const refused = result.conflicts.map((c) => `${c.path}: ${c.reason}`).join("; ");
  return { text: `${put}; not restored: ${refused}`, warn: true };
}
