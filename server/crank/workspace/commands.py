"""Commands the user types: ``/compact``, ``/skill:review src/``, ``/fix-tests 12``.

One place decides what a prompt that starts with ``/`` means, for every frontend
(``crank serve``, ``crank acp``, ``crank run``):

- ``/name`` (``name`` made of ``[A-Za-z0-9_.:-]``, then whitespace or the end) is a
  command; ``//...`` sends ``/...`` verbatim; anything else (``/etc/hosts``, where a
  ``/`` follows the name) is plain text;
- built-ins (``BUILTINS``) are performed like their methods (``perform``);
- ``/skill:name args`` puts the skill's whole body in the conversation, wrapped so the
  model knows what it is (``skill_text``), then the arguments;
- ``/name args`` expands the prompt template ``name`` (``crank.prompt.templates``);
- an unknown name is refused (``unknown_command``), never sent as a prompt;
- a steer or follow-up (``CommandCatalog.queued``) means the same, except that a
  built-in cannot be queued (it is performed, not sent): refused while a run is active
  as ``refused_while_running``, like the built-ins that need an idle session, and as
  ``invalid_params`` when idle.

The list (``CommandCatalog.commands``) is built-ins, then skills, then templates, each
by name; hidden skills are invocable but not listed. A template cannot take a
built-in's name (it is left out, and the log says so).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from crank.prompt import PromptTemplate, Skill, expand_template, skill_body

from .errors import CrankError, RefusedWhileRunning, UnknownCommand, invalid_params

CommandKind = Literal["builtin", "skill", "template", "mcp"]
"""What a command is: performed by Crank, a skill's body, or a prompt template."""
COMMAND = re.compile(r"/([A-Za-z0-9_.:-]+)(?=\s|$)")
"""A command at the start of a prompt: its name, followed by whitespace or the end."""
NAME = re.compile(r"[A-Za-z0-9_.:-]+")
SKILL_PREFIX = "skill:"
ESCAPE = "//"
"""A prompt starting with this is sent verbatim, minus its first ``/``."""


@dataclass(frozen=True)
class Command:
    """One entry of ``crank/commands``."""

    name: str
    description: str
    kind: CommandKind
    argument_hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "kind": self.kind,
        }
        if self.argument_hint:
            out["argumentHint"] = self.argument_hint
        return out


BUILTINS: tuple[Command, ...] = (
    Command(
        "compact",
        "Summarise the conversation so far to free the context window",
        "builtin",
        "[instructions]",
    ),
    Command("model", "List the models, or switch to one", "builtin", "[api/id]"),
    Command("new", "Start a new, empty session", "builtin"),
    Command("undo", "Put back the files the last run changed (crank/revert)", "builtin"),
)
BUILTIN_NAMES = frozenset(command.name for command in BUILTINS)


@dataclass(frozen=True)
class Invocation:
    """A command as typed: its name, the text after it (stripped), the whole text."""

    name: str
    args: str
    typed: str


def parse_command(text: str) -> Invocation | str:
    """The command ``text`` invokes, or the text to send as a plain prompt."""
    if text.startswith(ESCAPE):
        return text[1:]
    match = COMMAND.match(text)
    if match is None:
        return text
    return Invocation(match.group(1), text[match.end() :].strip(), text)


@dataclass(frozen=True)
class Expansion:
    """What the model is sent for a skill or template command, and what was typed."""

    text: str
    typed: str


def skill_text(skill: Skill, body: str, args: str) -> str:
    """A skill's body as a user message: wrapped in a ``<skill>`` element naming the
    skill and its file, then the user's arguments (if any) after it."""
    folder = Path(skill.path).parent
    text = (
        f'<skill name="{_attribute(skill.name)}" path="{_attribute(skill.path)}">\n'
        f'The user invoked the skill "{skill.name}" by hand: follow the instructions '
        f"below. Relative paths in them are relative to {folder}.\n\n"
        f"{body}\n</skill>"
    )
    return f"{text}\n\n{args}" if args else text


def _attribute(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


class CommandCatalog:
    """The commands of one workspace, from the skills and templates last loaded."""

    def __init__(
        self,
        skills: Sequence[Skill] = (),
        templates: Sequence[PromptTemplate] = (),
        mcp: Sequence[Command] = (),
    ) -> None:
        self.mcp = tuple(mcp)
        """MCP prompts (``/mcp__<server>__<prompt>``; ``workspace/mcp.py`` runs them)."""
        self.skills = {
            skill.name: skill for skill in skills if NAME.fullmatch(SKILL_PREFIX + skill.name)
        }
        self.templates = {t.name: t for t in templates if t.name not in BUILTIN_NAMES}
        self.problems = tuple(
            f"prompt template {t.path} left out: /{t.name} is a built-in command"
            for t in templates
            if t.name in BUILTIN_NAMES
        )

    def commands(self, *, leave_out: frozenset[str] = frozenset()) -> list[Command]:
        """Built-ins, then the listed skills, then templates, then MCP prompts, each
        sorted by name."""
        builtins = sorted(
            (command for command in BUILTINS if command.name not in leave_out),
            key=lambda c: c.name,
        )
        skills = [
            Command(SKILL_PREFIX + name, skill.description, "skill")
            for name, skill in sorted(self.skills.items())
            if not skill.hidden
        ]
        templates = [
            Command(name, template.description, "template", template.argument_hint)
            for name, template in sorted(self.templates.items())
        ]
        return [*builtins, *skills, *templates, *self.mcp]

    def to_json(self) -> dict[str, Any]:
        """The ``crank/commands`` result."""
        return {"commands": [command.to_json() for command in self.commands()]}

    def unknown(self, name: str) -> CrankError:
        available = ", ".join("/" + command.name for command in self.commands())
        return UnknownCommand(
            f"unknown command /{name}; the commands are: {available}. To send a message "
            f"that starts with '/', begin it with '//' (//{name} sends /{name}).",
        )

    def queued(self, text: str, *, running: bool) -> tuple[str, str | None]:
        """What a steer or follow-up ``text`` sends and what it keeps as typed (None
        when it is plain text): a skill or template expanded as a prompt would be; a
        built-in refused, since it is performed rather than sent."""
        parsed = parse_command(text)
        if isinstance(parsed, str):
            return parsed, None
        if parsed.name in BUILTIN_NAMES:
            why = (
                f"/{parsed.name} cannot be queued as a steer or follow-up: a built-in "
                "command is performed, not sent to the model"
            )
            if running:
                raise RefusedWhileRunning(
                    f"{why}; send it with crank/prompt when the run has ended, or abort it first",
                )
            raise invalid_params("text", f"{why}; send it with crank/prompt")
        expansion = self.expand(parsed)
        return expansion.text, expansion.typed

    def expand(self, invocation: Invocation) -> Expansion:
        """The text of a skill or template command; ``unknown_command`` otherwise."""
        name = invocation.name
        if name.startswith(SKILL_PREFIX):
            skill = self.skills.get(name.removeprefix(SKILL_PREFIX))
            if skill is None:
                raise self.unknown(name)
            try:
                body = skill_body(skill)
            except (OSError, UnicodeDecodeError, ValueError) as exc:
                raise UnknownCommand(
                    f"/{name} cannot be used: its file {skill.path}: {exc}"
                ) from exc
            return Expansion(skill_text(skill, body, invocation.args), invocation.typed)
        template = self.templates.get(name)
        if template is None:
            raise self.unknown(name)
        return Expansion(expand_template(template.body, invocation.args), invocation.typed)


class Builtins(Protocol):
    """What a built-in command is performed on (the workspace host)."""

    async def compact(self, instructions: str | None) -> dict[str, Any]: ...

    def new_session(self) -> dict[str, Any]: ...

    async def models(self) -> dict[str, Any]: ...

    async def set_model(self, api: str, model_id: str) -> dict[str, Any]: ...

    def current_api(self) -> str: ...

    async def undo(self) -> dict[str, Any]: ...


async def perform(target: Builtins, invocation: Invocation) -> dict[str, Any]:
    """Perform a built-in as its method would, and return that method's answer."""
    name, args = invocation.name, invocation.args
    if name == "compact":
        return await target.compact(args or None)
    if name == "new":
        if args:
            raise invalid_params("text", "/new takes no arguments")
        return target.new_session()
    if name == "model":
        if not args:
            return await target.models()
        if len(args.split()) != 1:
            raise invalid_params("text", "/model takes one argument, api/id (or an id)")
        api, _, model_id = args.partition("/") if "/" in args else (target.current_api(), "", args)
        if not api or not model_id:
            raise invalid_params("text", f"/model {args}: give api/id, e.g. openai/gpt-4o")
        return await target.set_model(api, model_id)
    if name == "undo":
        if args:
            raise invalid_params("text", "/undo takes no arguments")
        return await target.undo()
    raise AssertionError(f"not a built-in: {name}")


def describe(command: str, result: dict[str, Any]) -> str:
    """One or a few lines saying what a built-in did, for frontends that show text
    (ACP, ``crank run``)."""
    if command == "compact":
        if result.get("compacted"):
            before, after = result.get("tokensBefore"), result.get("tokensAfter")
            sizes = f" ({before} -> {after} tokens)" if before is not None else ""
            return f"Compacted the conversation{sizes}."
        return f"Nothing was compacted: {result.get('reason', 'no reason given')}."
    if command == "new":
        return f"Started a new session, {result.get('sessionId')}."
    if command == "model":
        if "model" in result:
            model = result["model"]
            return f"The model is now {model['id']} ({model['api']})."
        lines = ["Models (switch with /model api/id):"]
        lines += [f"- {m['api']}/{m['id']}" for m in result.get("models", [])]
        return "\n".join(lines)
    if command == "undo":
        if not result.get("runId"):
            return (
                "Nothing to undo: no run of this session changed a file that is not taken back yet."
            )
        lines = [f"Took back run {result['runId']}: {len(result['reverted'])} file(s) restored."]
        lines += [f"- {path}" for path in result["reverted"]]
        if result["conflicts"]:
            lines.append("Not restored:")
            lines += [f"- {c['path']}: {c['reason']}" for c in result["conflicts"]]
        return "\n".join(lines)
    return f"/{command} done."
