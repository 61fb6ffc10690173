"""The package imports on a platform without ``fcntl`` (Windows), so the server can at
least start there and say what it cannot do, instead of dying on an import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

IMPORT_EVERYTHING = """
import sys
sys.modules["fcntl"] = None  # as on Windows: `import fcntl` raises ImportError
import pkgutil, importlib, crank
failed = []
for module in pkgutil.walk_packages(crank.__path__, "crank."):
    if module.name.startswith("crank.cli.sample_project") or module.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(module.name)
    except ImportError as error:
        failed.append(f"{module.name}: {error}")
print("\\n".join(failed))
"""


def test_every_module_imports_without_fcntl() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        env={"PYTHONPATH": str(ROOT / "server"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", done.stdout
