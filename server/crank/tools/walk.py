"""Walking a tree the way a developer means it: .gitignore respected (roughly), .git
and node_modules skipped, symlinks not followed (neither directories nor files, as
ripgrep does: a link may point out of the workspace), names in sorted order.

"Roughly" means: .gitignore files in the walked directories and their ancestors up to
the workspace root, with negation, directory-only and anchored patterns, last match
wins and deeper files override shallower ones. Not: global excludes, .git/info/exclude.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .globs import compile_glob

ALWAYS_SKIPPED = frozenset({".git", "node_modules"})


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
        if not line or line.startswith("#"):
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
    try:
        return parse_gitignore((directory / ".gitignore").read_text(errors="replace"))
    except OSError:
        return []


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
) -> Iterator[Path]:
    """Files under ``start`` (or ``start`` itself if it is a file), depth first, sorted."""
    layers = ancestor_layers(start, top) if respect_ignores else []
    if start.is_file():
        yield start
        return
    yield from _walk(start, layers, stop, respect_ignores)


def _walk(
    directory: Path, layers: list[Layer], stop: Callable[[], bool], respect: bool
) -> Iterator[Path]:
    if respect:
        layers = [*layers, (directory, _load_rules(directory))]
    try:
        with os.scandir(directory) as scan:
            entries = sorted(scan, key=lambda e: e.name)
    except OSError:
        return
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
            yield from _walk(path, layers, stop, respect)
        elif entry.is_file(follow_symlinks=False):
            yield path
