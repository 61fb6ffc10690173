"""The change feed behind the snapshots (crank.tools.feed, crank.tools.snapshot): with
it, a command's changes are what a full scan finds, at the cost of what changed.

The file operations are made by a separate process (as a command's are), and every
answer of the feed is compared with a scanner that walks the whole workspace."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from crank.session.fileblobs import FileStore
from crank.tools import feed
from crank.tools.feed import FeedLost
from crank.tools.snapshot import Change, Scanner, Snapshot

pytestmark = pytest.mark.skipif(not feed.available(), reason="inotify is Linux only")

OPERATIONS = textwrap.dedent(
    """
    import os, random, shutil, sys
    from pathlib import Path

    root, seed, count = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    pick = random.Random(seed)

    def files():
        skip = root / ".gitignore"  # the root's rules changed are a full walk: tested apart
        return sorted(
            p for p in root.rglob("*") if ".git" not in p.parts and p.is_file() and p != skip
        )

    def folders():
        return sorted(p for p in root.rglob("*") if ".git" not in p.parts and p.is_dir())

    def somewhere():
        return pick.choice([root, *folders()])

    for _ in range(count):
        what = pick.choice(
            ["new", "new", "edit", "edit", "delete", "mkdir", "rmtree", "move", "movedir",
             "touch", "ignore", "ignored", "link", "replace", "samebytes"]
        )
        existing, dirs = files(), folders()
        if what == "new":
            (somewhere() / f"n{pick.randrange(10**6)}.txt").write_text(str(pick.random()))
        elif what == "edit" and existing:
            pick.choice(existing).write_text(str(pick.random()))
        elif what == "samebytes" and existing:
            target = pick.choice(existing)
            target.write_bytes(target.read_bytes())
        elif what == "delete" and existing:
            pick.choice(existing).unlink()
        elif what == "mkdir":
            made = somewhere() / f"d{pick.randrange(10**6)}"
            made.mkdir()
            (made / "inside.py").write_text("x = 1\\n")
            (made / "deeper").mkdir()
            (made / "deeper" / "more.py").write_text("y = 2\\n")
        elif what == "rmtree" and dirs:
            shutil.rmtree(pick.choice(dirs))
        elif what == "move" and existing:
            pick.choice(existing).rename(somewhere() / f"m{pick.randrange(10**6)}.txt")
        elif what == "movedir" and dirs:
            moved = pick.choice(dirs)
            target = somewhere()
            if not target.is_relative_to(moved):
                moved.rename(target / f"md{pick.randrange(10**6)}")
        elif what == "touch" and existing:
            os.utime(pick.choice(existing), ns=(pick.randrange(10**9), pick.randrange(10**9)))
        elif what == "ignore" and dirs:
            (pick.choice(dirs) / ".gitignore").write_text(pick.choice(["*.txt\\n", "d*/\\n", ""]))
        elif what == "ignored":
            out = root / "build"
            out.mkdir(exist_ok=True)
            (out / f"o{pick.randrange(10**6)}.o").write_bytes(b"\\0")
        elif what == "link":
            (somewhere() / f"l{pick.randrange(10**6)}").symlink_to("nowhere")
        elif what == "replace" and existing:
            target = pick.choice(existing)
            spare = target.with_name(target.name + ".tmp")
            spare.write_text("replaced")
            os.replace(spare, target)
    """
)


def run_operations(root: Path, seed: int, count: int) -> None:
    """Random file operations by another process, which has exited when this returns."""
    subprocess.run([sys.executable, "-c", OPERATIONS, str(root), str(seed), str(count)], check=True)


def seed_tree(root: Path) -> None:
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    for folder in range(4):
        sub = root / f"pkg{folder}" / "mod"
        sub.mkdir(parents=True)
        for index in range(5):
            (sub / f"f{index}.py").write_text(f"v = {index}\n")
        (root / f"pkg{folder}" / "x.log").write_text("log\n")


def shape(snapshot: Snapshot) -> dict[str, tuple[object, ...]]:
    return {path: (s.key, s.sha256, s.saved, s.why) for path, s in snapshot.items()}


def listed(found: list[Change]) -> list[tuple[str, str]]:
    return [(change.path, change.status) for change in found]


def test_the_feed_finds_what_a_full_scan_finds(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    fed = Scanner(root, FileStore(tmp_path / "fed"))
    walked = Scanner(root, FileStore(tmp_path / "walked"), feed=False)
    seeds = random.Random(30)
    for turn in range(25):
        fed_mark, walked_mark = fed.mark(), walked.mark()
        run_operations(root, seeds.randrange(10**9), 1 + turn % 6)
        assert listed(fed.since(fed_mark)) == listed(walked.since(walked_mark)), turn
        assert shape(fed._known) == shape(walked._known), turn
    assert fed.feed_problem is None
    assert fed.counts.walks == 1  # every answer after the first came from the feed
    assert walked.counts.walks == 50
    fed_mark, walked_mark = fed.mark(), walked.mark()
    (root / ".gitignore").write_text("*.py\n")  # the root's rules: everything again
    assert listed(fed.since(fed_mark)) == listed(walked.since(walked_mark))
    assert fed.counts.walks == 2
    fed.close()
    assert fed.watching == 0


def test_a_command_touching_one_file_among_many_stats_only_it(tmp_path: Path) -> None:
    root = tmp_path / "w"
    for folder in range(30):
        (root / f"d{folder}").mkdir(parents=True)
        for index in range(100):
            (root / f"d{folder}" / f"f{index}.py").write_text(f"{folder} {index}\n")
    (root / ".gitignore").write_text("out/\n")
    (root / "out").mkdir()
    counts = {}
    for use_feed in (True, False):
        scanner = Scanner(root, FileStore(tmp_path / f"s{use_feed}"), feed=use_feed)
        scanner.since(scanner.mark())  # the first snapshot is always a walk
        stats, reads = scanner.counts.stats, scanner.counts.reads
        mark = scanner.mark()
        subprocess.run(["sh", "-c", f"echo changed {use_feed} > {root}/d7/f3.py"], check=True)
        assert listed(scanner.since(mark)) == [("d7/f3.py", "modified")]
        counts[use_feed] = (scanner.counts.stats - stats, scanner.counts.reads - reads)
        scanner.close()
    # with the feed: the changed file and the ignored folder's own entry, twice at most
    assert counts[True][0] <= 4, counts
    assert counts[True][1] == 1
    assert counts[False][0] >= 2 * 3000  # without it: every file, before and after
    assert counts[False][1] == 1


def test_an_overflowed_queue_falls_back_to_a_full_scan(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    mark = scanner.mark()
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    if limit > 100_000:
        pytest.skip(f"the kernel queues {limit} events: too many files to make to overflow it")
    many = limit // 2 + 100  # each new file queues a create, a modify and a close
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import pathlib\nfor i in range({many}): "
            f"pathlib.Path({str(root / 'pkg1')!r}, f'n{{i}}.txt').write_text('x')",
        ],
        check=True,
    )
    found = scanner.since(mark)
    assert len(found) == many and {c.status for c in found} == {"added"}
    assert scanner.counts.walks == 2  # the overflow was seen and everything walked again
    assert scanner.feed_problem is None  # and the feed is back for the next command
    mark = scanner.mark()
    (root / "pkg2" / "mod" / "f1.py").write_text("again\n")
    assert listed(scanner.since(mark)) == [("pkg2/mod/f1.py", "modified")]
    assert scanner.counts.walks == 2
    scanner.close()


def test_no_inotify_means_full_scans_with_the_same_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in: a platform without inotify, as feed.py sees one (its libc handle absent).
    monkeypatch.setattr(feed, "_LIBC", None)
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    mark = scanner.mark()
    run_operations(root, 7, 5)
    walked = Scanner(root, FileStore(tmp_path / "walked"), feed=False)
    walked.scan()
    scanner.since(mark)
    assert shape(scanner._known) == shape(walked._known)
    assert scanner.feed_problem == "inotify is not available on this platform"
    assert scanner.counts.walks == 2


def test_too_many_folders_to_watch_falls_back_to_full_scans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Stand-in for the kernel's refusal (ENOSPC past fs.inotify.max_user_watches), which
    # a test cannot cause without changing the machine's limit: the third watch fails.
    real_watch = feed.Feed.watch
    calls = []

    def watch(self: feed.Feed, folder: Path) -> int:
        calls.append(folder)
        if len(calls) == 3:
            raise FeedLost(28, "too many folders to watch (the fs.inotify.max_user_watches limit)")
        return real_watch(self, folder)

    monkeypatch.setattr(feed.Feed, "watch", watch)
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    mark = scanner.mark()
    assert scanner.watching == 0 and "max_user_watches" in (scanner.feed_problem or "")
    (root / "pkg3" / "mod" / "f2.py").write_text("changed\n")
    (root / "pkg0" / "new.py").write_text("new\n")
    found = listed(scanner.since(mark))
    assert found == [("pkg0/new.py", "added"), ("pkg3/mod/f2.py", "modified")]
    assert scanner.counts.walks == 2 and len(calls) == 3  # not tried again


def test_the_feed_adds_no_thread_and_overlapping_marks_each_see_their_changes(
    tmp_path: Path,
) -> None:
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    threads = threading.active_count()
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    first = scanner.mark()
    (root / "pkg0" / "one.txt").write_text("1")
    second = scanner.mark()  # a second call starts while the first runs
    (root / "pkg1" / "two.txt").write_text("2")
    assert listed(scanner.since(second)) == [("pkg1/two.txt", "added")]
    (root / "pkg0" / "one.txt").unlink()
    (root / "pkg2" / "three.txt").write_text("3")
    assert listed(scanner.since(first)) == [("pkg1/two.txt", "added"), ("pkg2/three.txt", "added")]
    assert scanner._journal == []  # nothing is kept once no mark is open
    assert threading.active_count() == threads
    assert scanner.watching > 0
    scanner.close()
    assert scanner.watching == 0
    scanner.since(scanner.mark())  # used after its workspace closed: walks, opens nothing
    assert scanner.watching == 0 and scanner.counts.walks == 3


def test_a_workspace_folder_deleted_and_made_again_is_walked_again(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    seed_tree(root)
    scanner = Scanner(root, FileStore(tmp_path / "blobs"))
    mark = scanner.mark()
    subprocess.run(["rm", "-rf", str(root)], check=True)
    gone = scanner.since(mark)
    assert {c.status for c in gone} == {"deleted"}
    assert len(gone) == 26  # 20 .py, 4 .log, .gitignore and build/
    mark = scanner.mark()
    root.mkdir()
    (root / "back.txt").write_text("back\n")
    assert listed(scanner.since(mark)) == [("back.txt", "added")]
    mark = scanner.mark()
    (root / "back.txt").write_text("again\n")
    assert listed(scanner.since(mark)) == [("back.txt", "modified")]
    assert scanner.feed_problem is None
    scanner.close()
