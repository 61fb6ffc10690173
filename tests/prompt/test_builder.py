"""The builder: pure, byte-stable, and unable to mention what is not there."""

from __future__ import annotations

import copy
import datetime
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from prompt_helpers import SHARED, bash_tool, full_tools, read_tool, tool, write_tool

from crank.prompt import ContextFile, Skill, build_system_prompt
from crank.prompt.builder import OPENING

DAY = datetime.date(2026, 3, 14)
CONTEXT = [
    ContextFile("/home/u/.config/crank/AGENTS.md", "Answer in British English.\n"),
    ContextFile("/work/shop/AGENTS.md", "Use uv, never pip.\n"),
]
SKILLS = [
    Skill(
        "release", "How to cut a release of the shop.", "/work/shop/.crank/skills/release/SKILL.md"
    ),
    Skill("db-migration", "Steps for changing the schema.", "/work/shop/.crank/skills/db/SKILL.md"),
]


def build(tools=None, context=CONTEXT, skills=SKILLS, cwd="/work/shop", today=DAY):  # type: ignore[no-untyped-def]
    return build_system_prompt(
        full_tools() if tools is None else tools, context, skills, cwd, today
    )


def test_two_builds_are_equal_and_hash_is_sha256_of_text() -> None:
    first, second = build(), build()
    assert first.text == second.text
    assert first.hash == hashlib.sha256(first.text.encode()).hexdigest()
    assert first == second


def test_a_build_in_another_process_with_another_hash_seed_gives_the_same_bytes() -> None:
    here = build()
    script = f"""
import sys, datetime
sys.path.insert(0, {str(Path(__file__).parent)!r})
from test_builder import build
sys.stdout.write(build().hash)
"""
    hashes = set()
    for seed in ("1", "4242"):
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "PYTHONPATH": str(Path(__file__).parents[2] / "server"),
        }
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        hashes.add(done.stdout)
    assert hashes == {here.hash}


def test_arguments_are_unchanged_by_a_build() -> None:
    tools = full_tools()
    context = list(CONTEXT)
    skills = list(SKILLS)
    before = (
        copy.deepcopy([(t.name, t.snippet, t.guidelines) for t in tools]),
        list(context),
        list(skills),
    )
    build(tools, context, skills)
    assert ([(t.name, t.snippet, t.guidelines) for t in tools], context, skills) == before


def test_read_only_agent_names_no_mutating_tool_anywhere() -> None:
    text = build([read_tool(), tool("grep", "Search file contents")]).text.lower()
    for word in ("write", "edit", "bash"):
        assert word not in text, word


def test_reviewer_with_read_and_bash_has_no_write_but_full_agent_does() -> None:
    reviewer = build([read_tool(), bash_tool()]).text
    assert "write" not in reviewer.lower()
    assert "- bash: Run shell commands" in reviewer
    assert "- write: Create or overwrite files" in build().text


def test_opening_names_no_tool() -> None:
    assert build().text.startswith(OPENING)
    for name in ("read", "write", "edit", "bash"):
        assert name not in OPENING.lower()


def test_one_line_per_tool_with_a_snippet_in_the_order_given() -> None:
    silent = tool("proofread")  # no snippet, no guidelines: adds nothing, breaks nothing
    tools = [bash_tool(), silent, read_tool()]
    lines = build(tools).text.splitlines()
    tool_lines = [
        line for line in lines if line.startswith("- ") and ": " in line and "(file:" not in line
    ]
    assert tool_lines == ["- bash: Run shell commands", "- read: Read file contents"]
    assert "proofread" not in build(tools).text


def test_guidelines_are_deduplicated_in_first_seen_order() -> None:
    tools = [
        tool("a", None, "one", "two", "three"),
        tool("b", None, "two", "four", "one"),
        tool("c", None, "five", "three", "six"),
        tool("d", None, "six", "seven", "eight", "nine", "four"),
    ]
    lines = build(tools).text.splitlines()
    start = lines.index("Guidelines:") + 1
    got = lines[start : start + 9]
    assert got == [
        f"- {g}" for g in ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
    ]
    assert lines[start + 9] == ""


def test_shared_guideline_appears_once() -> None:
    assert build().text.count(SHARED) == 1


def test_last_two_lines_are_date_and_cwd_exactly() -> None:
    for day, cwd in ((DAY, "/work/shop"), (datetime.date(2027, 1, 2), "/srv/other dir")):
        lines = build(cwd=cwd, today=day).text.split("\n")
        assert lines[-2:] == [
            f"Current date: {day.isoformat()}",
            f"Current working directory: {cwd}",
        ]


def test_context_files_are_wrapped_with_their_paths_unchanged_in_given_order() -> None:
    text = build().text
    user = (
        '<project_instructions path="/home/u/.config/crank/AGENTS.md">\n'
        "Answer in British English.\n</project_instructions>"
    )
    project = (
        '<project_instructions path="/work/shop/AGENTS.md">\n'
        "Use uv, never pip.\n</project_instructions>"
    )
    assert user in text and project in text
    assert text.index(user) < text.index(project)


def test_context_text_without_final_newline_is_kept_byte_for_byte() -> None:
    body = "  indented\n\n# heading\nlast line, no newline"
    text = build(context=[ContextFile("/p/AGENTS.md", body)]).text
    assert f'<project_instructions path="/p/AGENTS.md">\n{body}\n</project_instructions>' in text


def test_skills_index_has_name_description_path_and_no_body() -> None:
    text = build([read_tool(), bash_tool()]).text
    for skill in SKILLS:
        line = next(line for line in text.splitlines() if line.startswith(f"- {skill.name}:"))
        assert skill.description in line and skill.path in line
    assert "read that skill's file" in text


def test_no_read_tool_means_no_index_and_the_same_string_as_no_skills() -> None:
    tools = [write_tool(), bash_tool(), tool("proofread", "Check spelling")]
    with_skills = build(tools, skills=SKILLS)
    without = build(tools, skills=[])
    assert with_skills.text == without.text
    assert "release" not in with_skills.text
    skipped = [s for s in with_skills.sources if s["kind"] == "skipped"]
    assert [s["path"] for s in skipped] == [s.path for s in SKILLS]
    assert "release" in build([read_tool()], skills=SKILLS).text


def test_sections_come_in_the_fixed_order() -> None:
    text = build().text
    marks = [
        OPENING,
        "Available tools:",
        "Guidelines:",
        "<project_instructions",
        "- release:",
        "Current date:",
    ]
    positions = [text.index(mark) for mark in marks]
    assert positions == sorted(positions)


def test_source_map_names_each_contributor_in_prompt_order_as_plain_json() -> None:
    prompt = build_system_prompt(
        [read_tool(), tool("silent"), bash_tool()],
        CONTEXT,
        SKILLS,
        "/work/shop",
        DAY,
        skipped=[{"kind": "skipped", "path": "/x/AGENTS.md", "reason": "untrusted"}],
    )
    wire = prompt.to_json()
    assert json.loads(json.dumps(wire)) == wire
    assert wire["sources"] == [
        {"kind": "tool", "name": "read"},
        {"kind": "tool", "name": "bash"},
        {"kind": "contextFile", "path": CONTEXT[0].path},
        {"kind": "contextFile", "path": CONTEXT[1].path},
        {"kind": "skill", "name": "release", "path": SKILLS[0].path},
        {"kind": "skill", "name": "db-migration", "path": SKILLS[1].path},
        {"kind": "setting", "name": "date"},
        {"kind": "setting", "name": "cwd", "path": "/work/shop"},
        {"kind": "skipped", "path": "/x/AGENTS.md", "reason": "untrusted"},
    ]
    wire["sources"].clear()
    assert len(prompt.sources) == 9


def test_multiline_values_cannot_break_the_one_line_rules() -> None:
    odd = Skill("multi", "first line\nsecond   line", "/s/SKILL.md")
    text = build([tool("read", "Read\nfiles", "line one\nline two")], context=[], skills=[odd]).text
    assert "- read: Read files" in text.splitlines()
    assert "- line one line two" in text.splitlines()
    assert "- multi: first line second line (file: /s/SKILL.md)" in text.splitlines()


def test_no_tools_no_files_is_opening_then_date_and_cwd() -> None:
    text = build([], context=[], skills=[]).text
    assert text == f"{OPENING}\n\nCurrent date: 2026-03-14\nCurrent working directory: /work/shop"
