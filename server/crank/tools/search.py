"""The two engines behind grep: ripgrep when it is installed, pure Python otherwise.

Both produce the same ``Hit`` records (path, line number, text, match or context) in
path order, honour the same filters (.gitignore roughly, .git and node_modules
skipped, an optional file glob) and stop at a match limit. Open editor documents are
always searched from their buffers by the Python engine, because ripgrep only sees
the disk. The Python engine's patterns are RE2's (``pattern``): linear in time, and
ripgrep's own dialect but for ASCII ``\\d``/``\\w``/``\\b``. Everything here runs off the
event loop (a worker thread, or ripgrep's process) and stops when asked.

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
import signal
import stat
import sysconfig
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

from crank.agent.tools import MAX_LINES, NOTE_ROOM_LINES, ToolError

from .context import Documents
from .globs import matches_path
from .lines import LineReader
from .pattern import Pattern, grep_pattern
from .process import kill_group
from .sandbox import probe, reader_argv
from .textfile import swapped
from .walk import ALWAYS_SKIPPED, FILE_FLAGS, Found, open_folder, walk_batches, walk_files

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


def _io_counters(pgid: int) -> str | None:
    """The I/O counters of every process in the group ``pgid`` (Linux) as text, None
    where none can be read. The whole group, not its first process: in the sandbox
    that is bubblewrap, whose own counters stay still while ripgrep reads."""
    counters: list[str] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            if len(fields) < 3 or fields[2] != str(pgid):
                continue
            with open(f"/proc/{name}/io") as handle:
                counters.append(f"{name}\n{handle.read()}")
        except (OSError, IndexError):
            continue
    return "".join(sorted(counters)) or None


async def _watch(process: asyncio.subprocess.Process, stuck: list[bool]) -> None:
    """Kill ``process``'s group once its I/O counters stay still for RG_STALL_SECONDS."""
    last = await asyncio.to_thread(_io_counters, process.pid)
    still = 0
    while last is not None and process.returncode is None:
        await asyncio.sleep(1)
        now = await asyncio.to_thread(_io_counters, process.pid)
        still = still + 1 if now == last else 0
        last = now
        if still >= RG_STALL_SECONDS:
            stuck.append(True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
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

    def regex(self) -> Pattern:
        """The compiled pattern (RE2, ripgrep's dialect: see ``pattern``); ToolError
        for one RE2 refuses."""
        return grep_pattern(self.pattern, ignore_case=self.ignore_case, literal=self.literal)


def wanted(query: Query, relative: str) -> bool:
    """Does the file glob admit a file at ``relative`` (to the search base; its name
    when the base is the file)?"""
    return query.glob is None or matches_path(query.glob, relative)


def _short(line: str) -> str:
    """A line as kept in a Hit: enough to render it, never the whole of a giant line."""
    return line[: LINE_CHARS + 1]


def _text(data: bytes, start: int, end: int) -> str:
    """A line of a block as kept in a Hit, decoding no more of it than is kept."""
    piece = data[start : min(end, start + 4 * (LINE_CHARS + 1))]
    text = piece.decode("utf-8", "replace")
    return _short(text.removesuffix("\r") if end - start == len(piece) else text)


class _Where:
    """The Path of a file, built when it is first needed (a hit, a note): a Path per
    file searched costs more than searching a small file."""

    __slots__ = ("_make", "_path")

    def __init__(self, make: Callable[[], Path]) -> None:
        self._make = make
        self._path: Path | None = None

    def __call__(self) -> Path:
        if self._path is None:
            self._path = self._make()
        return self._path


def _blocks(source: BinaryIO, stop: Callable[[], bool]) -> Iterator[tuple[bytes, bool]]:
    reader = LineReader(source, stop=stop)
    while (block := reader.read_block(BLOCK_BYTES)) is not None:
        yield block.data, block.cut


def scan(
    path: Path | Callable[[], Path],
    source: BinaryIO | bytes,
    regex: Pattern,
    context: int,
    *,
    room: int = MOST_HITS,
    stop_at_nul: bool = True,
    stop: Callable[[], bool] = lambda: False,
    report: Report | None = None,
) -> list[Hit]:
    """The hits in one file, streamed a block at a time (``source`` may also be the
    whole file's bytes): one RE2 search per block without a match, one per matching
    line in the others (a match never spans lines), decoding only what is kept. Stops
    at a NUL byte when ``stop_at_nul``, and once more than ``room`` hits were found.
    ``path`` may be a function that makes it (called only if there is a hit)."""
    where = path if callable(path) else (lambda: path)
    blocks = iter([(source, False)]) if isinstance(source, bytes) else _blocks(source, stop)
    hits: list[Hit] = []
    number = 0
    before: deque[tuple[int, str]] = deque(maxlen=context)
    after = 0
    for data, cut in blocks:
        if stop_at_nul and b"\0" in data:
            break
        if cut and report is not None and where() not in report.long_lines:
            report.long_lines.append(where())
        found = regex.span(data)
        if found is None and not after:
            count = 1 if cut else data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            if context:
                text = data.decode("utf-8", "replace")
                pieces = text.removesuffix("\n").rsplit("\n", context)[-context:]
                first = number + count - len(pieces) + 1
                before.extend((first + i, _short(p.rstrip("\r"))) for i, p in enumerate(pieces))
            number += count
            continue
        if not context and not cut:
            at, pos, size = number, 0, len(data)
            while found is not None:
                start = data.rfind(b"\n", 0, found[0]) + 1
                end = data.find(b"\n", found[0])
                end = size if end == -1 else end
                at += data.count(b"\n", pos, start) + 1
                hits.append(Hit(where(), at, _text(data, start, end), True))
                if len(hits) > room:
                    return hits
                pos = end + 1
                found = regex.span(data, pos) if pos < size else None
            number += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
            continue
        lines = [data] if cut else data.removesuffix(b"\n").split(b"\n")
        for raw in lines:
            number += 1
            if regex.search(raw):
                hits.extend(Hit(where(), n, t, False) for n, t in before)
                before.clear()
                hits.append(Hit(where(), number, _text(raw, 0, len(raw)), True))
                after = context
            elif after:
                hits.append(Hit(where(), number, _text(raw, 0, len(raw)), False))
                after -= 1
            elif context:
                before.append((number, _text(raw, 0, len(raw))))
            if len(hits) > room:
                return hits
    return hits


def search_text(
    path: Path, text: str, regex: Pattern, context: int, room: int = MOST_HITS
) -> list[Hit]:
    """The hits in an open buffer (already in memory), searched the same way."""
    source = io.BytesIO(text.encode("utf-8", "surrogatepass"))
    return scan(path, source, regex, context, room=room, stop_at_nul=False)


def search_found(
    folder: int,
    name: str,
    where: Callable[[], Path],
    regex: Pattern,
    context: int,
    room: int,
    stop: Callable[[], bool],
    report: Report | None = None,
) -> list[Hit]:
    """The hits in the file ``name`` of the open ``folder`` (opened by that descriptor,
    never through a link); none for what is not a readable regular file. A small file
    is read in one call and searched whole."""
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=folder)
    except OSError:
        return []
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return []
        if info.st_size < BLOCK_BYTES:
            data = os.read(fd, info.st_size + 1)  # not BLOCK_BYTES: a megabyte to allocate
            if len(data) <= info.st_size:
                if not regex.search(data):  # most files: one search, nothing else
                    return []
                return scan(_Where(where), data, regex, context, room=room, report=report)
            os.lseek(fd, 0, os.SEEK_SET)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return scan(_Where(where), handle, regex, context, room=room, stop=stop, report=report)
    except OSError:
        return []
    finally:
        os.close(fd)


def _relative(base: Path, path: Path) -> str:
    return path.relative_to(base).as_posix() if path != base else path.name


def open_documents_under(documents: Documents, base: Path, query: Query) -> list[Path]:
    found = []
    for path in documents.paths():
        inside = path == base or path.is_relative_to(base)
        skipped = any(part in ALWAYS_SKIPPED for part in path.parts)
        if inside and not skipped and wanted(query, _relative(base, path)):
            found.append(path)
    return sorted(found)


def _count(hits: Iterable[Hit]) -> int:
    return sum(1 for hit in hits if hit.match)


def _in_walk_order(found: Found) -> list[str]:
    return found[0].split("/")


def python_search(
    query: Query,
    base: Path,
    top: Path,
    documents: Documents,
    stop: Callable[[], bool] = lambda: False,
    report: Report | None = None,
) -> list[Hit]:
    """Walk and search in this thread (RE2 releases the GIL while it matches, so the
    event loop runs on); stops early once past the limit (or past the hits that could
    be shown) or asked to, between two files or two blocks. What was searched only in
    part goes in ``report``."""
    regex = query.regex()
    hits: list[Hit] = []
    matches = 0

    def enough() -> bool:
        return stop() or matches > query.limit or len(hits) > MOST_HITS

    opened = {_relative(base, path): path for path in open_documents_under(documents, base, query)}
    crowded = report.crowded if report is not None else None
    lead = base if base.is_dir() else base.parent
    context = query.context
    if not opened:  # the common case, kept tight: no Path and no merge per file
        for prefix, folder, names in walk_batches(base, top, stop=enough, crowded=crowded):
            for name in names:
                relative = prefix + name
                if query.glob is not None and not wanted(query, relative):
                    continue
                room = MOST_HITS - len(hits)
                where = partial(_join, lead, relative)
                found = search_found(folder, name, where, regex, context, room, stop, report)
                if found:
                    hits.extend(found)
                    matches += _count(found)
                    if enough():
                        return hits
        return hits
    files: Iterable[Found] = walk_files(base, top, stop=enough, crowded=crowded)
    buffers = [(relative, -1, "") for relative in sorted(opened, key=lambda r: r.split("/"))]
    previous = None
    for relative, folder, name in heapq.merge(files, buffers, key=_in_walk_order):
        if enough():
            break
        if relative == previous:
            continue
        previous = relative
        if not wanted(query, relative):
            continue
        room = MOST_HITS - len(hits)
        path = opened.get(relative)
        buffer = documents.text_of(path) if path is not None else None
        if path is not None and buffer is not None:
            found = search_text(path, buffer, regex, context, room)
        elif folder >= 0:
            where = partial(_join, lead, relative)
            found = search_found(folder, name, where, regex, context, room, stop, report)
        else:
            continue
        hits.extend(found)
        matches += _count(found)
    return hits


def _join(lead: Path, relative: str) -> Path:
    return lead / relative


def ripgrep() -> str | None:
    """``rg`` on PATH, else the one installed beside this Python (the ``ripgrep`` wheel
    from PyPI puts it in the environment's scripts folder, which need not be on PATH)."""
    found = shutil.which("rg")
    if found is not None:
        return found
    beside = Path(sysconfig.get_path("scripts")) / ("rg.exe" if os.name == "nt" else "rg")
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def _rg_args(rg: str, query: Query, target: str) -> list[str]:
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
    return [*args, "--regexp", query.pattern, "--", target]


_RG_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)


def _hit_of(line: bytes, top: Path) -> Hit | None:
    """One line of ripgrep's output (``path NUL number : text`` for a match, ``-`` for
    context, the path relative to ``top``); None for group separators and notices."""
    path, nul, rest = line.partition(b"\0")
    parsed = _RG_LINE.fullmatch(rest.rstrip(b"\n").removesuffix(b"\r")) if nul else None
    if parsed is None:
        return None
    number, mark, text = parsed.groups()
    relative = os.fsdecode(path).removeprefix("./")
    return Hit(
        top / relative if relative != "." else top,
        int(number),
        _short(text.decode("utf-8", "replace")),
        mark == b":",
    )


def search_top(base: Path, root: Path) -> Path:
    """The folder ripgrep is shown (and nothing else): the workspace, or the base
    itself (or its folder) when the search was allowed outside it."""
    if base == root or base.is_relative_to(root):
        return root
    return base if base.is_dir() else base.parent


def _pin(base: Path, root: Path) -> tuple[Path, str, int]:
    """The top folder ripgrep is shown, the base relative to it, and the top opened."""
    if base.is_symlink():  # the checked path had none: one was swapped in since
        raise swapped(str(base))
    top = search_top(base, root)
    return top, base.relative_to(top).as_posix() if base != top else ".", open_folder(top, str(top))


async def rg_search(
    rg: str, query: Query, base: Path, skip: set[Path], root: Path | None = None
) -> list[Hit]:
    """Run ripgrep over the disk, leaving out ``skip`` (files searched elsewhere).

    ripgrep sees only the search's top folder (the workspace, see ``search_top``),
    opened here without following links and checked to be the checked path, then
    mounted by that descriptor into a sandbox that holds nothing else of the user's
    (``sandbox.reader_argv``): a folder swapped for a link while it runs leads nowhere
    (a link to ``~/.ssh`` points at nothing there). Without a sandbox it runs in that
    folder by its descriptor. The file glob is applied here rather than with
    ``--glob``, because ripgrep lets a ``--glob`` override .gitignore and the two
    engines must agree. ``base`` must not be a FIFO or device (ripgrep would wait on
    it): grep checks a file base first. Raises RipgrepFailed when ripgrep died,
    typically of RG_MEMORY on a giant line.
    """
    top, target, folder = await asyncio.to_thread(_pin, base, root or base)
    try:
        return await _rg_in(rg, query, base, skip, top, target, folder)
    finally:
        os.close(folder)


def _rg_command(
    rg: str, query: Query, target: str, folder: int, top: Path
) -> tuple[list[str], str | None]:
    """ripgrep's argv (in the reader sandbox where there is one) and working directory."""
    argv = _rg_args(os.path.realpath(rg), query, target)
    if probe().available:
        return reader_argv(argv, folder, top), None
    return argv, f"/proc/self/fd/{folder}" if os.path.isdir("/proc/self/fd") else str(top)


async def _rg_in(
    rg: str, query: Query, base: Path, skip: set[Path], top: Path, target: str, folder: int
) -> list[Hit]:
    argv, cwd = await asyncio.to_thread(_rg_command, rg, query, target, folder, top)
    if (
        os.name == "posix"
    ):  # the limit is set before ripgrep starts, so it holds from the first byte
        limit = f'ulimit -v {RG_MEMORY // 1024} 2>/dev/null; exec "$@"'
        argv = ["/bin/sh", "-c", limit, "rg", *argv]
    spawn = asyncio.get_running_loop().create_task(
        asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            limit=RG_LINE_LIMIT,
            pass_fds=(folder,),
            cwd=cwd,
            start_new_session=True,
        )
    )
    try:
        process = await asyncio.shield(spawn)
    except asyncio.CancelledError:  # an abort while its pipes connect: end it all the same
        with contextlib.suppress(OSError):  # (one that failed to start has nothing to end)
            await kill_group(await spawn, grace=0)
        raise
    assert process.stdout is not None and process.stderr is not None
    hits: list[Hit] = []
    matches = 0
    stuck: list[bool] = []
    watchdog = asyncio.create_task(_watch(process, stuck))
    ended = False
    try:
        while True:
            try:
                line = await process.stdout.readline()
            except ValueError:  # a line over the limit: dropped, the rest goes on
                continue
            if not line:
                break
            hit = _hit_of(line, top)
            if hit is None or hit.path in skip or not wanted(query, _relative(base, hit.path)):
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
        # Only a ripgrep still searching is killed, and with its whole process group: the
        # sandbox's own processes too. Killing only the first one (the shell, then
        # bubblewrap) is not enough: bubblewrap's child, killed with its parent through
        # --die-with-parent only once it has set that up, keeps ripgrep and its pipes
        # alive when the kill lands before, and wait() below waits for those pipes to
        # close. One that closed its output is exiting and is only waited for.
        if process.returncode is None and not ended:
            await kill_group(process, grace=0)
        await process.wait()
    if stuck:
        raise RipgrepFailed(f"it did no I/O for {RG_STALL_SECONDS} s, as when opening a FIFO")
    code = process.returncode
    if complete and code != 0 and errors.startswith("bwrap:"):  # the sandbox, not ripgrep
        raise RipgrepFailed(f"its sandbox could not be set up ({errors.strip()[:200]})")
    if complete and code not in (0, 1, 2):  # killed, most likely by its memory limit
        raise RipgrepFailed(errors.strip()[:200] or f"it ended with status {code}")
    if complete and process.returncode == 2 and not hits:
        raise ToolError(f"grep failed: {errors.strip() or 'ripgrep exited with code 2'}")
    return hits
