/**
 * Completing `/` commands in the chat input: which part of the text is a command being
 * typed, which of the server's commands (crank/commands) match it, and the text once one
 * is accepted. Pure functions, shared by the page and its unit test; the list itself and
 * the expansion of the command belong to the server.
 *
 * Only the start of the message can be a command (the server expands `/name args` there
 * and nowhere else), and `//` is the escape for a message that starts with a slash, so
 * neither a slash later in the text nor `//` opens the list.
 */
import type { CommandInfo } from "../protocol/types";

/** The command name typed so far (without the slash) when the caret is in the message's leading `/name`; else undefined. */
export function commandQuery(text: string, caret: number): string | undefined {
  const before = text.slice(0, caret);
  const m = /^\/([^\s/][^\s]*)?$/.exec(before);
  return m ? (m[1] ?? "") : undefined;
}

/**
 * The commands whose name matches `query`, case-insensitively: names that start with it
 * first, then names that contain it (so `review` finds `skill:review`), each group in the
 * server's order (built-ins, skills, templates).
 */
export function matchCommands(commands: readonly CommandInfo[], query: string): CommandInfo[] {
  const q = query.toLowerCase();
  const starts = commands.filter((c) => c.name.toLowerCase().startsWith(q));
  const inside = q ? commands.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q)) : [];
  return [...starts, ...inside];
}

/**
 * The input once `name` is accepted: the leading `/word` (the whole word, also the part
 * after the caret) becomes `/name ` and the caret goes after the space, where the
 * arguments are typed; the rest of the text is kept as it was.
 */
export function acceptCommand(text: string, name: string): { text: string; caret: number } {
  const word = /^\/\S*/.exec(text)?.[0] ?? "";
  const rest = text.slice(word.length).replace(/^[ \t]/, "");
  const head = `/${name} `;
  return { text: head + rest, caret: head.length };
}
