"""The one regular-expression engine of the tools: RE2 (google-re2), linear in time.

Why RE2 and not Python's ``re``: the model writes grep patterns, and a workspace writes
.gitignore globs; either can be hostile or merely unlucky. ``re`` backtracks, so
``(a+)+n`` on a 30-character line takes a minute and doubles per character, and it
holds the GIL all along, which froze the whole server (no abort could land). RE2 runs
in time linear in the text for every pattern and releases the GIL while it matches,
so a search in a worker thread never starves the event loop. It is also the dialect
the model expects: ripgrep's default engine (Rust's ``regex``) is RE2's design, with
the same refusals (no backreferences, no look-around) and the same syntax for
classes, repetitions, flags (``(?i)``), ``\\b`` and named groups. Differences left:
RE2's ``\\d``, ``\\w``, ``\\b`` are ASCII (Rust's are Unicode), and ``\\z`` is the end of
text (``\\Z`` is refused). Measured (docs/tools.md): a megabyte block without a match
searched in about 1 ms, against 2 ms for ``re``; ``(a+)+n`` on any line at once.

Patterns are matched on bytes (UTF-8), so a file is searched before and without being
decoded; a pattern never matches a newline (``never_nl``: grep is line-oriented, as
ripgrep is unless told otherwise), and ``^``/``$`` are line anchors.
"""

from __future__ import annotations

from typing import Any

import re2

from crank.agent.tools import ToolError

from .names import shown

_UNANCHORED: Any = re2._re2.RE2.Anchor.UNANCHORED
_ANCHOR_BOTH: Any = re2._re2.RE2.Anchor.ANCHOR_BOTH
_NO_MATCH = (-1, -1)


def _options(*, ignore_case: bool = False, literal: bool = False, lines: bool = False) -> Any:
    options = re2.Options()
    options.log_errors = False  # the error comes back to the caller; nothing on stderr
    options.case_sensitive = not ignore_case
    options.literal = literal
    options.never_nl = lines
    options.max_mem = 64 << 20
    return options


def _error_text(exc: Exception) -> str:
    text = exc.args[0] if exc.args else exc
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)


class Pattern:
    """A compiled pattern; searches bytes (UTF-8) or text. Immutable, shareable
    between threads."""

    __slots__ = ("_regexp", "source")

    def __init__(self, regexp: Any, source: str) -> None:
        self._regexp = regexp
        self.source = source

    def span(self, data: bytes, start: int = 0, end: int | None = None) -> tuple[int, int] | None:
        """Where the leftmost match in ``data[start:end]`` is, or None."""
        stop = len(data) if end is None else end
        found = self._regexp.Match(_UNANCHORED, data, start, stop)[0]
        return None if found == _NO_MATCH else (found[0], found[1])

    def search(self, data: bytes) -> bool:
        return bool(self._regexp.Match(_UNANCHORED, data, 0, len(data))[0] != _NO_MATCH)

    def fullmatch(self, text: str) -> bool:
        """Does the whole of ``text`` (a name or a path) match? RE2 matches no byte
        that is not UTF-8, not even with ``.`` or ``[^/]``, so ``*`` skipped
        ``bad\\xffname.txt``: such a name is matched as the tools show it
        (``names.shown``), where each of those bytes is the text ``\\xff``."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = shown(text).encode("utf-8")
        return bool(self._regexp.Match(_ANCHOR_BOTH, data, 0, len(data))[0] != _NO_MATCH)


def _compile(source: str, options: Any) -> Any:
    return re2._re2.RE2(source.encode("utf-8", "surrogateescape"), options)


def grep_pattern(source: str, *, ignore_case: bool = False, literal: bool = False) -> Pattern:
    """The pattern of a grep call (ripgrep's dialect, line by line); ToolError naming
    the pattern and what RE2 refused in it."""
    options = _options(ignore_case=ignore_case, literal=literal, lines=True)
    text = source if literal else f"(?m){source}"
    try:
        regexp = _compile(text, options)
    except re2.error as exc:  # raised by some bindings' versions
        raise ToolError(f"Invalid regular expression {source!r}: {_error_text(exc)}") from None
    if not regexp.ok():
        why = regexp.error()
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise ToolError(
            f"Invalid regular expression {source!r}: {why} (the dialect is ripgrep's: no "
            "backreferences or look-around)"
        )
    return Pattern(regexp, source)


def whole_pattern(source: str) -> Pattern | None:
    """A translated glob, matched against a whole name; None if RE2 refuses it."""
    regexp = _compile(source, _options())
    return Pattern(regexp, source) if regexp.ok() else None
