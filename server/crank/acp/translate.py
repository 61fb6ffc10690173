"""Crank's events and messages as ACP ``session/update`` payloads.

Pure functions plus one small per-session state (``UpdateTranslator``) that remembers
what ACP needs and Crank's events do not repeat: a call's arguments when its result
arrives, the output a command has printed so far (ACP replaces a call's content on
each update; Crank sends only what is new), and how the newest reply ended.

Contract:
- Text and thinking deltas become ``agent_message_chunk`` / ``agent_thought_chunk``
  with exactly the delta's text, so the chunks of a message concatenate to its text.
- Each tool call is one ``tool_call`` (``in_progress``) and then ``tool_call_update``s,
  the last with ``completed`` or ``failed``; an edit or a write carries a ``diff``.
- A command run in the client's terminal (``show_terminal``) has the terminal as its
  content from then on, the final update included (the client shows its output).
- ``usage_update`` follows Crank's ``usage_update`` (context used and size, cost).
- ``replay`` turns a stored transcript into the updates that would have built it, so
  a session loaded in another editor shows the same conversation.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from crank.agent.tools import ToolKind
from crank.tools.info import tool_info

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

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


def diff_of(root: Path, name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """The change an edit or write asks for, as ACP's ``diff`` content (for ``write``
    the old text is not known here, so it is given as null: a new file's diff)."""
    path = arguments.get("path")
    if not isinstance(path, str):
        return None
    if name == "edit" and isinstance(arguments.get("newText"), str):
        old = arguments.get("oldText")
        return {
            "type": "diff",
            "path": _absolute(root, path),
            "oldText": old if isinstance(old, str) else None,
            "newText": arguments["newText"],
        }
    if name == "write" and isinstance(arguments.get("content"), str):
        return {
            "type": "diff",
            "path": _absolute(root, path),
            "oldText": None,
            "newText": arguments["content"],
        }
    return None


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

    def __init__(self, root: Path) -> None:
        self.root = root
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._output: dict[str, str] = {}
        self._terminals: dict[str, str] = {}
        self._ended: dict[str, Update] = {}
        """The last update of each call until its result message comes (with images)."""
        self.last_reply: dict[str, Any] | None = None
        """The newest assistant message that ended (its stopReason, errorMessage)."""
        self.last_stop: str | None = None

    def show_terminal(self, call_id: str, terminal_id: str) -> Update:
        """The update that embeds the client's terminal ``terminal_id`` in the call."""
        self._terminals[call_id] = terminal_id
        return {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "content": [terminal_content(terminal_id)],
        }

    def event(self, event: dict[str, Any]) -> list[Update]:
        kind = event.get("type")
        if kind == "message_update":
            delta = event.get("delta") or {}
            text = delta.get("text")
            if not isinstance(text, str) or not text:
                return []
            if delta.get("kind") == "text":
                return [text_chunk("agent_message_chunk", text)]
            if delta.get("kind") == "thinking":
                return [text_chunk("agent_thought_chunk", text)]
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
        if kind == "agent_end":
            self.last_stop = event.get("stopReason")
        return []

    def _call_started(self, event: dict[str, Any]) -> Update:
        call_id = str(event.get("toolCallId"))
        name = str(event.get("toolName"))
        arguments = event.get("arguments")
        arguments = arguments if isinstance(arguments, dict) else {}
        self._calls[call_id] = (name, arguments)
        update: Update = {
            "sessionUpdate": "tool_call",
            "toolCallId": call_id,
            "title": tool_title(name, arguments),
            "kind": tool_kind(name),
            "status": "in_progress",
            "rawInput": arguments,
            "locations": locations(self.root, arguments),
        }
        diff = diff_of(self.root, name, arguments)
        if diff is not None:
            update["content"] = [diff]
        return update

    def _call_output(self, event: dict[str, Any]) -> list[Update]:
        call_id = str(event.get("toolCallId"))
        output = event.get("output")
        if not isinstance(output, str) or not output or call_id in self._terminals:
            return []
        so_far = (self._output.get(call_id, "") + output)[-LIVE_OUTPUT_CHARS:]
        self._output[call_id] = so_far
        return [
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "content": [text_content(so_far)],
            }
        ]

    def _call_ended(self, event: dict[str, Any]) -> Update:
        call_id = str(event.get("toolCallId"))
        result = event.get("result") or {}
        name, arguments = self._calls.pop(call_id, ("", {}))
        self._output.pop(call_id, None)
        update = result_update(self.root, call_id, name, arguments, result)
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


def result_update(
    root: Path, call_id: str, name: str, arguments: dict[str, Any], result: dict[str, Any]
) -> Update:
    failed = bool(result.get("isError"))
    text = result.get("content")
    content: list[dict[str, Any]] = []
    diff = diff_of(root, name, arguments)
    if diff is not None and not failed:
        content.append(diff)
    if isinstance(text, str) and text:
        content.append(text_content(text))
    return {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if failed else "completed",
        "content": content,
        "rawOutput": {"content": text if isinstance(text, str) else "", "isError": failed},
    }


def text_chunk(kind: str, text: str) -> Update:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _image_chunks(message: dict[str, Any]) -> list[Update]:
    """A stored user message's images as ACP image blocks (a stored one whose bytes
    could not be loaded: by name)."""
    updates: list[Update] = []
    for image in message.get("images") or []:
        if isinstance(image.get("data"), str):
            content = {"type": "image", "mimeType": image["mimeType"], "data": image["data"]}
            updates.append({"sessionUpdate": "user_message_chunk", "content": content})
        else:
            updates.append(
                text_chunk("user_message_chunk", f"[image: {image.get('name', 'image')}]")
            )
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
    """The updates that rebuild a stored transcript in a client (``session/load``)."""
    updates: list[Update] = []
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    for message in messages:
        role = message.get("role")
        if role == "user":
            content = message.get("typed") or message.get("content")  # a /command as typed
            if isinstance(content, str) and content:
                updates.append(text_chunk("user_message_chunk", content))
            updates.extend(_image_chunks(message))
        elif role == "assistant":
            for block in message.get("content") or []:
                if block.get("type") == "text" and block.get("text"):
                    updates.append(text_chunk("agent_message_chunk", block["text"]))
                elif block.get("type") == "thinking" and block.get("thinking"):
                    updates.append(text_chunk("agent_thought_chunk", block["thinking"]))
                elif block.get("type") == "toolCall":
                    call_id, name = str(block.get("id")), str(block.get("name"))
                    arguments = block.get("arguments")
                    arguments = arguments if isinstance(arguments, dict) else {}
                    calls[call_id] = (name, arguments)
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
            name, arguments = calls.pop(call_id, (str(message.get("toolName")), {}))
            result = {"content": message.get("content"), "isError": message.get("isError")}
            update = result_update(root, call_id, name, arguments, result)
            update["content"] = with_images(update["content"], message)
            updates.append(update)
    return updates
