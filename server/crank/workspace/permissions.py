"""Who may write files and run commands: the mode, remembered rules, then the user.

Modes: ``ask`` (reading is free, writing and running ask), ``autoEdit`` (edits free,
commands ask), ``auto`` (nothing asks), ``readOnly`` (the mutating tools are not even
offered, so they never reach this code). A rule remembers a yes: for ``write``/``edit``
a path prefix, for ``bash`` a command prefix (the program and its subcommand, e.g.
``npm test``), which covers a command only when a shell parser reads it as one simple
command with those first words (``shell_shape``: ``ls && X`` is asked after ``ls`` was
allowed). "Allow for this session" rules live in memory; "always allow" rules
are persisted per workspace in the user data directory as a JSON list of
``{tool, pathPrefix?|commandPrefix?}``. Tool output never changes a rule: only the
user's answer does.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import tempfile
from pathlib import Path
from typing import Any, Literal, get_args

import platformdirs

from crank.session import workspace_key
from crank.tools import ApprovalRequest
from crank.tools.info import tool_info

from .shell_shape import simple_words

log = logging.getLogger(__name__)
PermissionDecision = Literal["allow", "allowSession", "allowAlways", "reject"]
"""The user's answer to a permission question (``crank/requestPermission``'s result)."""
DECISIONS: tuple[PermissionDecision, ...] = get_args(PermissionDecision)
PermissionMode = Literal["ask", "autoEdit", "auto", "readOnly"]
"""Who is asked before a change (the module docstring says what each mode means)."""
PERMISSION_MODES: tuple[PermissionMode, ...] = get_args(PermissionMode)


def default_rules_file(root: Path) -> Path:
    base = Path(platformdirs.user_data_dir("crank", appauthor=False))
    return base / "permissions" / f"{workspace_key(root)}.json"


def command_prefix(command: str) -> str:
    """The part of a command a rule remembers: the program, plus its subcommand when
    the second word is not an option (``git status``, ``npm test``, ``ls``)."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    if not words:
        return command.strip()
    if len(words) > 1 and not words[1].startswith("-") and words[1].isidentifier():
        return f"{words[0]} {words[1]}"
    return words[0]


def _covers(prefix: str, words: tuple[str, ...]) -> bool:
    """Does a rule's command prefix (``ls``, ``git status``) name these words' program
    (and subcommand)? Compared word by word, never as text."""
    try:
        wanted = tuple(shlex.split(prefix))
    except ValueError:
        return False
    return bool(wanted) and words[: len(wanted)] == wanted


def _matches(rule: dict[str, Any], request: ApprovalRequest) -> bool:
    if rule.get("tool") != request["toolName"]:
        return False
    preview = request["preview"]
    if preview["kind"] == "command":
        prefix = rule.get("commandPrefix")
        if not isinstance(prefix, str):
            return False
        words = simple_words(preview["command"]).words
        return words is not None and _covers(prefix, words)
    prefix = rule.get("pathPrefix")
    if prefix is None:
        return False
    path = preview["path"]
    return path == prefix or path.startswith(prefix.rstrip("/") + "/")


class Permissions:
    """The mode and remembered rules of one workspace."""

    def __init__(
        self, root: Path, mode: PermissionMode = "ask", rules_file: Path | None = None
    ) -> None:
        self.root = root
        self.mode: PermissionMode = mode
        self.rules_file = rules_file or default_rules_file(root)
        self.session_rules: list[dict[str, Any]] = []
        self.always_rules: list[dict[str, Any]] = self._load()

    def _load(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.rules_file.read_text("utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("permission rules in %s ignored: %s", self.rules_file, exc)
            return []
        if not isinstance(data, list):
            log.warning("permission rules in %s ignored: not a list", self.rules_file)
            return []
        return [rule for rule in data if isinstance(rule, dict) and "tool" in rule]

    def needs_asking(self, request: ApprovalRequest) -> bool:
        """False when the mode or a remembered rule already says yes."""
        tool = request["toolName"]
        if self.mode == "auto" or (self.mode == "autoEdit" and tool_info(tool).edits_files):
            return False
        return not any(_matches(rule, request) for rule in self.session_rules + self.always_rules)

    def why_asked(self, request: ApprovalRequest) -> str | None:
        """When a remembered rule names this command's program but does not cover the
        command (it is not one simple command: ``simple_words``), the sentence that
        says so, for the question; else None."""
        preview = request["preview"]
        if preview["kind"] != "command" or self.mode == "auto":
            return None
        shape = simple_words(preview["command"])
        if shape.reason is None:
            return None
        first = re.findall(r"^[^\s;&|<>()`$]+", preview["command"].strip())
        for rule in self.session_rules + self.always_rules:
            prefix = rule.get("commandPrefix")
            named = isinstance(prefix, str) and bool(first) and first[0] == prefix.split()[0]
            if rule.get("tool") == request["toolName"] and named:
                return (
                    f"Asked although `{prefix}` is allowed: a rule covers only one simple "
                    f"command, and this one {shape.reason}."
                )
        return None

    def rule_for(self, request: ApprovalRequest) -> dict[str, Any]:
        """What a yes "for this session" or "always" remembers for this request: every
        path in the workspace for an edit, the command prefix for a command."""
        preview = request["preview"]
        if preview["kind"] == "command":
            return {
                "tool": request["toolName"],
                "commandPrefix": command_prefix(preview["command"]),
            }
        path = Path(preview["path"])
        prefix = self.root if path.is_relative_to(self.root) else path
        return {"tool": request["toolName"], "pathPrefix": str(prefix)}

    def remember(self, request: ApprovalRequest, decision: str) -> None:
        rule = self.rule_for(request)
        if decision == "allowSession" and rule not in self.session_rules:
            self.session_rules.append(rule)
        elif decision == "allowAlways" and rule not in self.always_rules:
            self.always_rules.append(rule)
            self._save()

    def _save(self) -> None:
        self.rules_file.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(self.always_rules, indent=1).encode("utf-8")
        fd, temp = tempfile.mkstemp(dir=self.rules_file.parent, prefix=".rules-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temp, self.rules_file)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
