"""Crank's events and messages as ACP ``session/update`` payloads.

Pure functions plus one small per-session state (``UpdateTranslator``) that remembers
what ACP needs and Crank's events do not repeat: a call's arguments when its result
arrives, the output a command has printed so far (ACP replaces a call's content on
each update; Crank sends only what is new), and how the newest reply ended.

Contract:
- Text and thinking deltas become ``agent_message_chunk`` / ``agent_thought_chunk``
  with exactly the delta's text, so the chunks of a message concatenate to its text.
- Each tool call is one ``tool_call`` and then ``tool_call_update``s; its status only
  moves forward: ``pending`` while an edit or a command may still wait for the user
  (``MAY_ASK``), ``in_progress`` once it is known to run (answered yes, printing, its
  terminal open), the last ``completed`` or ``failed``.
- An edit's or a write's change is a ``diff`` of the whole file (``diff_content``),
  from the tool itself: the approval preview while it waits and runs, the result's
  ``details`` at the end; bounded by ``DIFF_CHARS``.
- A command run in the client's terminal (``show_terminal``) has the terminal as its
  content from then on, the final update included (the client shows its output).
- ``usage_update`` follows Crank's ``usage_update`` (context used and size, cost).
- A ``notice`` is ACP's ``notice`` update when the client advertised
  ``session.notices``, else a message of its own (``notice_chunk``).
- ``replay`` turns a stored transcript into the updates that would have built it, so
  a session loaded in another editor shows the same conversation.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Literal

from crank.agent.tools import ToolKind
from crank.tools.info import tool_info

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
NoticeSeverity = Literal["info", "warning", "error"]

MAY_ASK: frozenset[ToolKind] = frozenset({"edit", "execute"})
"""Kinds whose calls may wait for the user's answer: they start ``pending`` and turn
``in_progress`` once known to run. The others start ``in_progress`` (they ask only
about a path outside the workspace; that question then carries no status, which
never goes backwards)."""
LIVE_OUTPUT_CHARS = 64 * 1024
"""How much of a running command's output a ``tool_call_update`` carries (its tail)."""

Update = dict[str, Any]


def tool_kind(name: str) -> ToolKind:
    return tool_info(name).acp_kind


def tool_title(name: str, arguments: dict[str, Any]) -> str:
    """What the call does, in a few words: ``bash: make test``, ``edit src/a.py``."""
    info = tool_info(name)
    shown = arguments.get(info.shows) if info.shows is not None else None
    if info.runs_commands and isinstance(shown, str):
        return f"{name}: {shown.splitlines()[0][:120]}"
    for key in ("path", "pattern"):
        if isinstance(arguments.get(key), str):
            return f"{name} {arguments[key]}"
    return name


def _absolute(root: Path, path: str) -> str:
    candidate = Path(path)
    return str(candidate if candidate.is_absolute() else root / candidate)


def locations(root: Path, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    path = arguments.get("path")
    if not isinstance(path, str):
        return []
    where: dict[str, Any] = {"path": _absolute(root, path)}
    offset = arguments.get("offset")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset > 0:
        where["line"] = offset
    return [where]


DIFF_CHARS = 2 * 1024 * 1024
"""At most this many characters of old plus new text go in one ``diff``; a larger
change is shown as a sentence naming the file and its sizes (the result's text still
carries the unified diff the model saw)."""


def diff_content(change: object) -> list[dict[str, Any]]:
    """The change a tool describes (an approval ``preview`` of kind ``diff``, or an
    edit's or a write's result ``details``: ``path``, ``oldText``, ``newText``, with
    ``created`` for a new file and ``oldTextOmitted`` for an old file that was not
    loaded) as ACP tool call content: one ``diff`` of the whole file, old and new, with
    ``oldText`` null only for a new file. The text comes from the tool, so it is
    exactly what was asked about and what was written. Nothing when there is no such
    change (a command, a declined edit's details)."""
    if not isinstance(change, dict):
        return []
    path, old, new = change.get("path"), change.get("oldText"), change.get("newText")
    if not isinstance(path, str) or not isinstance(new, str) or not isinstance(old, str):
        return []
    omitted = change.get("oldTextOmitted")
    if isinstance(omitted, int) and omitted:
        return [
            text_content(
                f"{path} was replaced; its old content ({omitted} bytes, not text or too "
                "large to load) is not shown, so there is no diff"
            )
        ]
    if len(old) + len(new) > DIFF_CHARS:
        return [
            text_content(
                f"The diff of {path} is not shown: {len(old)} characters before and "
                f"{len(new)} after, over the {DIFF_CHARS} ACP shows in one diff"
            )
        ]
    created = change.get("created") is True
    return [{"type": "diff", "path": path, "oldText": None if created else old, "newText": new}]


def text_content(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def image_content(image: dict[str, Any]) -> dict[str, Any] | None:
    """A tool result's image as tool call content; None for a stored image whose bytes
    were not loaded (``AcpSession.replay`` loads them)."""
    if not isinstance(image.get("data"), str):
        return None
    block = {"type": "image", "mimeType": image["mimeType"], "data": image["data"]}
    return {"type": "content", "content": block}


def terminal_content(terminal_id: str) -> dict[str, Any]:
    return {"type": "terminal", "terminalId": terminal_id}


def stop_reason(crank_stop: str | None, cancelled: bool) -> StopReason:
    """ACP's stop reason for a run that ended with Crank's ``crank_stop``; a turn the
    client cancelled is always ``cancelled``."""
    if cancelled or crank_stop == "aborted":
        return "cancelled"
    if crank_stop == "length":
        return "max_tokens"
    return "end_turn"


class UpdateTranslator:
    """Per session: Crank events in, ACP update payloads out (zero or more each)."""

    def __init__(self, root: Path, *, notices: bool = False) -> None:
        self.root = root
        self.notices = notices
        """The client advertised ``session.notices``: a notice is ACP's ``notice``
        update, not a message (ACP: agents send it only then)."""
        self._output: dict[str, str] = {}
        self._terminals: dict[str, str] = {}
        self._ended: dict[str, Update] = {}
        """The last update of each call until its result message comes (with images)."""
        self.status: dict[str, ToolStatus] = {}
        """Each running call's status as last sent (it never goes backwards)."""
        self._approved: dict[str, list[dict[str, Any]]] = {}
        """The diff a call's question showed, until the call ends."""
        self._message_id: str | None = None
        """The id of the message being streamed (minted at its ``message_start``)."""
        self.last_reply: dict[str, Any] | None = None
        """The newest assistant message that ended (its stopReason, errorMessage)."""
        self.last_stop: str | None = None

    def show_terminal(self, call_id: str, terminal_id: str) -> Update:
        """The update that embeds the client's terminal ``terminal_id`` in the call
        (the command runs from now on, so a pending call becomes ``in_progress``)."""
        self._terminals[call_id] = terminal_id
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "content": [terminal_content(terminal_id)],
        }
        if self.running(call_id):
            update["status"] = "in_progress"
        return update

    def event(self, event: dict[str, Any]) -> list[Update]:
        kind = event.get("type")
        if kind == "message_start":
            self._message_id = uuid.uuid4().hex  # each reply (and its thinking) is one message
            return []
        if kind == "message_update":
            delta = event.get("delta") or {}
            text = delta.get("text")
            if not isinstance(text, str) or not text:
                return []
            if delta.get("kind") == "text":
                return [text_chunk("agent_message_chunk", text, self._message_id)]
            if delta.get("kind") == "thinking":
                return [text_chunk("agent_thought_chunk", text, self._message_id)]
            return []
        if kind == "message_end":
            message = event.get("message") or {}
            if message.get("role") == "assistant":
                self.last_reply = message
            if message.get("role") == "toolResult":
                return self._result_images(message)
            return []
        if kind == "tool_execution_start":
            return [self._call_started(event)]
        if kind == "tool_execution_update":
            return self._call_output(event)
        if kind == "tool_execution_end":
            return [self._call_ended(event)]
        if kind == "usage_update":
            return [_usage(event)]
        if kind == "notice":
            message = str(event.get("message", ""))
            if self.notices:
                return [notice_update(str(event.get("kind", "")), message)]
            return [notice_chunk(message)]
        if kind == "agent_end":
            self.last_stop = event.get("stopReason")
        return []

    def _call_started(self, event: dict[str, Any]) -> Update:
        call_id = str(event.get("toolCallId"))
        name = str(event.get("toolName"))
        arguments = event.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        kind = tool_kind(name)
        status: ToolStatus = "pending" if kind in MAY_ASK else "in_progress"
        self.status[call_id] = status
        return {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": tool_title(name, arguments),
            "kind": kind,
            "status": status,
            "rawInput": arguments,
            "locations": locations(self.root, arguments),
        }

    def running(self, call_id: str, content: list[dict[str, Any]] | None = None) -> list[Update]:
        """The call is known to run (its question was answered yes, it printed, its
        terminal opened): one ``in_progress`` update the first time, with ``content``
        (the approved diff) when given; nothing for a call already running or ended."""
        if self.status.get(call_id) != "pending":
            return []
        self.status[call_id] = "in_progress"
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "in_progress",
        }
        if content:
            self._approved[call_id] = content
            update["content"] = content
        return [update]

    def _call_output(self, event: dict[str, Any]) -> list[Update]:
        call_id = str(event.get("toolCallId"))
        output = event.get("output")
        if not isinstance(output, str) or not output or call_id in self._terminals:
            return []
        so_far = (self._output.get(call_id, "") + output)[-LIVE_OUTPUT_CHARS:]
        self._output[call_id] = so_far
        return [
            *self.running(call_id),
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [text_content(so_far)],
            },
        ]

    def _call_ended(self, event: dict[str, Any]) -> Update:
        call_id = str(event.get("toolCallId"))
        result = event.get("result") or {}
        self._output.pop(call_id, None)
        self.status.pop(call_id, None)
        approved = self._approved.pop(call_id, [])
        update = result_update(call_id, result)
        changed = any(block.get("type") == "diff" for block in update["content"])
        if approved and not changed and not result.get("isError"):
            update["content"][:0] = approved  # no details: the approved change stands
        terminal_id = self._terminals.pop(call_id, None)
        if terminal_id is not None:
            update["content"].insert(0, terminal_content(terminal_id))
        self._ended[call_id] = update
        return update

    def _result_images(self, message: dict[str, Any]) -> list[Update]:
        """The images a tool returned travel on its result message, which follows the
        call's end: the call's content is sent again with them (an update's content
        replaces what the client shows)."""
        update = self._ended.pop(str(message.get("toolCallId")), None)
        images = with_images([], message)
        if update is None or not images:
            return []
        return [{**update, "content": [*update["content"], *images]}]


def with_images(content: list[dict[str, Any]], message: dict[str, Any]) -> list[dict[str, Any]]:
    """``content`` followed by the message's images (a stored one not loaded: by name)."""
    out = list(content)
    for image in message.get("images") or []:
        shown = image_content(image)
        out.append(shown or text_content(f"[image: {image.get('name', 'image')}]"))
    return out


def result_update(call_id: str, result: dict[str, Any]) -> Update:
    """A call's last update: ``completed`` or ``failed``, the change it made as a whole
    file diff (from the tool's ``details``, when it changed a file), then its text."""
    failed = bool(result.get("isError"))
    text = result.get("content")
    content: list[dict[str, Any]] = [] if failed else diff_content(result.get("details"))
    if isinstance(text, str) and text:
        content.append(text_content(text))
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if failed else "completed",
        "content": content,
        "rawOutput": {"content": text if isinstance(text, str) else "", "isError": failed},
    }


def text_chunk(kind: str, text: str, message_id: str | None = None) -> Update:
    """A message chunk; the chunks of one message share ``messageId`` (ACP: "a change
    in messageId indicates a new message has started")."""
    update: Update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return update


NOTICE_TITLES: dict[str, tuple[NoticeSeverity, str]] = {
    "tools_unsupported": ("warning", "This model server cannot call tools"),
    "window_learned": ("info", "The model's context window was learned"),
    "model_discovered": ("info", "The model server's model was chosen"),
    "settings_ignored": ("warning", "Folder settings were ignored"),
    "fix_not_applied": ("warning", "The file was not changed"),
}
"""ACP's severity and a title that stands alone, for each ``NoticeKind`` (a test
holds the keys to that Literal's values)."""


def offers_notices(capabilities: dict[str, Any]) -> bool:
    session = capabilities.get("session")
    return isinstance(session, dict) and isinstance(session.get("notices"), dict)


def notice_update(kind: str, message: str) -> Update:
    """A ``notice`` as ACP's ``notice`` update: a title that stands alone, by kind,
    and the whole sentence as the description."""
    severity, title = NOTICE_TITLES.get(kind, ("info", "Crank"))
    return {"sessionUpdate": "notice", "severity": severity, "title": title, "description": message}


def notice_chunk(message: str) -> Update:
    """A ``notice`` (the server cannot call tools, the window was learned, the served
    model chosen, folder settings ignored) as a message of its own: ACP has no notice
    update, and a user who is not told why the agent only talks is left guessing. Its
    own ``messageId`` keeps it apart from the reply; the blank line keeps it apart in a
    client that joins every chunk."""
    return text_chunk("agent_message_chunk", f"Crank: {message}\n\n", uuid.uuid4().hex)


def _image_chunks(message: dict[str, Any], message_id: str) -> list[Update]:
    """A stored user message's images as ACP image blocks (a stored one whose bytes
    could not be loaded: by name), in the message ``message_id``."""
    updates: list[Update] = []
    for image in message.get("images") or []:
        if isinstance(image.get("data"), str):
            content = {"type": "image", "mimeType": image["mimeType"], "data": image["data"]}
            updates.append(
                {"sessionUpdate": "user_message_chunk", "content": content, "messageId": message_id}
            )
        else:
            name = f"[image: {image.get('name', 'image')}]"
            updates.append(text_chunk("user_message_chunk", name, message_id))
    return updates


def _usage(event: dict[str, Any]) -> Update:
    update: Update = {
        "sessionUpdate": "usage_update",
        "used": max(0, int(event.get("contextTokens") or 0)),
        "size": max(0, int(event.get("contextWindow") or 0)),
    }
    cost = event.get("cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        update["cost"] = {"amount": float(cost), "currency": "USD"}
    return update


def replay(root: Path, messages: list[dict[str, Any]]) -> list[Update]:
    """The updates that rebuild a stored transcript in a client (``session/load``).

    Every stored message is one ACP message: its chunks carry a ``messageId`` of its
    own (``replay-<n>``, n its place in the transcript), so two user prompts in a row
    (the first one's turn failed) stay two messages in the client."""
    updates: list[Update] = []
    for number, message in enumerate(messages):
        role = message.get("role")
        message_id = f"replay-{number}"
        if role == "user":
            content = message.get("typed") or message.get("content")  # a /command as typed
            if isinstance(content, str) and content:
                updates.append(text_chunk("user_message_chunk", content, message_id))
            updates.extend(_image_chunks(message, message_id))
        elif role == "assistant":
            for block in message.get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    updates.append(text_chunk("agent_message_chunk", block["text"], message_id))
                elif block.get("type") == "thinking" and block.get("thinking"):
                    thought = block["thinking"]
                    updates.append(text_chunk("agent_thought_chunk", thought, message_id))
                elif block.get("type") == "toolCall":
                    call_id, name = str(block.get("id")), str(block.get("name"))
                    arguments = block.get("arguments")
                    arguments = arguments if isinstance(arguments, dict) else {}
                    updates.append(
                        {
                            "sessionUpdate": "tool_call",
                            "toolCallId": call_id,
                            "title": tool_title(name, arguments),
                            "kind": tool_kind(name),
                            "status": "pending",
                            "rawInput": arguments,
                            "locations": locations(root, arguments),
                        }
                    )
        elif role == "toolResult":
            call_id = str(message.get("toolCallId"))
            result = {"content": message.get("content"), "isError": message.get("isError")}
            update = result_update(call_id, result)  # no details are stored: no diff
            update["content"] = with_images(update["content"], message)
            updates.append(update)
    return updates
