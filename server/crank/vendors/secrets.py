"""Provider keys live in this process's memory, never in its environment.

A command the agent runs can read ``/proc/<ancestor>/environ``: the environment block a
process was *exec'd* with. Deleting a variable from ``os.environ`` does not change that
block, so a key Crank was started with stays readable there for as long as it runs.
So the process entry points (``crank ...``, ``python -m crank.lsp``) call ``handover()``
first: when a provider key is in the environment, it writes the keys into a pipe and
re-executes the same command line with an environment that holds no key and names the
pipe's read end (``CRANK_KEYS_FD``); the new image reads the keys from the pipe
(``receive()``), closes it, and keeps them here. Nothing the agent starts inherits the
pipe (it is closed before any tool runs) or a key (the environment has none).

``provider_env()`` is what the vendors resolve the provider from: the process
environment plus the held keys. Keys an editor sends in ``initializationOptions`` never
touch the environment at all.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
from collections.abc import Mapping, Sequence

log = logging.getLogger(__name__)

KEY_VARIABLES = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
"""The environment variables that hold provider keys (protocol.md "Lifecycle")."""
FD_VARIABLE = "CRANK_KEYS_FD"
_PIPE_LIMIT = 60_000
"""Below a pipe's buffer (64 KiB), so writing before the exec cannot block."""

_held: dict[str, str] = {}


def provider_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: the process environment) with the keys this process holds."""
    merged = dict(os.environ if env is None else env)
    merged.update(_held)
    return merged


def held_keys() -> tuple[str, ...]:
    """The names of the keys held in memory (for tests and diagnostics; no values)."""
    return tuple(sorted(_held))


def _adopt(keys: Mapping[str, str]) -> None:
    _held.update({name: value for name, value in keys.items() if value})
    for name in KEY_VARIABLES:
        os.environ.pop(name, None)


def receive() -> None:
    """Take the keys a previous image of this process handed over, if any."""
    raw = os.environ.pop(FD_VARIABLE, None)
    if raw is None:
        return
    try:
        fd = int(raw)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            raise ValueError(f"descriptor {fd} is not a pipe")
    except (ValueError, OSError) as exc:
        log.warning("ignoring %s=%r: %s", FD_VARIABLE, raw, exc)
        return
    chunks: list[bytes] = []
    try:
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    try:
        keys = json.loads(b"".join(chunks))
    except ValueError as exc:
        log.warning("the keys handed over were not readable: %s", exc)
        return
    if isinstance(keys, dict):
        _adopt({k: v for k, v in keys.items() if k in KEY_VARIABLES and isinstance(v, str)})


def forbid_inspection() -> None:
    """Mark this process non-dumpable (Linux ``PR_SET_DUMPABLE`` 0): its ``/proc``
    files (``mem``, ``environ``, ``maps``) then belong to root and it cannot be traced,
    so another process of the same user (a command the agent runs with the sandbox
    off) cannot read the keys out of its memory. Root is not stopped by this; the
    sandbox's own PID namespace is what hides the server from root's commands."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_dumpable = 4
        libc.prctl(pr_set_dumpable, 0, 0, 0, 0)
    except (OSError, AttributeError) as exc:
        log.warning("could not mark the process non-dumpable: %s", exc)


def handover(argv: Sequence[str] | None = None) -> None:
    """Receive keys handed over, then, if the environment still holds a provider key,
    re-execute without it (does not return in that case).

    ``argv`` is the interpreter command line to run again (default
    ``sys.orig_argv`` with ``sys.executable`` first). Where re-executing is not the
    POSIX exec (Windows), the keys are moved into memory in place.
    """
    receive()
    forbid_inspection()
    present = [name for name in KEY_VARIABLES if name in os.environ]
    if not present:
        return
    keys = {name: os.environ[name] for name in present}
    payload = json.dumps(keys).encode("utf-8")
    if os.name != "posix" or len(payload) > _PIPE_LIMIT:
        _adopt(keys)
        return
    command = list(argv) if argv is not None else [sys.executable, *sys.orig_argv[1:]]
    env = {name: value for name, value in os.environ.items() if name not in KEY_VARIABLES}
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, payload)
    finally:
        os.close(write_end)
    os.set_inheritable(read_end, True)
    env[FD_VARIABLE] = str(read_end)
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(command[0], command, env)
    except OSError as exc:  # the interpreter cannot be run again: keep the keys here
        os.close(read_end)
        log.warning("could not re-execute without the keys in the environment: %s", exc)
        _adopt(keys)
