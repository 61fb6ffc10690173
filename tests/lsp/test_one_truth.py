"""One truth for files (issue 14), against the real server over stdio.

The agent edits ``calc.py`` while it is open in the client, then runs a command that
reads it. Two kinds of client: a plain LSP client that cannot save for Crank (its
buffer is changed through ``workspace/applyEdit`` and the server writes the same text
to disk), and one that declares ``experimental.crank.saveDocuments`` and saves when
asked with ``crank/saveDocument`` (here the pytest-lsp client writes its buffer and
sends ``didSave``, as the Neovim and VS Code clients do; those are driven for real in
nvim-client/tests and vscode-client/test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.model_server import ModelServer

from .helpers import Crank, provider_for, read_text, running_server

CALC = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
FIX = {
    "path": "calc.py",
    "oldText": "def add(a, b):\n    return a - b",
    "newText": "def add(a, b):\n    return a + b",
}


def script(*calls: dict[str, Any]) -> dict[str, Any]:
    replies: list[dict[str, Any]] = [
        {"toolCalls": [{"id": f"c{i}", "name": call.pop("tool"), "arguments": call}]}
        for i, call in enumerate(calls, 1)
    ]
    return {"replies": [*replies, {"text": "done"}]}


def setup(tmp_path: Path) -> tuple[Path, Path]:
    folder = tmp_path / "project"
    folder.mkdir()
    calc = folder / "calc.py"
    calc.write_text(CALC)
    return folder, calc


def options(model: ModelServer, tmp_path: Path) -> dict[str, Any]:
    return {
        "provider": provider_for(model.url),
        "sessionDir": str(tmp_path / "sessions"),
        "permissionMode": "auto",
    }


async def run(crank: Crank, text: str = "fix add") -> dict[str, dict[str, Any]]:
    """Prompt, wait for the run to settle, return each tool call's result by id."""
    answer = await crank.request("crank/prompt", {"text": text})
    events = await crank.settled(answer["runId"], within=60)
    return {
        e["event"]["toolCallId"]: e["event"]["result"]
        for e in events
        if e["event"]["type"] == "tool_execution_end"
    }


async def opened(crank: Crank, path: Path, text: str) -> None:
    """Open the document and wait until the server has looked at it (crank/state is
    answered after the didOpen before it has been handled)."""
    crank.open(path, text)
    await crank.request("crank/state", {})


async def test_plain_client_clean_buffer_edit_then_grep_sees_the_change(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    with ModelServer(
        script({"tool": "edit", **FIX}, {"tool": "bash", "command": "grep -n 'return a' calc.py"})
    ) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            await opened(crank, calc, CALC)
            results = await run(crank)
            assert not results["c1"]["isError"], results["c1"]
            assert "in the editor and on disk" in results["c1"]["content"]
            assert results["c2"]["content"].splitlines()[:2] == [
                "2:    return a + b",
                "6:    return a - b",
            ]
            assert crank.buffer(calc) == read_text(calc) == CALC.replace("a - b", "a + b", 1)
            assert len(crank.edits) == 1 and crank.saves == []


async def test_plain_client_with_unsaved_user_edits_is_refused_and_told_why(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    typed = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
    with ModelServer(
        script(
            {"tool": "edit", **FIX},
            {"tool": "read", "path": "calc.py"},
            {"tool": "bash", "command": "cat calc.py"},
        )
    ) as model:
        async with running_server(tmp_path, [folder], options(model, tmp_path)) as crank:
            crank.open(calc, CALC)
            crank.type_text(calc, typed)  # right behind the didOpen
            results = await run(crank)
            edit = results["c1"]
            assert edit["isError"]
            assert "calc.py has unsaved changes in the editor" in edit["content"]
            assert "Nothing was changed" in edit["content"]
            assert crank.edits == []  # the buffer was never touched
            assert crank.buffer(calc) == typed and read_text(calc) == CALC
            assert (
                "this is the editor's text, which differs from the file on disk"
                in results["c2"]["content"]
            )
            assert (
                "[Note: the editor's text of calc.py differs from the disk"
                in results["c3"]["content"]
            )


async def test_saving_client_clean_buffer_is_saved_by_the_editor(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    with ModelServer(
        script({"tool": "edit", **FIX}, {"tool": "bash", "command": "grep -c 'a + b' calc.py"})
    ) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), save_documents=True
        ) as crank:
            await opened(crank, calc, CALC)
            results = await run(crank)
            assert not results["c1"]["isError"], results["c1"]
            assert crank.saves == [{"uri": calc.as_uri(), "unsavedChanges": False}]
            assert results["c2"]["content"].startswith("1")
            assert read_text(calc) == crank.buffer(calc) == CALC.replace("a - b", "a + b", 1)


async def test_saving_client_with_unsaved_user_edits_saves_both_and_says_so(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    typed = CALC + "\n\ndef mul(a, b):\n    return a * b\n"
    with ModelServer(
        script({"tool": "edit", **FIX}, {"tool": "bash", "command": "cat calc.py"})
    ) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), save_documents=True
        ) as crank:
            await opened(crank, calc, CALC)
            crank.type_text(calc, typed)
            results = await run(crank)
            edit = results["c1"]
            assert not edit["isError"], edit
            assert (
                "The user had unsaved changes in calc.py; the editor saved them" in edit["content"]
            )
            assert crank.saves == [{"uri": calc.as_uri(), "unsavedChanges": True}]
            both = typed.replace("a - b", "a + b", 1)
            assert read_text(calc) == crank.buffer(calc) == both
            assert results["c2"]["content"] == both.rstrip("\n")  # no note: they agree now


async def test_a_client_that_does_not_save_a_clean_buffer_gets_the_disk_written(
    tmp_path: Path,
) -> None:
    folder, calc = setup(tmp_path)
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), save_documents=True
        ) as crank:
            crank.answer_save = lambda p: {"saved": False, "reason": "the file is read-only here"}
            await opened(crank, calc, CALC)
            results = await run(crank)
            edit = results["c1"]
            assert not edit["isError"], edit
            assert "The editor did not save it (the file is read-only here)" in edit["content"]
            assert read_text(calc) == crank.buffer(calc) == CALC.replace("a - b", "a + b", 1)


async def test_a_failed_save_with_user_edits_is_an_error_that_says_where_the_change_is(
    tmp_path: Path,
) -> None:
    folder, calc = setup(tmp_path)
    typed = CALC + "# mine\n"
    with ModelServer(script({"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), save_documents=True
        ) as crank:
            crank.answer_save = lambda p: {"saved": False, "reason": "disk full"}
            await opened(crank, calc, CALC)
            crank.type_text(calc, typed)
            results = await run(crank)
            edit = results["c1"]
            assert edit["isError"]
            assert (
                "is in the editor's buffer but not on disk: the editor did not save it (disk full)"
                in edit["content"]
            )
            assert read_text(calc) == CALC  # neither the user's text nor the agent's was written
            assert crank.buffer(calc) == typed.replace("a - b", "a + b", 1)


async def test_a_file_changed_on_disk_under_a_stale_buffer_is_not_overwritten(
    tmp_path: Path,
) -> None:
    folder, calc = setup(tmp_path)
    sed = {"tool": "bash", "command": "sed -i 's/def sub/def subtract/' calc.py"}
    with ModelServer(script(sed, {"tool": "edit", **FIX})) as model:
        async with running_server(
            tmp_path, [folder], options(model, tmp_path), save_documents=True
        ) as crank:
            await opened(crank, calc, CALC)
            results = await run(crank)
            edit = results["c2"]
            assert edit["isError"]
            assert (
                "changed on disk (by a command or another program) after the editor loaded it"
                in edit["content"]
            )
            assert crank.edits == [] and crank.saves == []
            assert "def subtract" in read_text(calc) and crank.buffer(calc) == CALC


async def test_an_error_answer_to_save_falls_back_to_the_disk_for_a_clean_buffer(
    tmp_path: Path,
) -> None:
    folder, calc = setup(tmp_path)

    def broken(params: dict[str, Any]) -> dict[str, Any] | None:
        raise RuntimeError("no save handler here")

    with ModelServer(script({"tool": "edit", **FIX})) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [folder], opts, save_documents=True) as crank:
            crank.answer_save = broken
            await opened(crank, calc, CALC)
            results = await run(crank)
            assert not results["c1"]["isError"], results["c1"]
            assert "the client answered with an error" in results["c1"]["content"]
            assert read_text(calc) == crank.buffer(calc) == CALC.replace("a - b", "a + b", 1)


async def test_a_formatter_run_on_save_is_on_disk_and_the_model_is_told(tmp_path: Path) -> None:
    folder, calc = setup(tmp_path)
    with ModelServer(
        script({"tool": "edit", **FIX}, {"tool": "bash", "command": "cat calc.py"})
    ) as model:
        opts = options(model, tmp_path)
        async with running_server(tmp_path, [folder], opts, save_documents=True) as crank:
            crank.format_on_save = lambda text: text.replace("\n\n\n", "\n\n")
            await opened(crank, calc, CALC)
            results = await run(crank)
            assert not results["c1"]["isError"], results["c1"]
            assert "The editor changed the text as it saved it" in results["c1"]["content"]
            formatted = CALC.replace("a - b", "a + b", 1).replace("\n\n\n", "\n\n")
            assert read_text(calc) == crank.buffer(calc) == formatted
            assert results["c2"]["content"] == formatted.rstrip("\n")
