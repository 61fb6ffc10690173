"""The box the agent's commands run in: bubblewrap on Linux.

Modes (the names Codex uses): ``workspace-write`` (the default) runs a command with the
workspace writable, a private ``/tmp`` (a fresh tmpfs, thrown away afterwards) and the
rest of the filesystem read-only; ``read-only`` makes the workspace read-only too;
``off`` runs the command as the user, unconfined. In both confined modes:

- a fresh PID namespace with its own ``/proc``, so no ancestor (the server, the
  editor, the user's shell) and no other process of the user is visible, and none of
  their ``environ``, ``cmdline`` or memory can be read;
- the secret locations of ``protected_paths()`` (SSH, cloud and GPG credentials,
  ``.netrc``, the GitHub CLI's tokens, Crank's own config and data folders) are
  covered by empty ones, so they read as empty; so is ``/run``, where the sockets of
  the Docker daemon and the user's agents live (a read-only mount does not stop a
  ``connect()``);
- no capabilities (also when Crank runs as root), a fresh IPC namespace, and the
  command dies with the server (``--die-with-parent``); when the shell exits, the
  namespace ends and every process it left behind is killed;
- the network is off (a namespace with only loopback) unless ``network`` is true.

Reads outside the workspace are allowed (compilers need /usr, a project may need its
virtualenv), except the protected paths. ``probe()`` actually runs bwrap once per
process, because its presence says nothing about whether user namespaces are allowed.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

import platformdirs

from .limits import Limits

SandboxMode = Literal["read-only", "workspace-write", "off"]
SANDBOX_MODES: tuple[SandboxMode, ...] = get_args(SandboxMode)
DEFAULT_MODE: SandboxMode = "workspace-write"
PROBE_SECONDS = 10.0

_HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".docker",
    ".kube",
    ".password-store",
    ".config/gh",
    ".config/gcloud",
)
"""Credential stores under the home folder, hidden from confined commands and refused
to the file tools."""


@dataclass(frozen=True)
class SandboxSettings:
    """What the user chose: ``sandbox: {mode, network}`` in the settings."""

    mode: SandboxMode = DEFAULT_MODE
    network: bool = False
    env: tuple[str, ...] = ()
    """Names of the server's environment passed to commands beside the allow-list
    (``process.PASSED_NAMES``): ``sandbox.env``."""
    limits: Limits = field(default_factory=Limits)
    """Processes and memory per command (``sandbox.limits``; see ``limits``)."""


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can be confined on this machine; ``detail`` says why not."""

    available: bool
    detail: str

    def to_json(self, settings: SandboxSettings) -> dict[str, object]:
        """The ``sandbox`` object of ``crank/state``."""
        return {
            "mode": settings.mode,
            "network": settings.network,
            "available": self.available,
            "confined": self.available and settings.mode != "off",
            "detail": self.detail,
        }


def protected_paths(extra: Iterable[Path] = ()) -> tuple[Path, ...]:
    """Secret locations no tool may read: the home folder's credential stores,
    Crank's config folder (it may hold a provider key) and data folder (sessions,
    permission rules), plus ``extra`` (a configured session folder)."""
    home = Path.home()
    paths = [home / name for name in _HOME_SECRETS]
    paths.append(Path(platformdirs.user_config_dir("crank")))
    paths.append(Path(platformdirs.user_data_dir("crank", appauthor=False)))
    paths.extend(extra)
    return tuple(dict.fromkeys(path.resolve() for path in paths))


def is_protected(path: Path, protected: Sequence[Path]) -> bool:
    """True for a path inside a protected location or under ``/proc`` (another
    process's ``environ``, ``cmdline`` or memory)."""
    if path == Path("/proc") or path.is_relative_to("/proc"):
        return True
    return any(path == p or path.is_relative_to(p) for p in protected)


def _bwrap() -> str | None:
    return shutil.which("bwrap") if sys.platform.startswith("linux") else None


@functools.cache
def probe() -> SandboxStatus:
    """Try bubblewrap once (with the options commands get); cached for the process."""
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, f"no sandbox on {sys.platform} yet (Linux only)")
    bwrap = _bwrap()
    if bwrap is None:
        return SandboxStatus(False, "bubblewrap (bwrap) is not installed")
    argv = [*_base(bwrap, network=False), "--", "true"]
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_SECONDS, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return SandboxStatus(False, f"bubblewrap could not be started: {exc}")
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return SandboxStatus(False, f"bubblewrap does not work here: {why[0]}")
    return SandboxStatus(True, f"bubblewrap ({bwrap})")


def _base(bwrap: str, *, network: bool) -> list[str]:
    argv = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--unshare-pid",
        "--unshare-ipc",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]
    if not network:
        argv.append("--unshare-net")
    return argv


def _hide(path: Path) -> list[str]:
    if path.is_dir():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    if path.exists():
        return ["--ro-bind", "/dev/null", str(path)]
    return []


RESOLVER_PATHS = ("/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager")
"""Where /etc/resolv.conf may point into /run: shown again when the network is on."""


def _hide_run(root: Path, network: bool) -> list[str]:
    """/run (and a /var/run that is not a link to it) as an empty read-only folder.

    A read-only mount does not stop ``connect()`` on a Unix socket, and /run holds the
    sockets of the Docker daemon (root on the machine for whoever reaches it), the
    user's D-Bus, keyring, GPG and SSH agents (/run/user/UID), systemd, polkit.
    Nothing a command needs offline lives there; with the network on, the resolver's
    files are shown again so DNS works."""
    line: list[str] = []
    for run in (Path("/run"), Path("/var/run")):
        if run.is_symlink() or not run.is_dir() or root.is_relative_to(run.resolve()):
            continue
        line += ["--tmpfs", str(run)]
        if network:
            for path in RESOLVER_PATHS:
                if Path(path).is_relative_to(run):
                    line += ["--ro-bind-try", path, path]
        line += ["--remount-ro", str(run)]
    return line


def _top_under_tmp(root: Path) -> Path | None:
    """The real folder directly under /tmp that holds ``root``, if it is there: it is
    shown read-only over the private /tmp, so ``..`` from the workspace is the real,
    read-only parent and not a scratch copy that silently takes writes."""
    tmp = Path("/tmp").resolve()
    if root.is_relative_to(tmp) and root != tmp:
        return tmp / root.relative_to(tmp).parts[0]
    return None


def confine(
    argv: Sequence[str],
    root: Path,
    settings: SandboxSettings,
    *,
    protected: Sequence[Path],
    readable: Sequence[Path] = (),
) -> list[str]:
    """``argv`` wrapped in bubblewrap as ``settings`` say; ``readable`` are extra
    folders shown read-only (e.g. where the bash tool saves full outputs)."""
    bwrap = _bwrap()
    assert bwrap is not None, "confine() is only called when probe() said available"
    line = _base(bwrap, network=settings.network)
    line += _hide_run(root, settings.network)
    top = _top_under_tmp(root)
    if top is not None:
        line += ["--ro-bind", str(top), str(top)]
    for path in readable:
        if path.is_dir() and not path.is_symlink():
            line += ["--ro-bind", str(path), str(path)]
    for path in protected:
        line += _hide(path)
    line += ["--ro-bind" if settings.mode == "read-only" else "--bind", str(root), str(root)]
    for path in protected:  # a secret folder inside the workspace stays hidden too
        if path.is_relative_to(root) and path != root:
            line += _hide(path)
    line += ["--chdir", str(root), "--setenv", "TMPDIR", "/tmp", "--", *argv]
    return line


SYSTEM_FOLDERS = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc/ld.so.cache")
"""What a program of the system needs to start (its loader and libraries): shown read
only to ``reader_argv``'s programs, and nothing of the user's beside them."""


def reader_argv(argv: Sequence[str], folder: int, where: Path) -> list[str]:
    """``argv`` (a program that only reads, such as ripgrep) in a sandbox that shows it
    the open folder ``folder`` (mounted by its descriptor, read only, at ``where``, its
    working directory), its own executable and the system's libraries, and nothing
    else: no home folder, no credentials, no other process, no network. A link in the
    folder that points out of it (swapped in while the program runs) points at nothing
    there. ``folder`` must be passed to the child (``pass_fds``), and the child started
    in a session of its own (``start_new_session``): that keeps it from any terminal
    (what bubblewrap's ``--new-session`` is for) while every process of the sandbox
    stays in the caller's process group. With ``--new-session`` the namespace's first
    process left the group at once but bound itself to bubblewrap's life only after
    setting up the mounts, so a kill landing in between left it and ripgrep running."""
    bwrap = _bwrap()
    assert bwrap is not None, "reader_argv() is only called when probe() said available"
    line = [bwrap, "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"]
    for system in SYSTEM_FOLDERS:
        path = Path(system)
        if path.is_symlink():
            line += ["--symlink", os.readlink(path), system]
        elif path.exists():
            line += ["--ro-bind", system, system]
    program = os.path.realpath(argv[0])
    if not any(Path(program).is_relative_to(system) for system in SYSTEM_FOLDERS):
        line += ["--ro-bind", program, program]
    line += ["--dev", "/dev", "--proc", "/proc", "--ro-bind-fd", str(folder), str(where)]
    return [*line, "--chdir", str(where), "--", program, *argv[1:]]
