/**
 * What the user is told when a command the extension runs is refused by the server:
 * a Crank notice with the server's own words and, where one helps, the action that
 * fixes it. Pure, so the wording is unit-tested without VS Code.
 */

export interface Notice {
  text: string;
  /** The button that fixes it, when there is one. */
  action?: "Set API Key";
}

/** A refused model switch (crank/setModel): e.g. the picked provider has no key. */
export function modelSwitchFailure(err: unknown): Notice {
  const message = (err as { message?: unknown })?.message;
  const text = `Crank: ${typeof message === "string" && message ? message : String(err)}`;
  return /API key|_API_KEY|apiKey/.test(text) ? { text, action: "Set API Key" } : { text };
}
