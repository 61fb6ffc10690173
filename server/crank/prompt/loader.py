"""The loader: reads from disk everything the builder needs, and nothing else.

What feeds the prompt (``PromptLocations`` names every place):

- context files: the user's own (``AGENTS.md``, else ``CLAUDE.md``, in the user config
  directory), then, from the workspace root down to the working directory, each
  directory's ``AGENTS.md`` (or its ``CLAUDE.md`` when it has no ``AGENTS.md``); broad
  to specific, each resolved path once, so a symlink cannot bring a file in twice;
- skills: ``<dir>/<folder>/SKILL.md`` with YAML front matter (``name``,
  ``description``, optional ``hidden: true``) in the user skills directory, then the project's ``.crank/skills``
  and ``.agents/skills``; folders in name order; a later skill overrides an earlier one
  of the same name (in the earlier one's place in the index);
- prompt templates (``templates.py``): ``<user dir>/prompts/*.md`` then the project's
  ``.crank/prompts/*.md``, the project's winning a clash.

Trust: project-local files are whoever wrote the repository talking to the model, so
for an untrusted workspace they are not read at all; each is listed as a skipped
source with the reason. The user's own files load either way.

Nothing here raises for a bad file: a broken skill, an unreadable or non-UTF-8 file is
left out, listed as skipped with the reason, and described in ``problems`` (one
sentence each, for a log message to the client). Loading is synchronous and cheap (a
few stats and small reads); ``compute_prompt`` runs it in a worker thread.
"""

from __future__ import annotations

import datetime
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

import anyio.to_thread
import platformdirs

from crank.agent.tools import Tool

from .builder import ContextFile, Skill, Source, SystemPrompt, build_system_prompt, one_line
from .frontmatter import split_front_matter
from .templates import TEMPLATE_SUFFIX, PromptTemplate, parse_template

CONTEXT_NAMES = ("AGENTS.md", "CLAUDE.md")
"""Per directory, the first of these that exists is the directory's context file."""
SKILL_FILE = "SKILL.md"
PROJECT_SKILL_DIRS = (Path(".crank") / "skills", Path(".agents") / "skills")
PROJECT_PROMPTS = Path(".crank") / "prompts"
UNTRUSTED = "the workspace is not trusted, so project-local files are not loaded"
LINKS_OUT = "it is a link to a file outside the workspace, which is not loaded"
"""A repository's AGENTS.md may be a symlink to ~/.config/crank/config.json (a key)
or ~/.ssh/id_rsa: a project-local file is read only where it really lies inside."""


def default_user_dir() -> Path:
    return Path(platformdirs.user_config_dir("crank"))


@dataclass(frozen=True)
class PromptLocations:
    """Where the prompt's inputs live for one workspace.

    ``cwd`` should be inside ``workspace_root``; if it is not, only the root's context
    file is read (nothing outside the workspace is walked). Paths are made absolute and
    normalised (``..`` folded) so they compare equal to the paths the watcher reports.
    """

    workspace_root: Path
    cwd: Path
    trusted: bool
    user_dir: Path = field(default_factory=default_user_dir)

    def __post_init__(self) -> None:
        for name in ("workspace_root", "cwd", "user_dir"):
            object.__setattr__(self, name, Path(os.path.abspath(getattr(self, name))))

    def path_dirs(self) -> list[Path]:
        """The workspace root, then each directory down to ``cwd``."""
        root = self.workspace_root
        try:
            relative = self.cwd.relative_to(root)
        except ValueError:
            return [root]
        dirs = [root]
        for part in relative.parts:
            if part in ("", "."):
                continue
            if part == "..":
                return [root]
            dirs.append(dirs[-1] / part)
        return dirs

    def user_skills_dir(self) -> Path:
        return self.user_dir / "skills"

    def project_skills_dirs(self) -> list[Path]:
        return [self.workspace_root / sub for sub in PROJECT_SKILL_DIRS]

    def prompts_dirs(self) -> list[tuple[Path, bool]]:
        """Every prompt-template directory in override order, with whether it is
        project-local (a project template overrides the user's of the same name)."""
        return [(self.user_dir / "prompts", False), (self.workspace_root / PROJECT_PROMPTS, True)]

    def skills_dirs(self) -> list[tuple[Path, bool]]:
        """Every skills directory in override order, with whether it is project-local."""
        return [(self.user_skills_dir(), False)] + [
            (path, True) for path in self.project_skills_dirs()
        ]


@dataclass(frozen=True)
class LoadedInputs:
    context_files: tuple[ContextFile, ...]
    skills: tuple[Skill, ...]
    """Every skill loaded, hidden ones included (the builder leaves those out)."""
    skipped: tuple[Source, ...]
    problems: tuple[str, ...]
    templates: tuple[PromptTemplate, ...] = ()


@dataclass(frozen=True)
class PromptBuild:
    """A built prompt, what was loaded for it that the user can invoke by hand (every
    skill, hidden ones too, and the prompt templates), and the problems met."""

    prompt: SystemPrompt
    problems: tuple[str, ...]
    skills: tuple[Skill, ...] = ()
    templates: tuple[PromptTemplate, ...] = ()


class _Collector:
    def __init__(self) -> None:
        self.skipped: list[Source] = []
        self.problems: list[str] = []

    def skip(self, path: Path, reason: str, problem: str | None = None) -> None:
        self.skipped.append({"kind": "skipped", "path": str(path), "reason": reason})
        if problem is not None:
            self.problems.append(problem)


MAX_FILE_BYTES = 256 * 1024
"""A context file, skill or prompt template bigger than this is left out (with the reason): it would
crowd out the conversation in every request, and a 2 GB AGENTS.md must not be read into
memory to find that out."""


def _read_bytes(path: Path) -> bytes | str:
    """The file's bytes, or the reason it is not used. Only a regular file is read (a
    FIFO put where AGENTS.md was listed would block the worker thread for ever; the
    non-blocking open returns at once so the check is made on what was opened), and
    never more than MAX_FILE_BYTES + 1 bytes of it, even if it grows meanwhile."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES or info.st_size > MAX_FILE_BYTES:
        size = max(len(data), info.st_size)
        return f"{size:,} bytes, over the {MAX_FILE_BYTES // 1024} KiB limit for one file"
    return data


def _read_text(path: Path, what: str, out: _Collector) -> str | None:
    """The file's text, or None (with the reason recorded) if it cannot be used."""
    try:
        data = _read_bytes(path)
    except FileNotFoundError:
        return None  # removed between listing and reading: it is simply not there
    except OSError as exc:
        reason = f"unreadable: {exc.strerror or type(exc).__name__}"
        out.skip(path, reason, f"{what} {path} left out: {reason}")
        return None
    if isinstance(data, str):
        out.skip(path, data, f"{what} {path} left out: {data}")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text (byte {exc.start})"
        out.skip(path, reason, f"{what} {path} left out: {reason}")
        return None


def _context_file_in(directory: Path) -> Path | None:
    for name in CONTEXT_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _identity(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path


def _inside(resolved: Path, root: Path) -> bool:
    return resolved.is_relative_to(_identity(root))


def load_context_files(locations: PromptLocations, out: _Collector) -> list[ContextFile]:
    found: list[tuple[Path, bool]] = []
    user_file = _context_file_in(locations.user_dir)
    if user_file is not None:
        found.append((user_file, False))
    for directory in locations.path_dirs():
        project_file = _context_file_in(directory)
        if project_file is not None:
            found.append((project_file, True))
    files: list[ContextFile] = []
    seen: set[Path] = set()
    for path, project_local in found:
        identity = _identity(path)
        if identity in seen:
            continue
        seen.add(identity)
        if project_local and not locations.trusted:
            out.skip(path, UNTRUSTED)
            continue
        if project_local and not _inside(identity, locations.workspace_root):
            out.skip(path, LINKS_OUT)
            continue
        text = _read_text(path, "context file", out)
        if text is not None:
            files.append(ContextFile(path=str(path), text=text))
    return files


def parse_skill(path: Path, text: str) -> Skill | str:
    """The skill its front matter describes, or a sentence saying what is wrong."""
    split = split_front_matter(text)
    if isinstance(split, str):
        return split
    data = split[0]
    if not isinstance(data, dict):
        return "front matter must be a mapping with 'name' and 'description'"
    fields: dict[str, str] = {}
    for key in ("name", "description"):
        value = data.get(key)
        if not isinstance(value, str) or not one_line(value):
            return f"front matter has no '{key}' (a non-empty string is required)"
        fields[key] = one_line(value)
    hidden = data.get("hidden", False)
    if not isinstance(hidden, bool):
        return "front matter 'hidden' must be true or false"
    return Skill(
        name=fields["name"], description=fields["description"], path=str(path), hidden=hidden
    )


def skill_body(skill: Skill) -> str:
    """The skill's instructions as they are on disk now: its file after the front
    matter. Raises ``OSError`` (or ``UnicodeDecodeError``) when it cannot be read, and
    ``ValueError`` when its front matter is broken now."""
    data = _read_bytes(Path(skill.path))  # a regular file, within the size limit
    if isinstance(data, str):
        raise ValueError(data)
    split = split_front_matter(data.decode("utf-8"))
    if isinstance(split, str):
        raise ValueError(split)
    return split[1].strip("\n")


def _skill_files(directory: Path) -> list[Path]:
    try:
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [entry / SKILL_FILE for entry in entries if (entry / SKILL_FILE).is_file()]


class _Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def path(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def _load_named(
    dirs: list[tuple[Path, bool]],
    files: Callable[[Path], list[Path]],
    what: str,
    parse: Callable[[Path, str], _N | str],
    locations: PromptLocations,
    out: _Collector,
) -> dict[str, _N]:
    """Skills or templates from ``dirs`` in override order: project-local files only
    in a trusted workspace and only where they really lie inside it; a broken file is
    left out with the reason; a later one replaces an earlier one of the same name."""
    by_name: dict[str, _N] = {}
    for directory, project_local in dirs:
        for path in files(directory):
            if project_local and not locations.trusted:
                out.skip(path, UNTRUSTED)
                continue
            if project_local and not _inside(_identity(path), locations.workspace_root):
                out.skip(path, LINKS_OUT)
                continue
            text = _read_text(path, what, out)
            if text is None:
                continue
            parsed = parse(path, text)
            if isinstance(parsed, str):
                out.skip(path, f"broken {what}: {parsed}", f"{what} {path} left out: {parsed}")
                continue
            earlier = by_name.get(parsed.name)
            if earlier is not None:
                out.skip(Path(earlier.path), f"{what} '{parsed.name}' is overridden by {path}")
            by_name[parsed.name] = parsed
    return by_name


def load_skills(locations: PromptLocations, out: _Collector) -> list[Skill]:
    found = _load_named(locations.skills_dirs(), _skill_files, "skill", parse_skill, locations, out)
    return list(found.values())


def _template_files(directory: Path) -> list[Path]:
    try:
        entries = sorted(directory.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [entry for entry in entries if entry.suffix == TEMPLATE_SUFFIX and entry.is_file()]


def load_templates(locations: PromptLocations, out: _Collector) -> list[PromptTemplate]:
    """Prompt templates, user's then project's (trust-gated exactly like skills); a
    project template replaces the user's of the same name. Sorted by name."""
    found = _load_named(
        locations.prompts_dirs(), _template_files, "prompt template", parse_template, locations, out
    )
    return [found[name] for name in sorted(found)]


def load_inputs(locations: PromptLocations) -> LoadedInputs:
    """Read every input of the prompt for these locations (blocking; never raises for
    a bad file)."""
    out = _Collector()
    context_files = load_context_files(locations, out)
    skills = load_skills(locations, out)
    templates = load_templates(locations, out)
    return LoadedInputs(
        context_files=tuple(context_files),
        skills=tuple(skills),
        skipped=tuple(out.skipped),
        problems=tuple(out.problems),
        templates=tuple(templates),
    )


async def compute_prompt(
    tools: Sequence[Tool], locations: PromptLocations, today: datetime.date
) -> PromptBuild:
    """Load the inputs in a worker thread and build the prompt for ``locations.cwd``."""
    inputs = await anyio.to_thread.run_sync(load_inputs, locations)
    prompt = build_system_prompt(
        tools,
        inputs.context_files,
        inputs.skills,
        str(locations.cwd),
        today,
        skipped=inputs.skipped,
    )
    return PromptBuild(
        prompt=prompt, problems=inputs.problems, skills=inputs.skills, templates=inputs.templates
    )
