"""The ``details`` each tool sends its clients (``tool_execution_end`` ``result.details``),
as types: the contract's statement of them (``crank.workspace.contract``). Details never
reach the model."""

from __future__ import annotations

from typing import NotRequired, TypedDict

__all__ = ["CommandDetails", "DeclinedDetails", "FileChangeDetails", "ReadDetails"]


class FileChangeDetails(TypedDict):
    """``edit`` and ``write``: the whole file before and after, and the diff shown."""

    path: str
    oldText: str
    newText: str
    diff: str
    oldTextOmitted: NotRequired[int]
    """The old file's size in bytes when it was too large or not text to load:
    ``oldText`` is then empty and is NOT the old content."""


class ReadDetails(TypedDict):
    """``read``: which file, and whether the text came from an open editor buffer."""

    path: str
    openInEditor: bool
    unsaved: bool
    """The buffer holds text the disk does not (the user's unsaved edits)."""


class CommandDetails(TypedDict):
    """``bash``: how the command ended, and where its whole output was saved."""

    exitCode: int | None
    timedOut: bool
    fullOutputPath: str | None


class DeclinedDetails(TypedDict):
    """Any changing tool whose call the user declined."""

    declined: bool
    reason: str | None
