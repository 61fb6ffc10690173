"""The two engines behind grep: ripgrep when it is installed, pure Python otherwise.

Both produce the same ``Hit`` records (path, line number, text, match or context) in
path order, honour the same filters (.gitignore roughly, .git and node_modules
skipped, an optional file glob) and stop at a match limit. Open editor documents are
always searched from their buffers by the Python engine, because ripgrep only sees
the disk; their regex dialect is therefore Python's (nearly always the same).

Both work in bounded memory whatever the files: the Python engine streams a file a
block at a time and stops a file at its first NUL byte (binary from there on, as
ripgrep does); ripgrep's output lines are cut with ``--max-columns``; a kept line is
at most ``LINE_CHARS`` + 1 characters; and both stop once more hits were found than
the output budget could show.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import io
import os
import re
import shutil
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from crank.agent.tools import MAX_LINES, NOTE_ROOM_LINES, ToolError

from .context import Documents
from .globs import matches_path
from .lines import LineReader
from .textfile import open_regular
from .walk import ALWAYS_SKIPPED, walk_files

LINE_CHARS = 500
"""A reported line is shown up to this many characters (then "…")."""
BLOCK_BYTES = 1 << 20
"""The Python engine searches a file this many bytes of whole lines at a time; a line
longer than this is searched in its first BLOCK_BYTES only."""
MOST_HITS = MAX_LINES - NOTE_ROOM_LINES
"""Hits (matches and context) collected before a search stops: no more could be shown
within the output budget anyway."""
RG_COLUMNS = 4 * LINE_CHARS
"""ripgrep prints at most this many bytes of a line, so its output is bounded too."""
RG_LINE_LIMIT = 1 << 20
RG_MEMORY = 512 << 20
"""Address space ripgrep may use. It holds a whole line in memory to search it, so a
file with a giant line would take as much memory as the line is long; past this limit
it fails, and grep searches again with the Python engine, which is bounded."""

RG_STALL_SECONDS = 5
"""ripgrep that does no I/O at all for this long is stuck: opening a FIFO that a
hostile tree put where a .gitignore goes blocks it for ever. It is then killed and the
Python engine (which opens only regular files) searches instead."""


@dataclass
class Report:
    """What a search could not do in full, for grep's closing note."""

    crowded: list[Path] = field(default_factory=list)
    """Directories with more than DIR_ENTRIES entries, walked in part."""
    long_lines: list[Path] = field(default_factory=list)
    """Files with a line longer than BLOCK_BYTES, searched in its first BLOCK_BYTES."""
    fallback: str | None = None
    """Why ripgrep's answer was replaced by the Python engine's."""


class RipgrepFailed(Exception):
    """ripgrep died (out of its memory allowance) or was stuck: search again without it."""


def _io_counters(pid: int) -> str | None:
    """The process's I/O counters as text (Linux), None where they cannot be read."""
    try:
        with open(f"/proc/{pid}/io") as handle:
            return handle.read()
    except OSError:
        return None


async def _watch(process: asyncio.subprocess.Process, stuck: list[bool]) -> None:
    """Kill ``process`` once its I/O counters stay still for RG_STALL_SECONDS."""
    last = _io_counters(process.pid)
    still = 0
    while last is not None and process.returncode is None:
        await asyncio.sleep(1)
        now = _io_counters(process.pid)
        still = still + 1 if now == last else 0
        last = now
        if still >= RG_STALL_SECONDS:
            stuck.append(True)
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            return


@dataclass(frozen=True, order=True)
class Hit:
    path: Path
    line: int
    text: str
    match: bool


@dataclass(frozen=True)
class Query:
    pattern: str
    ignore_case: bool
    literal: bool
    context: int
    glob: str | None
    limit: int

    def regex(self) -> re.Pattern[str]:
        source = re.escape(self.pattern) if self.literal else self.pattern
        flags = re.MULTILINE | (re.IGNORECASE if self.ignore_case else 0)
        try:
            return re.compile(source, flags)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {self.pattern!r}: {exc}") from None


def wanted(query: Query, base: Path, path: Path) -> bool:
    """Does the file glob admit ``path`` (relative to the search base)?"""
    if query.glob is None:
        return True
    relative = path.relative_to(base).as_posix() if path != base else path.name
    return matches_path(query.glob, relative)


def _short(line: str) -> str:
    """A line as kept in a Hit: enough to render it, never the whole of a giant line."""
    return line[: LINE_CHARS + 1]


def scan(
    path: Path,
    source: BinaryIO,
    regex: re.Pattern[str],
    context: int,
    *,
    room: int = MOST_HITS,
    stop_at_nul: bool = True,
    stop: Callable[[], bool] = lambda: False,
    report: Report | None = None,
) -> list[Hit]:
    """The hits in one file, streamed a block at a time: a block with no match (and no
    context owed) is passed over after one regex search of it. Stops at a NUL byte when
    ``stop_at_nul``, and once more than ``room`` hits were found."""
    reader = LineReader(source, stop=stop)
    hits: list[Hit] = []
    number = 0
    before: deque[tuple[int, str]] = deque(maxlen=context)
    after = 0
    while (block := reader.read_block(BLOCK_BYTES)) is not None:
        if stop_at_nul and b"\0" in block.data:
            break
        text = block.data.decode("utf-8", "replace")
        if block.cut and report is not None and path not in report.long_lines:
            report.long_lines.append(path)
        if not block.cut and not after and regex.search(text) is None:
            count = block.line_count()
            if context:
                pieces = text.removesuffix("\n").rsplit("\n", context)[-context:]
                first = number + count - len(pieces) + 1
                before.extend((first + i, _short(p.rstrip("\r"))) for i, p in enumerate(pieces))
            number += count
            continue
        lines = [text] if block.cut else text.removesuffix("\n").split("\n")
        for line in lines:
            number += 1
            if regex.search(line):
                hits.extend(Hit(path, n, t, False) for n, t in before)
                before.clear()
                hits.append(Hit(path, number, _short(line.rstrip("\r")), True))
                after = context
            elif after:
                hits.append(Hit(path, number, _short(line.rstrip("\r")), False))
                after -= 1
            elif context:
                before.append((number, _short(line.rstrip("\r"))))
            if len(hits) > room:
                return hits
    return hits


def search_text(
    path: Path, text: str, regex: re.Pattern[str], context: int, room: int = MOST_HITS
) -> list[Hit]:
    """The hits in an open buffer (already in memory), searched the same way."""
    source = io.BytesIO(text.encode("utf-8", "surrogatepass"))
    return scan(path, source, regex, context, room=room, stop_at_nul=False)


def search_file(
    path: Path,
    regex: re.Pattern[str],
    context: int,
    room: int,
    stop: Callable[[], bool],
    report: Report | None = None,
) -> list[Hit]:
    """The hits in a file on disk; none for what is not a readable regular file."""
    try:
        with open_regular(path, str(path)) as (handle, _):
            return scan(path, handle, regex, context, room=room, stop=stop, report=report)
    except (ToolError, OSError):
        return []


def open_documents_under(documents: Documents, base: Path, query: Query) -> list[Path]:
    found = []
    for path in documents.paths():
        inside = path == base or path.is_relative_to(base)
        skipped = any(part in ALWAYS_SKIPPED for part in path.parts)
        if inside and not skipped and wanted(query, base, path):
            found.append(path)
    return sorted(found)


def _count(hits: Iterable[Hit]) -> int:
    return sum(1 for hit in hits if hit.match)


def python_search(
    query: Query,
    base: Path,
    top: Path,
    documents: Documents,
    stop: Callable[[], bool] = lambda: False,
    report: Report | None = None,
) -> list[Hit]:
    """Walk and search in this thread; stops early once past the limit (or past the
    hits that could be shown) or asked to. What was searched only in part goes in
    ``report``."""
    regex = query.regex()
    hits: list[Hit] = []
    matches = 0

    def enough() -> bool:
        return stop() or matches > query.limit or len(hits) > MOST_HITS

    opened = open_documents_under(documents, base, query)
    open_set = set(opened)
    crowded = report.crowded if report is not None else None
    files = walk_files(base, top, stop=enough, crowded=crowded)
    previous: Path | None = None
    for path in heapq.merge(files, opened):  # the walk is in path order too: streamed
        if enough():
            break
        if path == previous:
            continue
        previous = path
        if not wanted(query, base, path):
            continue
        buffer = documents.text_of(path) if path in open_set else None
        room = MOST_HITS - len(hits)
        if buffer is not None:
            found = search_text(path, buffer, regex, query.context, room)
        else:
            found = search_file(path, regex, query.context, room, stop, report)
        hits.extend(found)
        matches += _count(found)
    return hits


def ripgrep() -> str | None:
    return shutil.which("rg")


def _rg_args(rg: str, query: Query, base: Path) -> list[str]:
    args = [rg, "--null", "--with-filename", "--line-number", "--no-heading"]
    args += ["--color", "never", "--no-require-git", "--hidden", "--sort", "path", "--no-mmap"]
    args += ["--max-columns", str(RG_COLUMNS), "--max-columns-preview"]
    args += [arg for name in sorted(ALWAYS_SKIPPED) for arg in ("--glob", f"!{name}")]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.literal:
        args.append("--fixed-strings")
    if query.context:
        args += ["--context", str(query.context)]
    return [*args, "--regexp", query.pattern, "--", str(base)]


_RG_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)


def _hit_of(line: bytes) -> Hit | None:
    """One line of ripgrep's output (``path NUL number : text`` for a match, ``-`` for
    context); None for group separators and notices."""
    path, nul, rest = line.partition(b"\0")
    parsed = _RG_LINE.fullmatch(rest.rstrip(b"\n").removesuffix(b"\r")) if nul else None
    if parsed is None:
        return None
    number, mark, text = parsed.groups()
    return Hit(
        Path(os.fsdecode(path)),
        int(number),
        _short(text.decode("utf-8", "replace")),
        mark == b":",
    )


async def rg_search(rg: str, query: Query, base: Path, skip: set[Path]) -> list[Hit]:
    """Run ripgrep over the disk, leaving out ``skip`` (files searched elsewhere).

    The file glob is applied here rather than with ``--glob``, because ripgrep lets a
    ``--glob`` override .gitignore and the two engines must agree. ``base`` must not be
    a FIFO or device (ripgrep would wait on it): grep checks a file base first. Raises
    RipgrepFailed when ripgrep died, typically of RG_MEMORY on a giant line.
    """
    command = _rg_args(rg, query, base)
    if (
        os.name == "posix"
    ):  # the limit is set before ripgrep starts, so it holds from the first byte
        limit = f'ulimit -v {RG_MEMORY // 1024} 2>/dev/null; exec "$@"'
        command = ["/bin/sh", "-c", limit, "rg", *command]
    process = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=RG_LINE_LIMIT,
    )
    assert process.stdout is not None and process.stderr is not None
    hits: list[Hit] = []
    matches = 0
    stuck: list[bool] = []
    watchdog = asyncio.ensure_future(_watch(process, stuck))
    ended = False
    try:
        while True:
            try:
                line = await process.stdout.readline()
            except ValueError:  # a line over the limit: dropped, the rest goes on
                continue
            if not line:
                break
            hit = _hit_of(line)
            if hit is None or hit.path in skip or not wanted(query, base, hit.path):
                continue
            hits.append(hit)
            matches += hit.match
            if matches > query.limit or len(hits) > MOST_HITS:
                break
        complete = matches <= query.limit and len(hits) <= MOST_HITS
        errors = ""
        if complete:  # stdout ended, so ripgrep is done writing; else it may never be
            errors = (await process.stderr.read(RG_LINE_LIMIT)).decode(errors="replace")
            ended = True
    finally:
        watchdog.cancel()
        # Only a ripgrep still searching is killed. One that closed its output is exiting:
        # killing it then would make the subprocess module reap it (kill() polls first)
        # behind asyncio's back, and asyncio would report the status as 255.
        if process.returncode is None and not ended:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await process.wait()
    if stuck:
        raise RipgrepFailed(f"it did no I/O for {RG_STALL_SECONDS} s, as when opening a FIFO")
    code = process.returncode
    if complete and code not in (0, 1, 2):  # killed, most likely by its memory limit
        raise RipgrepFailed(errors.strip()[:200] or f"it ended with status {code}")
    if complete and process.returncode == 2 and not hits:
        raise ToolError(f"grep failed: {errors.strip() or 'ripgrep exited with code 2'}")
    return hits
