"""The two engines behind grep: ripgrep when it is installed, pure Python otherwise.

Both produce the same ``Hit`` records (path, line number, text, match or context) in
path order, honour the same filters (.gitignore roughly, .git and node_modules
skipped, an optional file glob) and stop at a match limit. Open editor documents are
always searched from their buffers by the Python engine, because ripgrep only sees
the disk; their regex dialect is therefore Python's (nearly always the same).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from crank.agent.tools import ToolError

from .context import Documents
from .globs import matches_path
from .textfile import looks_binary
from .walk import ALWAYS_SKIPPED, walk_files

RG_LINE_LIMIT = 1 << 24


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


def search_text(path: Path, text: str, regex: re.Pattern[str], context: int) -> list[Hit]:
    if regex.search(text) is None:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    matched = [i for i, line in enumerate(lines) if regex.search(line)]
    keep: dict[int, bool] = {}
    for i in matched:
        for j in range(max(0, i - context), min(len(lines), i + context + 1)):
            keep.setdefault(j, False)
        keep[i] = True
    return [Hit(path, i + 1, lines[i].rstrip("\r"), keep[i]) for i in sorted(keep)]


def _disk_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if looks_binary(data):
        return None
    return data.decode("utf-8", errors="replace")


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
) -> list[Hit]:
    """Walk and search in this thread; stops early once past the limit or asked to."""
    regex = query.regex()
    hits: list[Hit] = []
    matches = 0
    opened = set(open_documents_under(documents, base, query))
    files = set(walk_files(base, top, stop=lambda: stop() or matches > query.limit))
    for path in sorted(files | opened):
        if stop() or matches > query.limit:
            break
        if not wanted(query, base, path):
            continue
        buffer = documents.text_of(path) if path in opened else None
        text = buffer if buffer is not None else _disk_text(path)
        if text is None:
            continue
        found = search_text(path, text, regex, query.context)
        hits.extend(found)
        matches += _count(found)
    return hits


def ripgrep() -> str | None:
    return shutil.which("rg")


def _rg_args(rg: str, query: Query, base: Path) -> list[str]:
    args = [rg, "--json", "--no-require-git", "--hidden", "--sort", "path"]
    args += [arg for name in sorted(ALWAYS_SKIPPED) for arg in ("--glob", f"!{name}")]
    if query.ignore_case:
        args.append("--ignore-case")
    if query.literal:
        args.append("--fixed-strings")
    if query.context:
        args += ["--context", str(query.context)]
    return [*args, "--regexp", query.pattern, "--", str(base)]


def _hit_of(line: bytes) -> Hit | None:
    event = json.loads(line)
    if event.get("type") not in ("match", "context"):
        return None
    data = event["data"]
    path_text = data["path"].get("text")
    text = data["lines"].get("text")
    if path_text is None or text is None:
        return None
    return Hit(
        Path(path_text),
        data["line_number"],
        text.rstrip("\n").rstrip("\r"),
        event["type"] == "match",
    )


async def rg_search(rg: str, query: Query, base: Path, skip: set[Path]) -> list[Hit]:
    """Run ripgrep over the disk, leaving out ``skip`` (files searched elsewhere).

    The file glob is applied here rather than with ``--glob``, because ripgrep lets a
    ``--glob`` override .gitignore and the two engines must agree.
    """
    process = await asyncio.create_subprocess_exec(
        *_rg_args(rg, query, base),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=RG_LINE_LIMIT,
    )
    assert process.stdout is not None and process.stderr is not None
    hits: list[Hit] = []
    matches = 0
    try:
        async for line in process.stdout:
            hit = _hit_of(line)
            if hit is None or hit.path in skip or not wanted(query, base, hit.path):
                continue
            hits.append(hit)
            matches += hit.match
            if matches > query.limit:
                break
        complete = matches <= query.limit
        errors = (await process.stderr.read()).decode(errors="replace") if complete else ""
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        await process.wait()
    if complete and process.returncode == 2 and not hits:
        raise ToolError(f"grep failed: {errors.strip() or 'ripgrep exited with code 2'}")
    return hits
