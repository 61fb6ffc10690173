"""Compaction: one appended entry that changes how the earlier lines are read.

``compact_log`` reads the active branch of a live ``SessionLog`` as rows (what replay
would show, each with its entry id), finds the cut (``cut.py``), has the older rows
summarised by a separate call (``compaction_summary.py``), checks the summary for the identifiers
the agent relied on (``identifiers.py``) and appends one ``compaction`` entry. Nothing is
ever changed or removed; a cut that would summarise nothing or keep nothing, and a
summary that fails or comes back empty, append nothing and say why.

Whoever holds a transcript must then take what the log now replays (the Housekeeper
hands it to the Harness); this module never touches a Harness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import chain

from anyio import to_thread

from crank.agent.messages import Message
from crank.agent.model import AbortSignal, Model

from .compaction_summary import build_request, summarize
from .cut import Row, find_cut
from .errors import SummaryFailed
from .estimate import Calibration
from .identifiers import collect_from_text, found_in, with_identifiers
from .log import SessionLog
from .replay import replay_rows


@dataclass(frozen=True)
class Outcome:
    compacted: bool
    reason: str = ""
    """Why nothing was appended (empty when something was)."""
    entry_id: str | None = None
    first_kept_id: str | None = None
    summary: str = ""


def branch_rows(log: SessionLog) -> tuple[list[Row], str | None]:
    """The active branch as replay reads it, each row with its entry id (``None`` for
    the newest compaction's summary), and that summary's text if there is one."""
    branch = log.tree.path_to(log.tip) if log.tip is not None else []
    return replay_rows(log.path, branch)


async def compact_log(
    log: SessionLog,
    summarizer: Model,
    *,
    keep_tokens: int,
    size: Callable[[Message], int],
    tokens_before: int,
    instructions: str | None = None,
    calibration: Calibration | None = None,
    signal: AbortSignal | None = None,
) -> Outcome:
    """Compact the active branch of ``log`` if a cut exists; see the module docstring."""
    rows, previous = branch_rows(log)
    cut = find_cut(rows, keep_tokens, size)
    if cut is None:
        return Outcome(False, "nothing to compact: the cut would summarise nothing or keep nothing")
    older = [message for entry_id, message in rows[:cut] if entry_id is not None]
    first_kept = rows[cut][0]
    assert first_kept is not None
    # Quoting and searching the older rows are passes over what may be a whole session
    # never compacted: in a worker thread, so the editor is answered meanwhile.
    request = await to_thread.run_sync(
        partial(
            build_request,
            summarizer,
            older,
            previous=previous,
            instructions=instructions,
            calibration=calibration,
        )
    )
    try:
        summary = await summarize(summarizer, request, signal)
    except SummaryFailed as failure:  # its text already says that nothing was written
        return Outcome(False, str(failure))
    identifiers = chain(found_in(older), collect_from_text(previous) if previous else ())
    text = await to_thread.run_sync(with_identifiers, summary.text, identifiers)
    entry_id = await log.append_compaction(text, first_kept, tokens_before, usage=summary.usage)
    return Outcome(True, entry_id=entry_id, first_kept_id=first_kept, summary=text)
