"""A realistic session file for the session benches (resume, JSON libraries, log).

The shape follows a coding run: a user prompt, then turns of an assistant reply (some
text, one or two tool calls, usage) and their tool results, whose outputs are source
code and command output with some non-ASCII text (which the writer escapes). Every
entry is spelled by ``crank.session.entries.encode``, the writer's own encoder, so the
file is byte for byte what the log would have written. ``messages`` and ``megabytes``
set the size: results are padded to reach about that many bytes.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from crank.session.entries import encode, make_header
from crank.session.usage_totals import UsageTotals

_CODE = (
    "def handle(request):\n"
    '    """Answer one request; the menu is read only."""\n'
    "    if not request.user:\n"
    "        raise PermissionError('no user')\n"
    "    return {'status': 200, 'items': [1, 2, 3]}\n"
)
_NON_ASCII = "# the café’s “menu” is naïve ✓\n"
"""One result in ten carries some non-ASCII text (which makes the whole string wider
in memory, as it would be for a real file read)."""
_SHELL = "$ pytest -q\n....F..\nFAILED tests/test_app.py::test_menu - AssertionError\n"


def _usage(n: int) -> dict[str, Any]:
    return {
        "input": 1000 + n,
        "output": 50 + n % 200,
        "cacheRead": 900 + n,
        "cacheWrite": 30,
        "cost": 0.0012,
    }


COMPACT_EVERY = 1_000
"""With ``compacted``: one compaction per this many messages, about a 200k-token window
of these messages, as a run that outgrew its window writes them."""
KEPT = 200
"""About how many of the newest messages each compaction keeps (from a turn's start, as
compaction cuts: every kept result has its call)."""


def session_lines(
    messages: int,
    megabytes: float,
    seed: int = 18,
    *,
    compacted: bool = False,
    recorded: bool = True,
    session_id: str | None = None,
) -> list[bytes]:
    """The encoded lines (header first) of a session of ``messages`` message entries;
    ``compacted``: with a compaction entry every ``COMPACT_EVERY`` messages, each with
    the ``usageBefore`` the log records unless not ``recorded`` (as a writer before it
    wrote them)."""
    rng = random.Random(seed)
    results = max(1, messages // 2)
    unit = _CODE + _SHELL
    escaped = len(json.dumps(unit)) / len(unit)  # newlines and non-ASCII grow when written
    output_chars = max(64, int(megabytes * 1e6 / results / escaped) - 400)
    body = unit * (output_chars // len(unit) + 2)
    header = make_header(session_id or f"bench-{messages}", "/bench/ws", "2026-01-01T00:00:00.000Z")
    lines = [encode(header)]
    parent: str | None = None
    used = UsageTotals()
    pending: list[dict[str, Any]] = []
    turns: list[int] = []  # the messages that begin a turn (no call before them unanswered)
    for n in range(messages):
        if not pending:
            turns.append(n)
        if n == 0 or (not pending and n % 40 == 0):
            message: dict[str, Any] = {
                "role": "user",
                "content": f"Please fix the failing test number {n} in shop/app.py",
                "timestamp": 1_700_000_000_000 + n,
            }
        elif not pending:
            calls = [
                {
                    "type": "toolCall",
                    "id": f"call_{n}_{k}",
                    "name": rng.choice(("read", "grep", "bash")),
                    "arguments": {"path": f"shop/module_{n % 97}.py", "offset": n % 300},
                }
                for k in range(1 + (n % 5 == 0))
            ]
            pending = list(calls)
            message = {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Looking at step {n} of the fix."}, *calls],
                "stopReason": "toolUse",
                "usage": _usage(n),
                "model": "qwen2.5-coder",
                "timestamp": 1_700_000_000_000 + n,
            }
        else:
            call = pending.pop(0)
            start = rng.randrange(0, 200)
            message = {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": (_NON_ASCII if n % 10 == 5 else "") + body[start : start + output_chars],
                "isError": False,
                "timestamp": 1_700_000_000_000 + n,
            }
        entry_id = f"{n:08x}"
        entry = {"type": "message", "id": entry_id, "parentId": parent, "timestamp": n}
        lines.append(encode(entry | {"message": message}))
        used.add_entries([entry | {"message": message}])
        parent = entry_id
        if compacted and n % COMPACT_EVERY == COMPACT_EVERY - 1 and not pending:
            compaction_id = f"c{n:07x}"
            compaction = {
                "type": "compaction",
                "id": compaction_id,
                "parentId": parent,
                "timestamp": n,
                "summary": f"The fix so far, up to step {n}: " + "the menu handler. " * 40,
                "firstKeptId": f"{max(t for t in turns if t <= n - KEPT):08x}",
                "tokensBefore": 190_000,
                "usage": _usage(n),
                # what every line before it used, as ``SessionLog.append_compaction``
                # records it (summed by the reader's own ``UsageTotals``)
                "usageBefore": used.as_usage(),
                "forkedBefore": False,  # one line of entries, never branched
            }
            if not recorded:
                del compaction["usageBefore"], compaction["forkedBefore"]
            used.add_entries([compaction])
            lines.append(encode(compaction))
            parent = compaction_id
    return lines


def sized_lines(messages: int, megabytes: float, **shape: Any) -> list[bytes]:
    """``session_lines`` with the outputs scaled so the file is about ``megabytes``."""
    first = session_lines(messages, megabytes, **shape)
    fixed = sum(map(len, session_lines(messages, 0.0, **shape)))  # what is not scaled
    grown = sum(map(len, first)) - fixed
    scale = (megabytes * 1e6 - fixed) / grown if grown > 0 else 1.0
    return session_lines(messages, megabytes * scale, **shape) if scale > 0 else first


def write_session(
    path: Path, messages: int, megabytes: float, *, compacted: bool = False, recorded: bool = True
) -> int:
    """Write the session to ``path`` (its name the session's id); its size in bytes."""
    shape = {"compacted": compacted, "recorded": recorded, "session_id": path.stem}
    data = b"".join(sized_lines(messages, megabytes, **shape))
    path.write_bytes(data)
    return len(data)
