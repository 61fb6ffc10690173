"""crank.workspace: one WorkspaceHost per workspace folder.

The host owns everything with a lifetime: the harness, the active session, the system
prompt and its watcher, the provider, the permission rules. It talks to the editor
only through ``EditorClient`` (implemented by crank.lsp). See docs/protocol.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from .client import EditorClient  # noqa: F401
    from .errors import (  # noqa: F401  (re-exported: crank.lazy)
        CrankError,
        invalid_params,
    )
    from .frontend import Workspace  # noqa: F401
    from .host import (  # noqa: F401  (re-exported: crank.lazy)
        WHILE_RUNNING,
        WhileRunning,
        WorkspaceHost,
    )
    from .permissions import (  # noqa: F401  (re-exported: crank.lazy)
        PERMISSION_MODES,
        PermissionMode,
        Permissions,
        command_prefix,
    )
    from .prompts import (  # noqa: F401  (re-exported: crank.lazy)
        ContextRef,
        context_text,
        fix_file_text,
    )
    from .settings import (  # noqa: F401  (re-exported: crank.lazy)
        Settings,
        merge_layers,
        merge_settings,
    )
    from .stream import EventStream  # noqa: F401


__getattr__, __dir__, __all__ = exports(__name__, __file__)
