"""A machine without a working sandbox, for the tests of what happens then.

``no_sandbox_path(folder)`` returns a PATH whose first entry holds a ``bwrap`` that
fails the way bubblewrap does where user namespaces are not allowed; Crank's probe
really runs it and reports the sandbox unavailable. Everything else on PATH stays.
"""

from __future__ import annotations

import os
from pathlib import Path

REFUSAL = "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces."


def no_sandbox_path(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    fake = folder / "bwrap"
    fake.write_text(f"#!/bin/sh\necho '{REFUSAL}' >&2\nexit 1\n")
    fake.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
