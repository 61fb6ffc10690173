"""The editor's own diagnostics in the agent's loop, after each edit.

An agent that changed a file should see what the user's language servers now say
about it, without running a type checker itself. When the editor offers it (LSP: the
client declared ``experimental.crank.diagnostics: true`` and answers
``crank/diagnostics {uris}`` with ``{items: [{uri, diagnostics}]}``), every successful
``edit`` and ``write`` waits ``settleMs`` (the language servers catch up with the new
text), asks the editor once, and appends the errors and warnings it reports for that
file to the tool's result: the newest state only (one question, after the change),
at most ``MAX_SHOWN`` of them, each message cut at ``MAX_MESSAGE`` characters. An
editor that does not answer within ``answer_timeout`` seconds (the settle time, at
least one second) costs no more than that: the result goes on with a note saying so.
The setting ``diagnostics.enabled: false`` turns it off; an editor that never
declared the capability is never asked and never waited for.

What the editor reports is data for the model, like any tool output.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from crank.agent.model import AbortSignal
from crank.agent.tools import OnUpdate, Tool, ToolCall, ToolOutput
from crank.tools.context import absolute

from .errors import invalid_params

MAX_SHOWN = 20
MAX_MESSAGE = 300
CHECKED_TOOLS = ("edit", "write")
SEVERITY = {1: "error", 2: "warning"}
"""LSP's DiagnosticSeverity: only these are shown (information and hints are noise)."""

AskDiagnostics = Callable[[list[str]], Awaitable[Sequence[Mapping[str, Any]]]]
"""Asks the editor for the diagnostics of these URIs: ``[{uri, diagnostics}]``."""


@dataclass(frozen=True)
class DiagnosticsSettings:
    enabled: bool = True
    settle_ms: int = 1000
    """How long the language servers get to catch up with an edit before the editor is asked."""

    @property
    def answer_timeout(self) -> float:
        return max(self.settle_ms / 1000, 1.0)


def diagnostics_settings(value: Any, where: str) -> DiagnosticsSettings:
    if not isinstance(value, Mapping):
        raise invalid_params(where, "must be an object")
    for key in value:
        if key not in ("enabled", "settleMs"):
            raise invalid_params(f"{where}.{key}", "is not a setting; known: enabled, settleMs")
    enabled = value.get("enabled", True)
    if not isinstance(enabled, bool):
        raise invalid_params(f"{where}.enabled", "must be true or false")
    settle = value.get("settleMs", DiagnosticsSettings.settle_ms)
    if not isinstance(settle, int) or isinstance(settle, bool) or not 0 <= settle <= 30_000:
        raise invalid_params(f"{where}.settleMs", "must be a whole number of ms, 0 to 30000")
    return DiagnosticsSettings(enabled, settle)


def _same_file(uri: object, path: Path) -> bool:
    if not isinstance(uri, str):
        return False
    parsed = urlparse(uri)
    return parsed.scheme == "file" and Path(unquote(parsed.path)) == path


def _line(diagnostic: Mapping[str, Any]) -> tuple[int, int, str] | None:
    severity = diagnostic.get("severity", 1)
    kind = SEVERITY.get(severity) if isinstance(severity, int) else None
    message = diagnostic.get("message")
    if kind is None or not isinstance(message, str):
        return None
    try:
        start = diagnostic["range"]["start"]
        line, character = int(start["line"]) + 1, int(start["character"]) + 1
    except (KeyError, TypeError, ValueError):
        line, character = 0, 0
    text = " ".join(message.split())
    if len(text) > MAX_MESSAGE:
        text = text[: MAX_MESSAGE - 1] + "…"
    origin = " ".join(
        str(part)
        for part in (diagnostic.get("source"), diagnostic.get("code"))
        if isinstance(part, str | int) and not isinstance(part, bool)
    )
    suffix = f" [{origin}]" if origin else ""
    return severity, line, f"- {line}:{character} {kind}: {text}{suffix}"


def render(items: Sequence[Mapping[str, Any]], path: Path, display: str) -> str:
    """The note appended to the tool result for what the editor reported."""
    lines: list[tuple[int, int, str]] = []
    for item in items:
        if not isinstance(item, Mapping) or not _same_file(item.get("uri"), path):
            continue
        for diagnostic in item.get("diagnostics") or ():
            if isinstance(diagnostic, Mapping) and (shown := _line(diagnostic)) is not None:
                lines.append(shown)
    if not lines:
        return f"[The editor reports no errors or warnings in {display}.]"
    lines.sort(key=lambda entry: (entry[0], entry[1]))
    errors = sum(1 for severity, _, _ in lines if severity == 1)
    head = (
        f"[The editor now reports {errors} error(s) and {len(lines) - errors} warning(s) "
        f"in {display}:"
    )
    body = [text for _, _, text in lines[:MAX_SHOWN]]
    if len(lines) > MAX_SHOWN:
        body.append(f"- ... and {len(lines) - MAX_SHOWN} more not shown")
    return "\n".join([head, *body]) + "]"


class EditorDiagnostics:
    """The hook around ``edit`` and ``write``. ``ask`` is the editor's question, or None
    while the editor offers none; ``settings`` the current diagnostics settings."""

    def __init__(
        self,
        root: Path,
        ask: Callable[[], AskDiagnostics | None],
        settings: Callable[[], DiagnosticsSettings],
        display: Callable[[Path], str],
    ) -> None:
        self.root = root
        self._ask = ask
        self._settings = settings
        self._display = display

    def wrap(self, tools: Sequence[Tool]) -> list[Tool]:
        return [
            replace(tool, execute=self._checked(tool)) if tool.name in CHECKED_TOOLS else tool
            for tool in tools
        ]

    def _checked(self, tool: Tool) -> Any:
        inner = tool.execute

        async def execute(
            call: ToolCall, signal: AbortSignal, on_update: OnUpdate
        ) -> ToolOutput | str:
            output = await inner(call, signal, on_update)
            ask, settings = self._ask(), self._settings()
            raw = call.arguments.get("path")
            if ask is None or not settings.enabled or not isinstance(raw, str):
                return output
            result = output if isinstance(output, ToolOutput) else ToolOutput(output)
            if result.is_error:
                return output
            path = absolute(self.root, raw)
            note = await self.report(ask, settings, path)
            return replace(result, content=f"{result.content}\n\n{note}")

        return execute

    async def report(self, ask: AskDiagnostics, settings: DiagnosticsSettings, path: Path) -> str:
        display = self._display(path)
        await asyncio.sleep(settings.settle_ms / 1000)
        try:
            items = await asyncio.wait_for(ask([path.as_uri()]), settings.answer_timeout)
        except TimeoutError:
            return (
                f"[The editor did not report its diagnostics for {display} within "
                f"{settings.answer_timeout:g} s; going on without them.]"
            )
        except Exception as exc:  # the editor's failure is a note, never the edit's
            return f"[The editor's diagnostics for {display} could not be had: {exc}]"
        return render(items, path, display)
