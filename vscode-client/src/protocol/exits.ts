/**
 * vscode-languageclient logs every end of the server process as an error ("Server
 * process exited with code 0."), a deliberate restart or stop included. A clean exit
 * (code 0) is not an error: this wrapper around the output channel writes that line
 * as info; any other code or a signal stays an error.
 */

const CLEAN_EXIT = /^\[Error\s*-\s*[^\]]*\]\s*Server process exited with code 0\.$/;

export function calmCleanExits<T extends { appendLine(line: string): void; info(line: string): void }>(channel: T): T {
  return new Proxy(channel, {
    get(target, property, receiver) {
      if (property === "appendLine")
        return (line: string) => (CLEAN_EXIT.test(line) ? target.info("The server process exited (code 0).") : target.appendLine(line));
      const value: unknown = Reflect.get(target, property, receiver);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}
