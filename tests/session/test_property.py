"""Any mix of appends, branches and compactions: the file replays to what the process
holds, a fresh read replays the same (one that leaves the history before a compaction
unread too), and both match a small independent model."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crank.agent.messages import Message
from crank.session import COMPACTION_PREFIX, SessionLog, resume
from crank.session.log import read_tree

from .conftest import ask, say

SERVER = str(Path(__file__).resolve().parents[2] / "server")

operations = st.lists(
    st.one_of(
        st.tuples(st.just("user"), st.text(max_size=12)),
        st.tuples(st.just("assistant"), st.text(max_size=12)),
        st.tuples(st.just("branch"), st.integers(min_value=0, max_value=10_000)),
        st.tuples(st.just("compact"), st.integers(min_value=0, max_value=10_000)),
        st.tuples(st.just("label"), st.integers(min_value=0, max_value=10_000)),
    ),
    max_size=25,
)


def expected_transcript(rows: list[dict[str, Any]]) -> list[Message]:
    """The reference: walk parents from the last row, then apply the newest compaction."""
    by_id = {row["id"]: row for row in rows}
    path: list[dict[str, Any]] = []
    current = rows[-1]["id"] if rows else None
    while current is not None:
        path.insert(0, by_id[current])
        current = by_id[current]["parent"]
    out: list[Message] = []
    compactions = [i for i, row in enumerate(path) if row["kind"] == "compaction"]
    if compactions:
        row = path[compactions[-1]]
        kept = [r["id"] for r in path].index(row["kept"])
        text = f"{COMPACTION_PREFIX}\n\n{row['summary']}"
        out.append({"role": "user", "content": text, "timestamp": row["timestamp"]})
        path = path[kept:]
    return out + [row["message"] for row in path if row["kind"] == "message"]


def apply(log: SessionLog, rows: list[dict[str, Any]], op: tuple[str, Any]) -> None:
    kind, value = op
    tip = rows[-1]["id"] if rows else None
    if kind in ("user", "assistant"):
        message = ask(value) if kind == "user" else say(value)
        new = log.append_message_sync(message)
        rows.append({"id": new, "parent": tip, "kind": "message", "message": message})
    elif kind == "branch" and rows:
        target = rows[value % len(rows)]["id"]
        rows.append(
            {"id": log.append_sync("branch", {}, parent=target), "parent": target, "kind": "b"}
        )
    elif kind == "compact" and rows:
        on_path = [r for r in log.tree.path_to(tip) if r["type"] == "message"]
        if not on_path:
            return
        kept = on_path[value % len(on_path)]["id"]
        summary = f"summary {value}"
        fields: dict[str, Any] = {"summary": summary, "firstKeptId": kept, "tokensBefore": value}
        if value % 2:  # as the log records one (a fresh read may leave the history unread)
            fields["usageBefore"] = log.usage_totals().as_usage()
        new = log.append_sync("compaction", fields)
        stamp = log.tree.by_id[new]["timestamp"]
        row = {"id": new, "parent": tip, "kind": "compaction", "kept": kept, "summary": summary}
        rows.append(row | {"timestamp": stamp})
    elif kind == "label" and rows:
        target = rows[value % len(rows)]["id"]
        new = log.append_sync("label", {"targetId": target, "label": "x"})
        rows.append({"id": new, "parent": tip, "kind": "label"})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations)
def test_replay_equals_the_process_and_a_fresh_read(ops: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as directory, SessionLog.create(directory, "/w") as log:
        rows: list[dict[str, Any]] = []
        for op in ops:
            apply(log, rows, op)
            assert log.replay() == expected_transcript(rows)
        assert resume(log.path) == log.replay()
        assert [e["id"] for e in log.tree.entries] == [r["id"] for r in rows]
        assert [e["id"] for e in read_tree(log.path).entries] == [r["id"] for r in rows]


def test_a_fresh_process_replays_identically(tmp_path: Path) -> None:
    with SessionLog.create(tmp_path, "/w") as log:
        rows: list[dict[str, Any]] = []
        script = [("user", "a"), ("assistant", "b"), ("user", "ünï"), ("branch", 1)]
        script += [("user", "c"), ("compact", 1), ("assistant", "d"), ("label", 0)]
        for op in script:
            apply(log, rows, op)
        here = log.replay()
    code = (
        "import json,sys\nfrom crank.session import resume\nprint(json.dumps(resume(sys.argv[1])))"
    )
    child = subprocess.run(
        [sys.executable, "-c", code, str(log.path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SERVER},
        check=True,
    )
    assert json.loads(child.stdout) == here
    assert here[0]["content"].startswith(COMPACTION_PREFIX)
