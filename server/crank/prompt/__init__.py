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
    from .builder import (  # noqa: F401  (re-exported: crank.lazy)
        ContextFile,
        Skill,
        Source,
        SystemPrompt,
        build_system_prompt,
    )
    from .loader import (  # noqa: F401  (re-exported: crank.lazy)
        LoadedInputs,
        PromptBuild,
        PromptLocations,
        compute_prompt,
        load_inputs,
        skill_body,
    )
    from .templates import (  # noqa: F401  (re-exported: crank.lazy)
        PromptTemplate,
        expand_template,
    )
    from .watcher import PromptWatcher  # noqa: F401


__getattr__, __dir__, __all__ = exports(__name__, __file__)
