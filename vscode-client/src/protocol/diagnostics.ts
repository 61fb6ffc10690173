/**
 * Answers crank/diagnostics: after the agent edits a file, the server asks what the
 * editor's own language servers report for it now, and shows the agent the errors and
 * warnings. Free of `vscode`: the extension passes `vscode.languages.getDiagnostics`
 * (through `read`), the tests a table. VS Code's severities count from 0 (Error) where
 * LSP's count from 1; a code given as `{value, target}` is sent as its value.
 */
import type { DiagnosticsParams, DiagnosticsResult, LspDiagnostic } from "./types";

/** The shape of a `vscode.Diagnostic` this needs. */
export interface EditorDiagnostic {
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
  severity: number;
  message: string;
  source?: string;
  code?: string | number | { value: string | number };
}

export function toLsp(d: EditorDiagnostic): LspDiagnostic {
  const out: LspDiagnostic = {
    range: {
      start: { line: d.range.start.line, character: d.range.start.character },
      end: { line: d.range.end.line, character: d.range.end.character },
    },
    severity: d.severity + 1,
    message: d.message,
  };
  if (d.source) out.source = d.source;
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  if (code !== undefined) out.code = code;
  return out;
}

export function answerDiagnostics(params: DiagnosticsParams, read: (uri: string) => readonly EditorDiagnostic[]): DiagnosticsResult {
  const uris = params && Array.isArray(params.uris) ? params.uris.filter((u) => typeof u === "string") : [];
  return { items: uris.map((uri) => ({ uri, diagnostics: read(uri).map(toLsp) })) };
}
