"""A run's changes, listed and taken back (issue 30), against the real server over stdio.

The scripted loopback model drives one run that edits ``a.py`` with the edit tool,
creates ``b.txt`` and deletes ``c.txt`` with commands and rewrites ``d.py`` with
``sed -i``. ``crank/changes`` must list all four with their status, and
``crank/revert`` must put every one back byte for byte (hashes compared), refuse a
file the user changed since, and record itself so that it can be reverted too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from tests.support.model_server import ModelServer

from .helpers import Crank, HeldPermission, running_server
from .test_one_truth import options, script

A = "def add(a, b):\n    return a - b\n"
C = "to be deleted\n"
D = "x = 1\ny = 2\n"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "a.py").write_text(A)
    (folder / "c.txt").write_text(C)
    (folder / "d.py").write_text(D)
    (folder / "untouched.txt").write_text("same\n")
    return folder


FOUR = script(
    {"tool": "edit", "path": "a.py", "oldText": "a - b", "newText": "a + b"},
    {"tool": "bash", "command": "printf 'made\\n' > b.txt"},
    {"tool": "bash", "command": "rm c.txt"},
    {"tool": "bash", "command": "sed -i 's/y = 2/y = 3/' d.py"},
)


async def run(crank: Crank) -> str:
    answer = await crank.request("crank/prompt", {"text": "change four files"})
    events = await crank.settled(answer["runId"], within=60)
    ends = [e["event"] for e in events if e["event"]["type"] == "tool_execution_end"]
    assert [end["result"]["isError"] for end in ends] == [False] * 4, ends
    return str(answer["runId"])


async def listed_after(crank: Crank, text: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """Prompt ``text``, wait for the run to settle; its id and its files by path."""
    answer = await crank.request("crank/prompt", {"text": text})
    await crank.settled(answer["runId"], within=60)
    files = by_path(await crank.request("crank/changes", {"runId": answer["runId"]}))
    return str(answer["runId"]), files


def entry_lines(session_file: str) -> list[str]:
    return Path(session_file).read_text().splitlines()


def by_path(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["path"]: item for item in answer["files"]}


async def test_a_run_of_edits_and_commands_is_listed_and_reverted_exactly(tmp_path: Path) -> None:
    folder = project(tmp_path)
    before = {name: sha(folder / name) for name in ("a.py", "c.txt", "d.py")}
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert {path: item["status"] for path, item in files.items()} == {
                "a.py": "modified",
                "b.txt": "added",
                "c.txt": "deleted",
                "d.py": "modified",
            }
            assert files["a.py"]["byTool"] == ["c1"] and files["d.py"]["byTool"] == ["c4"]
            assert files["b.txt"]["byTool"] == ["c2"] and files["c.txt"]["byTool"] == ["c3"]
            assert all(item["restorable"] for item in files.values())
            assert files["a.py"]["before"] == before["a.py"]
            assert files["a.py"]["after"] == sha(folder / "a.py")
            assert files["c.txt"]["before"] == before["c.txt"] and "after" not in files["c.txt"]
            assert "before" not in files["b.txt"] and files["b.txt"]["after"] == sha(
                folder / "b.txt"
            )
            whole = by_path(await crank.request("crank/changes", {}))
            assert whole.keys() == files.keys()

            answer = await crank.request("crank/revert", {"runId": run_id})
            assert sorted(answer["reverted"]) == ["a.py", "b.txt", "c.txt", "d.py"]
            assert answer["conflicts"] == []
            assert {name: sha(folder / name) for name in before} == before
            assert not (folder / "b.txt").exists()

            # The revert is recorded with its own id, and can itself be reverted.
            undone = by_path(await crank.request("crank/changes", {"runId": answer["revertId"]}))
            assert {p: i["status"] for p, i in undone.items()} == {
                "a.py": "modified",
                "b.txt": "deleted",
                "c.txt": "added",
                "d.py": "modified",
            }
            again = await crank.request("crank/revert", {"runId": answer["revertId"]})
            assert again["conflicts"] == [] and len(again["reverted"]) == 4
            assert (folder / "b.txt").read_text() == "made\n"
            assert not (folder / "c.txt").exists()
            assert (folder / "d.py").read_text() == "x = 1\ny = 3\n"


async def test_a_file_the_user_changed_since_is_a_conflict_unless_forced(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            (folder / "d.py").write_text("mine\n")
            answer = await crank.request("crank/revert", {"runId": run_id})
            assert sorted(answer["reverted"]) == ["a.py", "b.txt", "c.txt"]
            [conflict] = answer["conflicts"]
            assert conflict["path"] == "d.py"
            assert "changed since the run" in conflict["reason"]
            assert (folder / "d.py").read_text() == "mine\n"  # never overwritten
            assert (folder / "a.py").read_text() == A

            forced = await crank.request(
                "crank/revert", {"runId": run_id, "paths": ["d.py"], "force": True}
            )
            assert forced == {"reverted": ["d.py"], "conflicts": [], "revertId": forced["revertId"]}
            assert (folder / "d.py").read_text() == D
            # The user's text overwritten by force is kept: reverting the revert brings it back.
            back = await crank.request("crank/revert", {"runId": forced["revertId"]})
            assert back["reverted"] == ["d.py"] and (folder / "d.py").read_text() == "mine\n"


async def test_bad_input_is_a_per_file_conflict_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            (folder / "b.txt").unlink()
            (folder / "b.txt").mkdir()  # the created file is now a folder
            answer = await crank.request(
                "crank/revert",
                {"runId": run_id, "paths": ["b.txt", "../outside.txt", "nothing.py"]},
            )
            assert answer["reverted"] == []
            reasons = {c["path"]: c["reason"] for c in answer["conflicts"]}
            assert reasons["b.txt"].startswith("is now a folder")
            assert reasons["../outside.txt"] == "not changed by this run"
            assert reasons["nothing.py"] == "not changed by this run"
            assert (folder / "b.txt").is_dir()
            with pytest.raises(JsonRpcException) as raised:
                await crank.request("crank/revert", {"runId": "run-9-00000000"})
            assert "no changes of run run-9-00000000 are recorded" in str(raised.value)


async def test_an_open_buffer_is_reverted_through_the_editor(tmp_path: Path) -> None:
    folder = project(tmp_path)
    a = folder / "a.py"
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.open(a, A)
            await crank.request("crank/state", {})
            run_id = await run(crank)
            assert len(crank.edits) == 1 and crank.buffer(a) != A
            answer = await crank.request("crank/revert", {"runId": run_id, "paths": ["a.py"]})
            assert answer["reverted"] == ["a.py"], answer
            assert len(crank.edits) == 2  # through workspace/applyEdit: the editor can undo it
            assert crank.buffer(a) == A == a.read_text()


async def test_the_changes_outlive_the_server(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert len(files) == 4
            answer = await crank.request("crank/revert", {"runId": run_id})
            assert len(answer["reverted"]) == 4 and answer["conflicts"] == []
            assert (folder / "d.py").read_text() == D and (folder / "c.txt").read_text() == C


async def test_a_kept_before_image_is_served_for_a_diff_view(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            before = files["d.py"]["before"]
            answer = await crank.request("crank/fileContent", {"sha256": before})
            assert answer == {"sha256": before, "text": D}
            with pytest.raises(JsonRpcException) as raised:
                await crank.request("crank/fileContent", {"sha256": "0" * 64})
            assert "no kept file content of this session has this hash" in str(raised.value)


async def test_a_deleted_file_still_open_in_the_editor_is_written_back_to_disk(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    c = folder / "c.txt"
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.open(c, C)  # the buffer still shows the old text after rm
            await crank.request("crank/state", {})
            run_id = await run(crank)
            assert not c.exists()
            answer = await crank.request("crank/revert", {"runId": run_id, "paths": ["c.txt"]})
            assert answer["reverted"] == ["c.txt"] and c.read_text() == C


async def test_binary_and_oversized_files_are_listed_but_refused_by_name(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "image.bin").write_bytes(b"\0\1\2")
    (folder / "big.txt").write_bytes(b"x" * (1 << 20) + b"more")
    change = script(
        {"tool": "bash", "command": "printf '\\0\\3' > image.bin && echo y >> big.txt"},
    )
    with ModelServer(change) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id, files = await listed_after(crank, "touch them")
            assert files["image.bin"]["restorable"] is False
            assert files["image.bin"]["reason"] == "a binary file: not restorable"
            assert files["big.txt"]["reason"] == "larger than 1048576 bytes: not restorable"
            reverted = await crank.request("crank/revert", {"runId": run_id})
            assert reverted["reverted"] == []
            reasons = {c["path"]: c["reason"] for c in reverted["conflicts"]}
            assert reasons == {
                "big.txt": "larger than 1048576 bytes: not restorable",
                "image.bin": "a binary file: not restorable",
            }
            assert (folder / "image.bin").read_bytes() == b"\0\3"  # untouched


async def test_the_next_prompt_tells_the_model_what_was_taken_back(tmp_path: Path) -> None:
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            await crank.request("crank/revert", {"runId": run_id, "paths": ["a.py"]})
            model.add({"text": "noted"})
            answer = await crank.request("crank/prompt", {"text": "what now?"})
            await crank.settled(answer["runId"], within=60)
            sent = model.requests[-1]["body"]["messages"][-1]["content"]
            assert sent.startswith("what now?\n\n[The user took back what run-1-")
            assert "changed in a.py: those files are as they were before it." in sent


async def test_a_users_edit_while_the_question_is_open_is_not_the_commands(
    tmp_path: Path,
) -> None:
    """Ask, then snapshot, then run: the command's changes are measured from the moment
    it was allowed, so what the user changed while the question was open is not listed
    as the command's (and an undo of the run would not take the user's work back)."""
    folder = project(tmp_path)
    held = HeldPermission()
    one = script({"tool": "bash", "command": "printf 'made\\n' > b.txt"})
    with ModelServer(one) as model:
        ask = {**options(model, tmp_path), "permissionMode": "ask"}
        async with running_server(tmp_path, [folder], ask) as crank:
            crank.answer_permission = held.answer
            answer = await crank.request("crank/prompt", {"text": "make b.txt"})
            await held.asked()
            (folder / "untouched.txt").write_text("the user's own edit\n")
            held.release()
            await crank.settled(answer["runId"], within=60)
            [question] = crank.permission_requests
            assert question["toolName"] == "bash"
            files = by_path(await crank.request("crank/changes", {"runId": answer["runId"]}))
            assert {path: item["status"] for path, item in files.items()} == {"b.txt": "added"}
            assert (folder / "untouched.txt").read_text() == "the user's own edit\n"


async def test_each_run_is_listed_and_a_reverted_file_says_by_which_revert(
    tmp_path: Path,
) -> None:
    """What the VS Code chat shows under each run after a reload: the whole session's
    answer carries every run's own list (``runs``), and a file a revert put back names
    that revert (``revertedBy``) until a revert of the revert brings the change again."""
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            undo = await crank.request("crank/revert", {"runId": run_id, "paths": ["d.py"]})
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert {p: i.get("revertedBy") for p, i in files.items()} == {
                "a.py": None,
                "b.txt": None,
                "c.txt": None,
                "d.py": undo["revertId"],
            }
            whole = await crank.request("crank/changes", {})
            assert [r["runId"] for r in whole["runs"]] == [run_id]  # the revert is no run
            assert by_path(whole["runs"][0]) == files

            await crank.request("crank/revert", {"runId": undo["revertId"]})
            again = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert "revertedBy" not in again["d.py"]
            assert (folder / "d.py").read_text() == "x = 1\ny = 3\n"


async def test_a_kept_file_leaves_the_pending_list_for_good(tmp_path: Path) -> None:
    """Keep (issue 30): the user accepts a file's change. It is recorded as a ``keep``
    entry, so every later answer, after a restart too, says ``kept``; a revert of the
    whole run leaves it alone; a bad path or a put-back file is a per-file conflict."""
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            answer = await crank.request(
                "crank/keep", {"runId": run_id, "paths": ["a.py", "a.py", "nothing.py"]}
            )
            assert answer == {
                "kept": ["a.py"],
                "conflicts": [{"path": "nothing.py", "reason": "not changed by this run"}],
            }
            again = await crank.request("crank/keep", {"runId": run_id, "paths": ["a.py"]})
            assert again == {"kept": ["a.py"], "conflicts": []}
            undone = await crank.request("crank/revert", {"runId": run_id, "paths": ["d.py"]})
            refused = await crank.request("crank/keep", {"runId": run_id, "paths": ["d.py"]})
            assert refused["kept"] == []
            [conflict] = refused["conflicts"]
            assert conflict["path"] == "d.py"
            assert conflict["reason"].startswith(f"put back by {undone['revertId']}")
            with pytest.raises(JsonRpcException) as raised:
                await crank.request("crank/keep", {"runId": "run-9-00000000"})
            assert "no changes of run run-9-00000000 are recorded" in str(raised.value)
            state = await crank.request("crank/state", {})
        keeps = [line for line in entry_lines(state["sessionFile"]) if '"type":"keep"' in line]
        assert len(keeps) == 1  # the second keep of a.py recorded nothing new

        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            await crank.request("crank/openSession", {"sessionId": state["sessionId"]})
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert {p: i.get("kept") for p, i in files.items()} == {
                "a.py": True,
                "b.txt": None,
                "c.txt": None,
                "d.py": None,
            }
            whole = await crank.request("crank/changes", {})
            assert by_path(whole["runs"][0]) == files
            # The whole run's revert takes back what is pending, not what was kept.
            answer = await crank.request("crank/revert", {"runId": run_id})
            assert sorted(answer["reverted"]) == ["b.txt", "c.txt"]
            assert (folder / "a.py").read_text() == A.replace("a - b", "a + b")
            # Naming a kept file takes it back, and that ends the keep.
            answer = await crank.request("crank/revert", {"runId": run_id, "paths": ["a.py"]})
            assert answer["reverted"] == ["a.py"] and (folder / "a.py").read_text() == A
            files = by_path(await crank.request("crank/changes", {"runId": run_id}))
            assert "kept" not in files["a.py"] and files["a.py"]["revertedBy"] == answer["revertId"]


async def test_each_file_says_how_many_lines_it_added_and_removed(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "image.bin").write_bytes(b"\0\1\2")
    (folder / "long.txt").write_text("".join(f"line {n}\n" for n in range(10)))
    change = script(
        {"tool": "edit", "path": "a.py", "oldText": "a - b", "newText": "a + b"},
        {"tool": "bash", "command": "printf 'one\\ntwo\\n' > b.txt && rm c.txt"},
        {"tool": "bash", "command": "sed -i '3d;5d' long.txt && echo end >> long.txt"},
        {"tool": "bash", "command": "printf '\\0\\3' > image.bin"},
    )
    with ModelServer(change) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            _, files = await listed_after(crank, "change them")
            counts = {p: (i.get("linesAdded"), i.get("linesRemoved")) for p, i in files.items()}
            assert counts == {
                "a.py": (1, 1),
                "b.txt": (2, 0),
                "c.txt": (0, 1),
                "long.txt": (1, 2),
                "image.bin": (None, None),  # binary: not counted
            }
            whole = by_path(await crank.request("crank/changes", {}))
            assert whole["long.txt"]["linesAdded"] == 1 and whole["long.txt"]["linesRemoved"] == 2


async def test_keep_without_paths_keeps_the_whole_run_and_undo_passes_over_it(
    tmp_path: Path,
) -> None:
    """Keep all: every file of the run still waiting is kept; ``/undo`` then finds
    nothing of that run to take back (a run kept whole is answered, not pending)."""
    folder = project(tmp_path)
    with ModelServer(FOUR) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            run_id = await run(crank)
            answer = await crank.request("crank/keep", {"runId": run_id})
            assert sorted(answer["kept"]) == ["a.py", "b.txt", "c.txt", "d.py"]
            undo = await crank.request("crank/prompt", {"text": "/undo"})
            assert undo["command"] == "undo" and undo["result"]["runId"] is None, undo
            assert (folder / "d.py").read_text() == "x = 1\ny = 3\n"  # nothing was put back
