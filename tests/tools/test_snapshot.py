"""The workspace snapshots a run's changes are computed from (crank.tools.snapshot):
what is read, what is only stat'ed, and what is listed as not restorable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crank.session.fileblobs import FileStore
from crank.tools.snapshot import Scanner, TooLarge, changes


def test_an_unchanged_file_is_not_read_again_and_a_change_is_found(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.py").write_text("one\n")
    (root / "b.py").write_text("two\n")
    store = FileStore(tmp_path / "blobs")
    scanner = Scanner(root, store)
    first = scanner.scan()
    assert len(store) == 2
    (root / "b.py").write_text("three\n")
    second = scanner.scan()
    assert first["a.py"] is second["a.py"]  # the same state object: not read again
    [change] = changes(first, second)
    assert (change.path, change.status) == ("b.py", "modified")
    assert store.get(change.before.sha256 or "") == b"two\n"  # type: ignore[union-attr]
    assert len(store) == 3


def test_a_touched_file_with_the_same_content_is_no_change(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.py").write_text("one\n")
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    first = scanner.scan()
    os.utime(root / "a.py", ns=(1, 1))
    assert changes(first, scanner.scan()) == []


def test_big_binary_ignored_files_and_folders_are_seen_but_not_kept(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "build").mkdir(parents=True)
    (root / "node_modules").mkdir()
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "big.txt").write_bytes(b"x" * 2000)
    (root / "image.bin").write_bytes(b"\0\1\2")
    (root / "run.log").write_text("noise\n")
    store = FileStore(tmp_path / "blobs")
    scanner = Scanner(root, store, limit=1000)
    snap = scanner.scan()
    assert ".git/" not in snap and not any(path.startswith(".git/") for path in snap)
    assert snap["build/"].folder and snap["node_modules/"].folder
    assert snap["big.txt"].why == "larger than 1000 bytes" and not snap["big.txt"].saved
    assert snap["image.bin"].why == "a binary file" and snap["image.bin"].sha256
    assert snap["run.log"].why == "ignored (.gitignore)"
    assert len(store) == 1  # only .gitignore was kept
    (root / "build" / "new.o").write_bytes(b"o")
    (root / "big.txt").write_bytes(b"y" * 2001)
    found = {c.path: c for c in changes(snap, scanner.scan())}
    assert found.keys() == {"build/", "big.txt"}
    assert found["build/"].status == "modified" and found["build/"].after.folder  # type: ignore[union-attr]


def test_a_pack_is_read_back_after_the_store_is_reopened(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "a.py").write_text("alpha\n")
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    sha = scanner.scan()["a.py"].sha256
    assert sha is not None
    assert FileStore(tmp_path / "blobs").get(sha) == b"alpha\n"
    assert FileStore(tmp_path / "blobs").get("0" * 64) == "the blob is missing"


def test_a_workspace_past_the_bound_is_refused_not_walked_for_minutes(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    for n in range(5):
        (root / f"f{n}.txt").write_text(str(n))
    scanner = Scanner(root, FileStore(tmp_path / "blobs"), max_entries=4)
    with pytest.raises(TooLarge):
        scanner.scan()
    assert set(Scanner(root, FileStore(tmp_path / "b2"), max_entries=5).scan()) == {
        f"f{n}.txt" for n in range(5)
    }
