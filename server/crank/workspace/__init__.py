"""crank.workspace: one WorkspaceHost per workspace folder.

The host owns everything with a lifetime: the harness, the active session, the system
prompt and its watcher, the provider, the permission rules. It talks to the editor
only through ``EditorClient`` (implemented by crank.lsp). See docs/protocol.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crank.lazy import exports

if TYPE_CHECKING:
    from .client import EditorClient
    from .errors import CrankError, invalid_params
    from .frontend import Workspace
    from .host import WHILE_RUNNING, WhileRunning, WorkspaceHost
    from .permissions import PERMISSION_MODES, PermissionMode, Permissions, command_prefix
    from .prompts import context_text, fix_file_text
    from .settings import Settings, merge_layers, merge_settings
    from .stream import EventStream

__all__ = [
    "PERMISSION_MODES",
    "WHILE_RUNNING",
    "CrankError",
    "EditorClient",
    "EventStream",
    "PermissionMode",
    "Permissions",
    "Settings",
    "WhileRunning",
    "Workspace",
    "WorkspaceHost",
    "command_prefix",
    "context_text",
    "fix_file_text",
    "invalid_params",
    "merge_layers",
    "merge_settings",
]

__getattr__, __dir__ = exports(
    __name__,
    {
        ".client": ["EditorClient"],
        ".errors": ["CrankError", "invalid_params"],
        ".frontend": ["Workspace"],
        ".host": ["WHILE_RUNNING", "WhileRunning", "WorkspaceHost"],
        ".permissions": ["PERMISSION_MODES", "PermissionMode", "Permissions", "command_prefix"],
        ".prompts": ["context_text", "fix_file_text"],
        ".settings": ["Settings", "merge_layers", "merge_settings"],
        ".stream": ["EventStream"],
    },
)
