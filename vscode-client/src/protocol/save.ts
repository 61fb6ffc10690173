/**
 * Answers crank/saveDocument: the server has just applied the agent's change to an open
 * document and asks the editor to save it, so the commands the agent runs next (tests,
 * grep) read what the editor shows. Free of `vscode`: the extension passes a host backed
 * by `TextDocument.save()`, the integration test one backed by its own buffers.
 *
 * When the server says the document also held the user's unsaved edits, they are saved
 * with it (that is the only way both can be on disk), and the user is told so, never
 * silently. Every request gets an answer; a failure is `{saved: false, reason}`.
 */
import type { SaveDocumentParams, SaveDocumentResult } from "./types";

export interface SavableDocument {
  /** A short name for messages (the file's name). */
  readonly name: string;
  /** Save it; false when the editor did not (VS Code's `TextDocument.save()`). */
  save(): Promise<boolean>;
}

export interface SaveHost {
  /** The open document with this URI, or undefined. */
  find(uri: string): SavableDocument | undefined;
  /** Tell the user something (a notification; never waits for them). */
  inform(message: string): void;
}

export function unsavedNotice(name: string): string {
  return `Crank saved ${name} together with your unsaved changes to it, so the agent's commands see what the editor shows. Undo (Ctrl+Z) takes back only Crank's change.`;
}

export async function answerSave(params: SaveDocumentParams, host: SaveHost): Promise<SaveDocumentResult> {
  const uri = params && typeof params.uri === "string" ? params.uri : undefined;
  if (!uri) return { saved: false, reason: "crank/saveDocument needs a uri" };
  const doc = host.find(uri);
  if (!doc) return { saved: false, reason: `${uri} is not open in the editor` };
  let saved: boolean;
  try {
    saved = await doc.save();
  } catch (err) {
    return { saved: false, reason: err instanceof Error ? err.message : String(err) };
  }
  if (!saved) return { saved: false, reason: `the editor did not save ${doc.name}` };
  if (params.unsavedChanges === true) host.inform(unsavedNotice(doc.name));
  return { saved: true };
}
