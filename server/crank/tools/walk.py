"""Walking a tree the way a developer means it: .gitignore respected (roughly), .git
and node_modules skipped, symlinks not followed (neither directories nor files, as
ripgrep does: a link may point out of the workspace), names in sorted order.

Bounded whatever the tree: a directory is read up to ``DIR_ENTRIES`` entries (the
rest is left out and the directory named in ``crowded``), and a .gitignore up to
``GITIGNORE_BYTES`` (and only if it is a regular file: a FIFO there would hang).

"Roughly" means: .gitignore files in the walked directories and their ancestors up to
the workspace root, with negation, directory-only and anchored patterns, last match
wins and deeper files override shallower ones. Not: global excludes, .git/info/exclude.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from crank.agent.tools import ToolError

from .globs import compile_glob
from .textfile import open_regular

ALWAYS_SKIPPED = frozenset({".git", "node_modules"})
DIR_ENTRIES = 100_000
"""Entries read from one directory, at most (they are sorted, so they are held)."""
GITIGNORE_BYTES = 1 << 20
PATTERN_CHARS = 4096
"""A longer .gitignore line is no path pattern (PATH_MAX is 4096); it is skipped rather
than compiled into a regex of that size."""


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
        return compile_glob(self.regex_source).match(target) is not None


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


def _load_rules(directory: Path) -> list[Rule]:
    path = directory / ".gitignore"
    try:
        with open_regular(path, str(path)) as (handle, _):
            data = handle.read(GITIGNORE_BYTES)
    except (OSError, ToolError):
        return []
    if b"\0" in data:  # not a text file: git would make nothing useful of it either
        return []
    return parse_gitignore(data.decode("utf-8", "replace"))


Layer = tuple[Path, list[Rule]]


def ignored(path: Path, is_dir: bool, layers: list[Layer]) -> bool:
    """Deepest .gitignore with a matching rule decides; within a file, the last rule."""
    for base, rules in reversed(layers):
        if not rules:
            continue
        relative = path.relative_to(base).as_posix()
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
    return [(directory, _load_rules(directory)) for directory in chain]


def walk_files(
    start: Path,
    top: Path,
    *,
    stop: Callable[[], bool] = lambda: False,
    respect_ignores: bool = True,
    crowded: list[Path] | None = None,
) -> Iterator[Path]:
    """Files under ``start`` (or ``start`` itself if it is a file), depth first, sorted.
    A directory with more than DIR_ENTRIES entries is walked in its first DIR_ENTRIES
    (in the order the system gives them) and appended to ``crowded``."""
    layers = ancestor_layers(start, top) if respect_ignores else []
    if start.is_file():
        yield start
        return
    yield from _walk(start, layers, stop, respect_ignores, crowded)


def _walk(
    directory: Path,
    layers: list[Layer],
    stop: Callable[[], bool],
    respect: bool,
    crowded: list[Path] | None,
) -> Iterator[Path]:
    if respect:
        layers = [*layers, (directory, _load_rules(directory))]
    try:
        with os.scandir(directory) as scan:
            entries = list(itertools.islice(scan, DIR_ENTRIES + 1))
    except OSError:
        return
    if len(entries) > DIR_ENTRIES:
        entries.pop()
        if crowded is not None:
            crowded.append(directory)
    entries.sort(key=lambda e: e.name)
    for entry in entries:
        if stop():
            return
        path = directory / entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        if is_dir and entry.name in ALWAYS_SKIPPED:
            continue
        if respect and ignored(path, is_dir, layers):
            continue
        if is_dir:
            yield from _walk(path, layers, stop, respect, crowded)
        elif entry.is_file(follow_symlinks=False):
            yield path


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
