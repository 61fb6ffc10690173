"""The sentence a "Fix This File" run that changed nothing ends with (``fix_outcome``)."""

from __future__ import annotations

from typing import Any

from crank.workspace.fix_outcome import unchanged_reason


def reply(*calls: str, text: str = "", stop: str = "toolUse") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "toolCall", "id": f"c{i}", "name": n, "arguments": {}} for i, n in enumerate(calls)
    ]
    return {"role": "assistant", "content": content, "stopReason": stop}


def result(name: str, text: str, error: bool) -> dict[str, Any]:
    return {
        "role": "toolResult",
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


USER = {"role": "user", "content": "Fix the problems in the file calc.py."}


def test_the_target_changed_is_no_news() -> None:
    messages = [USER, reply("edit"), result("edit", "ok", False), reply(stop="stop")]
    assert unchanged_reason("calc.py", messages, ["calc.py", "other.py"]) is None


def test_an_aborted_or_failed_run_is_not_told_again() -> None:
    for stop in ("aborted", "error"):
        assert unchanged_reason("calc.py", [USER, reply(stop=stop)], []) is None


def test_failures_are_named_at_most_three_and_counted() -> None:
    messages: list[Any] = [USER]
    for n in range(5):
        messages += [reply("read"), result("read", f"no such file: x{n}.py\nmore", True)]
    messages.append(reply(stop="stop", text="Sorry."))
    said = unchanged_reason("calc.py", messages, [])
    assert said == (
        "Fix This File left calc.py unchanged: 5 of its 5 tool calls failed: "
        "read (no such file: x0.py); read (no such file: x1.py); read (no such file: x2.py); "
        "and 2 more."
    )


def test_calls_that_worked_but_changed_nothing() -> None:
    messages = [USER, reply("read", "grep"), result("read", "x", False), result("grep", "y", False)]
    messages.append(reply(stop="stop"))
    said = unchanged_reason("calc.py", messages, [])
    assert (
        said == "Fix This File left calc.py unchanged: its tool calls (read, grep) changed nothing."
    )


def test_a_long_first_line_is_cut() -> None:
    messages = [USER, reply(stop="stop", text="x" * 500)]
    said = unchanged_reason("calc.py", messages, [])
    assert said is not None and said.endswith('...").') and len(said) < 250


def test_a_silent_reply() -> None:
    said = unchanged_reason("calc.py", [USER, reply(stop="stop")], [])
    assert said == (
        "Fix This File left calc.py unchanged: the model answered without calling a tool, "
        "so nothing was edited."
    )


def test_before_the_end_only_a_reply_whose_calls_all_failed_is_told() -> None:
    stuck = [USER, reply("read"), result("read", "File not found: {your_dir}/test.py", True)]
    said = unchanged_reason("calc.py", stuck, [], ended=False)
    assert said == (
        "Fix This File has not changed calc.py yet: 1 of its 1 tool calls failed: "
        "read (File not found: {your_dir}/test.py)."
    )
    working = [USER, reply("read", "grep"), result("read", "x", True), result("grep", "y", False)]
    assert unchanged_reason("calc.py", working, [], ended=False) is None, "one call worked"
    waiting = [USER, reply("read", "grep"), result("read", "x", True)]
    assert unchanged_reason("calc.py", waiting, [], ended=False) is None, "a call still runs"
    assert unchanged_reason("calc.py", [USER, reply(stop="stop")], [], ended=False) is None
    assert unchanged_reason("calc.py", stuck, ["calc.py"], ended=False) is None
