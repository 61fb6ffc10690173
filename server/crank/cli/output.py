"""What ``crank run`` prints while a run goes on, from the workspace's event stream.

Both modes read the same envelopes (``crank.workspace.stream``) that ``crank serve``
sends as ``crank/event``:

- ``JsonLines``: every envelope of the run as one line of JSON on stdout, as it comes.
- ``PlainText``: the reply's text on stdout as it streams (each assistant message's
  text ends with a newline), and on stderr one line per tool call, begun when the
  call starts (``▸ bash npm test``) and ended when it returns (`` → ✓ 3 passed``),
  plus a line for a retry or a compaction. So ``crank run "..." > answer.txt`` keeps
  only what the agent said while the terminal shows what it did.

Each remembers the run's last assistant message (``reply``), for the exit status.
"""

from __future__ import annotations

from typing import Any, Protocol, TextIO, cast

from crank.agent import wiretext
from crank.agent.messages import AssistantMessage, text_of
from crank.tools.info import tool_info
from crank.workspace.stream import EventParams

from .render import summarize

ARGUMENT_CHARS = 80
"""How much of a tool's main argument its line shows."""


def _clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


class RunOutput(Protocol):
    reply: AssistantMessage | None

    def show(self, envelope: EventParams) -> None: ...


class JsonLines:
    """``--json``: one envelope per line, flushed at once."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.reply: AssistantMessage | None = None

    def show(self, envelope: EventParams) -> None:
        event = envelope["event"]
        if event["type"] == "message_end" and event["message"]["role"] == "assistant":
            self.reply = event["message"]
        print(wiretext.dumps_text(envelope), file=self._out, flush=True)


class PlainText:
    """The reply streamed to ``out``, the tool calls and notices to ``err``."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self._out = out
        self._err = err
        self.reply: AssistantMessage | None = None
        self._printed = ""
        """The text of the assistant message under way printed so far."""
        self._tools: dict[str, str] = {}
        self._open_line = False
        """A tool's line is begun on stderr and not yet ended."""

    def _write(self, stream: TextIO, text: str) -> None:
        stream.write(wiretext.shown(text))
        stream.flush()

    def _notice(self, text: str) -> None:
        self._end_tool_line()
        self._write(self._err, f"crank: {text}\n")

    def _end_tool_line(self) -> None:
        if self._open_line:
            self._write(self._err, "\n")
            self._open_line = False

    def show(self, envelope: EventParams) -> None:
        event: dict[str, Any] = cast(dict[str, Any], envelope["event"])
        kind = event["type"]
        if kind == "message_update" and event["delta"]["kind"] == "text":
            self._printed += event["delta"]["text"]
            self._write(self._out, event["delta"]["text"])
        elif kind == "message_end" and event["message"]["role"] == "assistant":
            self._end_message(cast(AssistantMessage, event["message"]))
        elif kind == "tool_execution_start":
            self._end_tool_line()
            name = event["toolName"]
            self._tools[event["toolCallId"]] = name
            argument = event["arguments"].get(tool_info(name).shows or "", "")
            shown = f" {_clip(str(argument), ARGUMENT_CHARS)}" if argument else ""
            self._write(self._err, f"▸ {name}{shown}")
            self._open_line = True
        elif kind == "tool_execution_end":
            result = event["result"]
            name = self._tools.pop(event["toolCallId"], "")
            mark = "✗" if result["isError"] else "✓"
            outcome = "; ".join(summarize(name, result["content"]))
            if not self._open_line:  # something else was said since the call began
                self._write(self._err, f"▸ {name}")
            self._write(self._err, f" → {mark} {_clip(outcome, 120)}\n")
            self._open_line = False
        elif kind == "retry_start":
            self._notice(f"retrying: {event.get('error', '')}")
        elif kind == "compaction_start":
            self._notice(f"compacting the conversation ({event.get('reason', '')})")

    def _end_message(self, message: AssistantMessage) -> None:
        """The message's text is all out (what no delta carried is printed now) and
        ends with a newline."""
        self.reply = message
        text = text_of(message)
        if text.startswith(self._printed):
            self._write(self._out, text[len(self._printed) :])
            self._printed = text
        if self._printed and not self._printed.endswith("\n"):
            self._write(self._out, "\n")
        self._printed = ""
