"""Walking a tree the way a developer means it: .gitignore respected (roughly), .git
and node_modules skipped, symlinks not followed (neither directories nor files, as
ripgrep does: a link may point out of the workspace), names in sorted order.

Bounded whatever the tree: a directory is read up to ``DIR_ENTRIES`` entries (the
rest is left out and the directory named in ``crowded``), and a .gitignore up to
``GITIGNORE_BYTES`` (and only if it is a regular file: a FIFO there would hang).

Every folder is opened by its parent's descriptor, never through a link (``O_NOFOLLOW``
at every level), and every file by its folder's: a folder swapped for a link to
``~/.ssh`` while the walk runs is passed over, not entered. Paths are strings relative
to the start; the callers make a Path only for what they return.

"Roughly" means: .gitignore files in the walked directories and their ancestors up to
the workspace root, with negation, directory-only and anchored patterns, last match
wins and deeper files override shallower ones. Not: global excludes, .git/info/exclude.
"""

from __future__ import annotations

import errno
import itertools
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from crank.agent.tools import ToolError

from .globs import compile_glob
from .textfile import open_regular, opened_as, swapped

ALWAYS_SKIPPED = frozenset({".git", "node_modules"})
DIR_ENTRIES = 100_000
"""Entries read from one directory, at most (they are sorted, so they are held)."""
GITIGNORE_BYTES = 1 << 20
PATTERN_CHARS = 4096
"""A longer .gitignore line is no path pattern (PATH_MAX is 4096); it is skipped rather
than compiled into a regex of that size."""


DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
"""How every folder of a walk is opened: by its parent's descriptor and never through a
link, so a folder swapped for a link while the walk runs is passed over, not entered."""
FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Rule:
    regex_source: str
    negated: bool
    dir_only: bool
    anchored: bool

    def matches(self, relative: str, is_dir: bool) -> bool:
        if self.dir_only and not is_dir:
            return False
        target = relative if self.anchored else relative.rsplit("/", 1)[-1]
        return compile_glob(self.regex_source).fullmatch(target)


def parse_gitignore(text: str) -> list[Rule]:
    rules: list[Rule] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line or line.startswith("#") or len(line) > PATTERN_CHARS:
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        anchored = "/" in line
        rules.append(Rule(line.lstrip("/"), negated, dir_only, anchored))
    return rules


def _rules_of(data: bytes) -> list[Rule]:
    if b"\0" in data:  # not a text file: git would make nothing useful of it either
        return []
    return parse_gitignore(data.decode("utf-8", "replace"))


def _load_rules(directory: Path) -> list[Rule]:
    path = directory / ".gitignore"
    try:
        with open_regular(path, str(path)) as (handle, _):
            return _rules_of(handle.read(GITIGNORE_BYTES))
    except (OSError, ToolError):
        return []


def _rules_at(folder: int) -> list[Rule]:
    """The rules of the .gitignore in an open folder: only a regular file, never
    through a link, at most GITIGNORE_BYTES."""
    try:
        fd = os.open(".gitignore", FILE_FLAGS, dir_fd=folder)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return _rules_of(handle.read(GITIGNORE_BYTES))
    except OSError:
        return []
    finally:
        os.close(fd)


Layer = tuple[str, int, list[Rule]]
"""The rules of one .gitignore, for paths relative to the walk's start (``rel``): a
path relative to the .gitignore's folder is ``lead + rel[strip:]``. Strings, not Paths:
this is asked of every entry of a walk."""


def ignored(rel: str, is_dir: bool, layers: list[Layer]) -> bool:
    """Deepest .gitignore with a matching rule decides; within a file, the last rule."""
    for lead, strip, rules in reversed(layers):
        relative = lead + rel[strip:]
        for rule in reversed(rules):
            if rule.matches(relative, is_dir):
                return not rule.negated
    return False


def ancestor_layers(start: Path, top: Path) -> list[Layer]:
    """Rules from ``top`` down to ``start``'s parent (when ``start`` is under ``top``)."""
    if not start.is_relative_to(top) or start == top:
        return []
    between = reversed(list(start.relative_to(top).parents)[:-1])
    chain = [top, *(top / part for part in between)]
    layers: list[Layer] = []
    for directory in chain:
        rules = _load_rules(directory)
        if rules:
            layers.append((start.relative_to(directory).as_posix() + "/", 0, rules))
    return layers


def open_folder(path: Path, display: str) -> int:
    """A descriptor of the checked, symlink-free folder ``path``; ToolError when it is
    gone, not a folder, or no longer that folder (a link in its path was swapped in
    after the check: ``textfile.swapped``)."""
    try:
        fd = os.open(path, DIR_FLAGS)
    except FileNotFoundError:
        raise ToolError(f"Directory not found: {display}") from None
    except NotADirectoryError:
        if path.is_symlink():
            raise swapped(display) from None
        raise ToolError(f"{display} is a file, not a directory; use read to see it.") from None
    except PermissionError:
        raise ToolError(f"Permission denied listing {display}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise swapped(display) from None
        raise ToolError(f"Could not open {display}: {exc.strerror or exc}") from None
    if not opened_as(fd, path):
        os.close(fd)
        raise swapped(display)
    return fd


Found = tuple[str, int, str]
"""A file of a walk: its path relative to the start ("/"-separated; its name when the
start is the file), the descriptor of its open folder (valid until the walk moves on)
and its name in that folder: open it with ``dir_fd``, never by path."""

Batch = tuple[str, int, list[str]]
"""Consecutive files of one folder, in walk order: the folder's path relative to the
start ("" or ending in "/"), its open descriptor (valid until the walk moves on) and
the files' names. A file's path relative to the start is prefix + name."""


def walk_files(
    start: Path,
    top: Path,
    *,
    stop: Callable[[], bool] = lambda: False,
    respect_ignores: bool = True,
    crowded: list[Path] | None = None,
) -> Iterator[Found]:
    """``walk_batches``, one file at a time."""
    for prefix, folder, names in walk_batches(
        start, top, stop=stop, respect_ignores=respect_ignores, crowded=crowded
    ):
        for name in names:
            yield (prefix + name, folder, name)


def walk_batches(
    start: Path,
    top: Path,
    *,
    stop: Callable[[], bool] = lambda: False,
    respect_ignores: bool = True,
    crowded: list[Path] | None = None,
) -> Iterator[Batch]:
    """Files under ``start`` (or ``start`` itself if it is a file), depth first, sorted
    by name at every level, in batches (``Batch``). Every folder is opened by its
    parent's descriptor without following links (``start`` itself must be a checked
    path and is verified to be that folder, else ToolError). ``stop`` is asked between
    batches. A directory with more than DIR_ENTRIES entries is walked in its first
    DIR_ENTRIES (in the order the system gives them) and appended to ``crowded``.

    Iterative, with string paths: a Path, or a generator level, per entry cost more
    than the walk itself (bench/search_floor.py)."""
    layers = ancestor_layers(start, top) if respect_ignores else []
    if start.is_symlink():  # the checked path had none: one was swapped in since
        raise swapped(str(start))
    if not start.is_dir():
        folder = open_folder(start.parent, str(start.parent))
        try:
            info = os.stat(start.name, dir_fd=folder, follow_symlinks=False)
            if stat.S_ISREG(info.st_mode):
                yield ("", folder, [start.name])
        except OSError:
            return
        finally:
            os.close(folder)
        return
    first = open_folder(start, str(start))
    frames: list[_Frame] = []
    try:
        frames.append(_frame(start, first, "", layers, respect_ignores, crowded))
        while frames:
            frame = frames[-1]
            folder, prefix, layers, entries = frame
            files: list[str] = []
            child: _Frame | None = None
            for entry in entries:
                name = entry.name
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    rel = prefix + name
                    if name in ALWAYS_SKIPPED or (layers and ignored(rel, True, layers)):
                        continue
                    try:
                        fd = os.open(name, DIR_FLAGS, dir_fd=folder)
                    except OSError:  # gone, or swapped for a link since it was listed
                        continue
                    child = _frame(start, fd, rel + "/", layers, respect_ignores, crowded)
                    break
                if entry.is_file(follow_symlinks=False) and not (
                    layers and ignored(prefix + name, False, layers)
                ):
                    files.append(name)
            if files:
                yield (prefix, folder, files)
            if stop():
                return
            if child is not None:
                frames.append(child)
            else:
                frames.pop()
                os.close(folder)
    finally:
        for frame in frames:
            os.close(frame[0])


_Frame = tuple[int, str, list[Layer], Iterator[os.DirEntry[str]]]


def _frame(
    start: Path,
    folder: int,
    prefix: str,
    layers: list[Layer],
    respect: bool,
    crowded: list[Path] | None,
) -> _Frame:
    """An open folder's sorted entries (up to DIR_ENTRIES) and the rules in force."""
    try:
        with os.scandir(folder) as scan:
            entries = list(itertools.islice(scan, DIR_ENTRIES + 1))
    except OSError:
        entries = []
    if len(entries) > DIR_ENTRIES:
        entries.pop()
        if crowded is not None:
            crowded.append(start / prefix if prefix else start)
    entries.sort(key=lambda e: e.name)
    if respect and any(entry.name == ".gitignore" for entry in entries):
        rules = _rules_at(folder)
        if rules:
            layers = [*layers, ("", len(prefix), rules)]
    return (folder, prefix, layers, iter(entries))


def crowded_note(crowded: list[Path], display: Callable[[Path], str], verb: str) -> str:
    """The closing note for directories walked only in part (empty if there were none)."""
    if not crowded:
        return ""
    names = ", ".join(display(path) for path in crowded[:5])
    more = f" and {len(crowded) - 5} more" if len(crowded) > 5 else ""
    return (
        f"\n\n[{names}{more}: more than {DIR_ENTRIES} entries; only the first {DIR_ENTRIES} "
        f"(in directory order) were {verb}. Give a narrower path.]"
    )
