"""Events, as a person wants to watch them in a terminal.

A fold over protocol events (the same dicts whether they come from an in-process
Harness or from ``crank/event`` notifications): streamed text as it arrives, one line
per tool call with a short result, errors in red, and every edit's diff kept for the end.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text

from crank.tools.info import tool_info


def _clip(line: str, width: int = 100) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


def summarize(tool: str, content: str) -> list[str]:
    """A line or two that says what a tool result was, not the whole of it."""
    lines = [line for line in content.splitlines() if line.strip()]
    if not lines:
        return ["(no output)"]
    shown = tool_info(tool).result
    if shown == "last_lines":
        return [_clip(line) for line in lines[-2:]]
    if shown == "line_count":
        return [f"{len(content.splitlines())} lines"]
    if shown == "joined" and len(lines) > 1:
        return [_clip(", ".join(lines))]
    return [_clip(lines[0])]


class EventPrinter:
    """Feed it events with ``show``; ``diffs`` collects every edit's unified diff."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.diffs: list[str] = []
        self._streaming = False
        self._tool_names: dict[str, str] = {}

    def _end_stream(self) -> None:
        if self._streaming:
            self.console.print()
            self._streaming = False

    def show(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "turn_start":
            self._end_stream()
            self.console.print(Text(f"── turn {event['turn']} ", style="dim"))
        elif kind == "message_update":
            delta = event["delta"]
            if delta["kind"] == "text":
                self.console.print(delta["text"], end="", markup=False, highlight=False)
                self._streaming = True
        elif kind == "message_end":
            self._end_stream()
            message = event["message"]
            if message["role"] == "assistant" and message.get("errorMessage"):
                style = "yellow" if message["stopReason"] == "aborted" else "bold red"
                self.console.print(Text(f"✗ {message['errorMessage']}", style=style))
            elif message["role"] == "assistant" and message["stopReason"] == "length":
                self.console.print(Text("… cut short by the model's length limit", style="yellow"))
        elif kind == "tool_execution_start":
            self._end_stream()
            name = event["toolName"]
            self._tool_names[event["toolCallId"]] = name
            argument = event["arguments"].get(tool_info(name).shows or "", "")
            self.console.print(Text.assemble(("▶ ", "cyan"), (name, "bold cyan"), f" {argument}"))
        elif kind == "tool_execution_end":
            result = event["result"]
            name = self._tool_names.pop(event["toolCallId"], "")
            style = "red" if result["isError"] else "green"
            mark = "✗" if result["isError"] else "✓"
            for line in summarize(name, result["content"]):
                self.console.print(Text(f"  {mark} {line}", style=style))
                mark = " "
            details = result.get("details") or {}
            if details.get("diff"):
                self.diffs.append(details["diff"])
        elif kind in ("retry_start", "compaction_start"):
            self.console.print(
                Text(
                    f"… {kind.replace('_', ' ')}: {event.get('error') or event.get('reason', '')}",
                    style="yellow",
                )
            )
        elif kind == "notice":
            self.console.print(Text(f"… {event['message']}", style="yellow"))
        elif kind == "agent_end":
            self._end_stream()

    def show_diffs(self) -> None:
        if not self.diffs:
            return
        self.console.rule("changes")
        for diff in self.diffs:
            self.console.print(Syntax(diff, "diff", theme="ansi_dark", background_color="default"))
