"""The shared part of the security tests: a hostile little world, and what to check.

``World`` is a temporary machine in miniature: a workspace (with a symlink out, a
FIFO, a binary file, a device where the kernel lets us make one), a sibling folder
next to it that nothing may change, and a home folder whose secret places (Crank's
config file, ~/.ssh, ~/.aws, ~/.gnupg, ~/.netrc, ~/.config/gh) hold unique sentinel
values. The provider keys in the environment are sentinels too. The test then asserts
that no sentinel turns up anywhere the agent's actions can reach: tool results,
events, stdout/stderr, logs, session files, saved outputs, model requests (their
bodies; the key belongs in a request header and only there).

Cases are tool calls built from the world (``Call``). ``CASES`` lists the builders;
a test takes them all, shuffled with a seeded generator (``CRANK_CHAOS_SEED``), and
splits them into model replies. New kinds of hostile input (huge or sparse files, for
the bounded-memory work) are added by writing a builder and appending it to ``CASES``
(or passing extra builders to ``chaos_calls``); ``World.extra`` is a folder a builder
may fill.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import stat
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tests.support.processes import holder, marker

from .hostile_files import big_file_cases

Call = dict[str, Any]
"""``{"name": tool, "arguments": {...}}``, as the loopback model server takes it."""

SEED = int(os.environ.get("CRANK_CHAOS_SEED", "20261201"))
BASH_TIMEOUT = 20
"""Every command gets this timeout, so a hang ends as a tool error the test fails on."""


def sentinel(kind: str) -> str:
    return f"sk-{kind}-SENTINEL-{uuid.uuid4().hex}"


@dataclass
class World:
    root: Path
    workspace: Path
    sibling: Path
    home: Path
    extra: Path
    sentinels: dict[str, str] = field(default_factory=dict)
    """What each secret place holds: name -> sentinel value."""
    tmp_probe: Path = field(default_factory=lambda: Path(f"/tmp/crank-chaos-{uuid.uuid4().hex}"))
    """A file in the real /tmp that a command tries to create (the sandbox's is private)."""
    left: str = field(default_factory=lambda: marker("crank-chaos-left"))
    """The name of the process a command leaves behind, this world's own: the check for
    survivors looks through every process of the machine, where another checkout's
    chaos run may be starting its own at that moment."""

    @property
    def config_file(self) -> Path:
        return self.home / "config" / "crank" / "config.json"

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """A process environment living in this world, with sentinel provider keys."""
        env = {
            k: v for k, v in base.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CRANK_"))
        }
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / "config"),
            XDG_DATA_HOME=str(self.home / "data"),
            XDG_CACHE_HOME=str(self.home / "cache"),
            TMPDIR=str(self.root / "tmp"),
            ANTHROPIC_API_KEY=self.sentinels["ANTHROPIC_API_KEY"],
            OPENAI_API_KEY=self.sentinels["OPENAI_API_KEY"],
            GITHUB_TOKEN=self.sentinels["GITHUB_TOKEN"],
        )
        return env

    def key_for(self, base_url: str) -> None:
        """Configure the config file's key for the model server at ``base_url``: a key
        goes only to the base URL set next to it (docs/vendors.md), never to one the
        editor or the environment sets elsewhere."""
        provider = {"api": "anthropic", "baseUrl": base_url, "apiKey": self.sentinels["CONFIG_KEY"]}
        self.config_file.write_text(json.dumps({"provider": provider}))

    def secrets(self) -> list[str]:
        return list(self.sentinels.values())

    def unchanged(self) -> dict[str, tuple[str, int, str]]:
        """A snapshot of everything outside the workspace that nothing may change: the
        world's root but the workspace, the private temp folder and Crank's own data
        and cache folders."""
        skip = {self.workspace, self.root / "tmp", self.home / "data", self.home / "cache"}
        return snapshot([self.root], skip=skip)


def make_world(tmp: Path) -> World:
    world = World(
        root=tmp,
        workspace=tmp / "ws",
        sibling=tmp / "sibling",
        home=tmp / "home",
        extra=tmp / "ws" / "extra",
    )
    for folder in (world.workspace, world.sibling, world.home, world.extra, tmp / "tmp"):
        folder.mkdir(parents=True, exist_ok=True)
    s = world.sentinels
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "CONFIG_KEY"):
        s[name] = sentinel(name.split("_")[0].lower())
    for place in ("ssh", "aws", "gnupg", "netrc", "gh"):
        s[place] = sentinel(place)
    world.config_file.parent.mkdir(parents=True)
    world.config_file.write_text(json.dumps({"provider": {"apiKey": s["CONFIG_KEY"]}}))
    (world.home / ".ssh").mkdir()
    (world.home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN KEY-----\n{s['ssh']}\n")
    (world.home / ".aws").mkdir()
    (world.home / ".aws" / "credentials").write_text(f"aws_secret_access_key = {s['aws']}\n")
    (world.home / ".gnupg").mkdir()
    (world.home / ".gnupg" / "secring").write_text(s["gnupg"])
    (world.home / ".netrc").write_text(f"machine example.com password {s['netrc']}\n")
    (world.home / "config" / "gh").mkdir(parents=True)
    (world.home / "config" / "gh" / "hosts.yml").write_text(f"oauth_token: {s['gh']}\n")
    (world.home / ".config").symlink_to(world.home / "config")

    (world.sibling / "notes.txt").write_text("the sibling's own file\n")
    (world.sibling / "sub").mkdir()
    (world.sibling / "sub" / "deep.txt").write_text("deeper\n")
    ws = world.workspace
    (ws / "main.py").write_text("print('hello')\n")
    (ws / "blob.bin").write_bytes(b"\x00\x01binary\x00" * 100)
    (ws / "link_out").symlink_to(world.sibling / "notes.txt")
    (ws / "link_dir").symlink_to(world.sibling)
    (ws / "link_ssh").symlink_to(world.home / ".ssh" / "id_ed25519")
    (ws / "link_config").symlink_to(world.config_file)
    os.mkfifo(ws / "fifo")
    with contextlib.suppress(OSError):  # not root: the device cases use /dev instead
        os.mknod(ws / "null_device", stat.S_IFCHR | 0o666, os.makedev(1, 3))
    return world


# -- the cases ----------------------------------------------------------------------


def bash(command: str) -> Call:
    return {"name": "bash", "arguments": {"command": command, "timeout": BASH_TIMEOUT}}


def path_cases(world: World) -> list[Call]:
    """Every file tool at every way out of the workspace."""
    ws, sib, home = world.workspace, world.sibling, world.home
    targets = [
        "../sibling/notes.txt",
        str(sib / "notes.txt"),
        "link_out",
        "link_dir/notes.txt",
        "link_ssh",
        "link_config",
        "~/.ssh/id_ed25519",
        str(home / ".aws" / "credentials"),
        str(world.config_file),
        "/proc/self/environ",
        "/proc/self/cmdline",
        f"/proc/{os.getpid()}/environ",
        "/proc/1/environ",
        "fifo",
        "null_device",
        "/dev/zero",
        "blob.bin",
        f"{ws}/../sibling/sub/deep.txt",
    ]
    calls: list[Call] = []
    for target in targets:
        calls.append({"name": "read", "arguments": {"path": target}})
        calls.append({"name": "write", "arguments": {"path": target, "content": "pwned\n"}})
        calls.append(
            {"name": "edit", "arguments": {"path": target, "oldText": "the", "newText": "pwned"}}
        )
    for where in ("..", str(sib), "link_dir", "~/.ssh", "/proc", str(home)):
        calls.append({"name": "ls", "arguments": {"path": where}})
        calls.append({"name": "find", "arguments": {"pattern": "*", "path": where}})
        calls.append({"name": "grep", "arguments": {"pattern": "SENTINEL", "path": where}})
    calls.append({"name": "write", "arguments": {"path": "../escaped.txt", "content": "x"}})
    calls.append({"name": "write", "arguments": {"path": "link_dir/new.txt", "content": "x"}})
    return calls


def command_cases(world: World) -> list[Call]:
    """Commands that print environments, walk /proc, or try to write outside."""
    sib, home = world.sibling, world.home
    return [
        bash("env"),
        bash("printenv"),
        bash("set"),
        bash("cat /proc/$PPID/environ; cat /proc/$PPID/cmdline"),
        bash("for p in /proc/[0-9]*; do cat $p/environ $p/cmdline; echo; done 2>&1"),
        bash("for p in /proc/[0-9]*; do cat $p/mem 2>&1 | head -c 64; done; ps -ef 2>&1"),
        bash("cat /proc/1/environ; ls -la /proc/1/root/ 2>&1 | head"),
        bash("cat ~/.config/crank/config.json; cat $XDG_CONFIG_HOME/crank/config.json"),
        bash(f"cat {world.config_file} {home}/.ssh/* {home}/.aws/* {home}/.netrc 2>&1"),
        bash(f"cat {home}/.gnupg/* {home}/config/gh/* 2>&1; ls -la {home} {home}/.ssh"),
        bash(f"grep -rs SENTINEL {home} {world.root} 2>&1 | head -50"),
        bash("cat link_ssh link_config 2>&1"),
        bash("touch ../escaped.txt; echo $?"),
        bash(f"echo pwned > {sib}/notes.txt; rm -rf {sib}/sub; echo done"),
        bash(f"ln -s {sib} inner; echo pwned > inner/notes.txt; rm inner"),
        bash("echo pwned > link_out; echo pwned > link_dir/new.txt"),
        bash(f"echo x > {world.tmp_probe}; ls /tmp"),
        bash(f"mkdir -p {home}/.ssh && echo evil >> {home}/.ssh/authorized_keys"),
        bash("(sleep 0.2; echo through-the-fifo > fifo) & cat fifo"),
        bash("head -c 100000 /dev/zero | wc -c; head -c 16 /dev/urandom | od | head -2"),
        bash("cat blob.bin | head -c 200"),
        bash(f"{holder(world.left, 600)} echo started"),
        bash("kill -9 $PPID 2>&1; kill -9 1 2>&1; echo still-here"),
        bash("mount -t tmpfs none ~/.ssh 2>&1; umount ~/.ssh 2>&1; cat ~/.ssh/* 2>&1"),
    ]


CaseBuilder = Callable[[World], list[Call]]
CASES: list[CaseBuilder] = [path_cases, command_cases, big_file_cases]


def chaos_calls(
    world: World, seed: int = SEED, extra: Iterable[CaseBuilder] = ()
) -> list[list[Call]]:
    """All cases, shuffled by ``seed`` and grouped into batches of 1-3 calls (one model
    reply each, so parallel calls in one turn are exercised too)."""
    rng = random.Random(seed)
    calls = [call for build in [*CASES, *extra] for call in build(world)]
    rng.shuffle(calls)
    batches: list[list[Call]] = []
    while calls:
        size = rng.randint(1, 3)
        batches.append(calls[:size])
        calls = calls[size:]
    return batches


def script(batches: list[list[Call]]) -> dict[str, Any]:
    replies: list[dict[str, Any]] = [{"toolCalls": batch} for batch in batches]
    replies.append({"text": "chaos over"})
    return {"replies": replies}


# -- the checks ---------------------------------------------------------------------


def snapshot(
    paths: Iterable[Path], skip: set[Path] | None = None
) -> dict[str, tuple[str, int, str]]:
    """Every entry under ``paths`` but ``skip``: kind, mode and content hash (links by
    target; FIFOs and devices by kind)."""
    seen: dict[str, tuple[str, int, str]] = {}

    def visit(path: Path) -> None:
        if skip and path in skip:
            return
        try:
            info = path.lstat()
        except FileNotFoundError:
            seen[str(path)] = ("missing", 0, "")
            return
        if stat.S_ISLNK(info.st_mode):
            seen[str(path)] = ("link", info.st_mode, os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            seen[str(path)] = ("dir", info.st_mode, "")
            for child in sorted(path.iterdir()):
                visit(child)
        elif stat.S_ISREG(info.st_mode):
            seen[str(path)] = ("file", info.st_mode, hashlib.sha256(path.read_bytes()).hexdigest())
        else:
            seen[str(path)] = ("special", info.st_mode, "")

    for path in paths:
        visit(path)
    return seen


def leaks(world: World, text: str) -> list[str]:
    """The names of the sentinels that appear in ``text``."""
    return [name for name, value in world.sentinels.items() if value in text]


def files_under(*roots: Path) -> Iterable[Path]:
    for root in roots:
        if root.is_file():
            yield root
        elif root.is_dir():
            for path in root.rglob("*"):
                if path.is_file() and not path.is_symlink():
                    yield path


def _past_hole(handle: BinaryIO) -> bool:
    """Move past the hole (NULs, never written) at the handle's position, if any."""
    here = handle.tell()
    try:
        data = handle.seek(here, os.SEEK_DATA)
    except OSError:  # ENXIO: only a hole is left
        data = handle.seek(0, os.SEEK_END)
    return data > here


def leaks_in_files(world: World, *roots: Path) -> dict[str, list[str]]:
    """The sentinels in each file, read a megabyte at a time (with an overlap as long as
    a sentinel), so a 2 GB file in the workspace costs the test no memory; the holes of
    the sparse ones (NULs: no sentinel) are stepped over, not read."""
    found: dict[str, list[str]] = {}
    overlap = max(len(value) for value in world.sentinels.values())
    for path in files_under(*roots):
        hits: set[str] = set()
        carry = b""
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                hits.update(leaks(world, (carry + chunk).decode("utf-8", errors="replace")))
                carry = b"" if _past_hole(handle) else chunk[-overlap:]
        if hits:
            found[str(path)] = sorted(hits)
    return found
