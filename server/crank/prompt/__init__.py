"""crank.prompt: the system prompt, computed from what is really there, and its watcher.

- ``builder``: the pure function (tools, context files, skills, cwd, date) -> prompt.
- ``loader``: reads context files, skills and prompt templates from disk, honouring
  workspace trust.
- ``templates``: prompt templates (``/name args``) and their argument substitution.
- ``watcher``: rebuilds the prompt when one of its inputs changes on disk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from .builder import ContextFile, Skill, Source, SystemPrompt, build_system_prompt
    from .loader import (
        LoadedInputs,
        PromptBuild,
        PromptLocations,
        compute_prompt,
        load_inputs,
        skill_body,
    )
    from .templates import PromptTemplate, expand_template
    from .watcher import PromptWatcher

__all__ = [
    "ContextFile",
    "LoadedInputs",
    "PromptBuild",
    "PromptLocations",
    "PromptTemplate",
    "PromptWatcher",
    "Skill",
    "Source",
    "SystemPrompt",
    "build_system_prompt",
    "compute_prompt",
    "expand_template",
    "load_inputs",
    "skill_body",
]

__getattr__, __dir__ = exports(
    __name__,
    {
        ".builder": ["ContextFile", "Skill", "Source", "SystemPrompt", "build_system_prompt"],
        ".loader": [
            "LoadedInputs",
            "PromptBuild",
            "PromptLocations",
            "compute_prompt",
            "load_inputs",
            "skill_body",
        ],
        ".templates": ["PromptTemplate", "expand_template"],
        ".watcher": ["PromptWatcher"],
    },
)
