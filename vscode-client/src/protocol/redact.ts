/**
 * Keeping keys out of what the extension logs. `crank.trace.server: verbose` makes
 * vscode-languageclient print every message whole, `initialize` with its
 * `initializationOptions.crank.provider.apiKey` included; the channel every log line
 * goes through therefore takes keys out itself. Plain functions (no `vscode`), unit-tested.
 */

const KEY_FIELD = /(["']?(?:api[-_]?key|x-api-key|authorization|password|secret|access[-_]?token)["']?\s*[:=]\s*)(["'])(?:\\.|(?!\2).)*\2/gi;
const BEARER = /\b(bearer\s+)[\w.~+/=-]+/gi;
const KEY_LIKE = /\bsk-[\w-]{12,}/g;

/** `text` with each known secret, and anything shaped like a key, replaced by `<redacted>`. */
export function redactSecrets(text: string, secrets: Iterable<string | undefined> = []): string {
  for (const secret of secrets) {
    if (secret && secret.length >= 4) text = text.split(secret).join("<redacted>");
  }
  return text
    .replace(KEY_FIELD, (_m, field: string, quote: string) => `${field}${quote}<redacted>${quote}`)
    .replace(BEARER, "$1<redacted>")
    .replace(KEY_LIKE, "sk-<redacted>");
}

/**
 * The same channel, with every string argument of every method call redacted first
 * (append, appendLine, replace, and a LogOutputChannel's info/warn/error/debug/trace).
 */
export function redactingChannel<T extends object>(channel: T, secrets: () => Iterable<string | undefined>): T {
  return new Proxy(channel, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) =>
        (value as (...a: unknown[]) => unknown).apply(
          target,
          args.map((arg) => (typeof arg === "string" ? redactSecrets(arg, secrets()) : arg)),
        );
    },
  });
}
