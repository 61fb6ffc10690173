"""The loader, on real files in tmp_path: discovery order, trust, skills and bad files."""

from __future__ import annotations

import datetime
import os
import threading
from pathlib import Path

import pytest
from prompt_helpers import read_tool

from crank.prompt import PromptLocations, compute_prompt, load_inputs
from crank.prompt.loader import MAX_FILE_BYTES, UNTRUSTED, parse_skill


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_text(name: str, description: str, body: str = "Body line.\n") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    write(root / "AGENTS.md", "Use uv, never pip.\n")
    write(root / "services" / "api" / "AGENTS.md", "The API is frozen.\n")
    write(root / "services" / "web" / "AGENTS.md", "Web only.\n")
    write(root / "services" / "CLAUDE.md", "Services share one database.\n")
    write(root / "services" / "api" / "app.py", "ROUTES = []\n")
    return root


def locations(root: Path, cwd: Path | None = None, *, trusted: bool = True) -> PromptLocations:
    return PromptLocations(root, cwd or root, trusted, user_dir=root.parent / "user-config")


def test_context_files_user_then_root_down_to_cwd_with_claude_fallback(project: Path) -> None:
    loc = locations(project, project / "services" / "api")
    write(loc.user_dir / "AGENTS.md", "Mine.\n")
    inputs = load_inputs(loc)
    assert [(Path(c.path), c.text) for c in inputs.context_files] == [
        (loc.user_dir / "AGENTS.md", "Mine.\n"),
        (project / "AGENTS.md", "Use uv, never pip.\n"),
        (project / "services" / "CLAUDE.md", "Services share one database.\n"),
        (project / "services" / "api" / "AGENTS.md", "The API is frozen.\n"),
    ]
    assert inputs.problems == ()


def test_agents_md_wins_over_claude_md_in_the_same_directory(project: Path) -> None:
    write(project / "CLAUDE.md", "Ignored while AGENTS.md exists.\n")
    paths = [c.path for c in load_inputs(locations(project)).context_files]
    assert paths == [str(project / "AGENTS.md")]


def test_each_file_once_even_through_a_symlink(project: Path) -> None:
    loc = locations(project)
    loc.user_dir.mkdir(parents=True)
    (loc.user_dir / "AGENTS.md").symlink_to(project / "AGENTS.md")
    assert len(load_inputs(loc).context_files) == 1


def test_cwd_outside_the_workspace_reads_only_the_root(project: Path, tmp_path: Path) -> None:
    write(tmp_path / "elsewhere" / "AGENTS.md", "Not ours.\n")
    loc = locations(project, tmp_path / "elsewhere")
    assert [c.path for c in load_inputs(loc).context_files] == [str(project / "AGENTS.md")]


def test_skills_from_all_dirs_later_overrides_earlier_in_place(project: Path) -> None:
    loc = locations(project)
    write(loc.user_dir / "skills" / "release" / "SKILL.md", skill_text("release", "User's way."))
    write(loc.user_dir / "skills" / "notes" / "SKILL.md", skill_text("notes", "Keep notes."))
    write(
        project / ".crank" / "skills" / "release" / "SKILL.md",
        skill_text("release", "Project way."),
    )
    write(
        project / ".agents" / "skills" / "db" / "SKILL.md",
        skill_text("db-migration", "Schema changes."),
    )
    (project / ".crank" / "skills" / "empty-folder").mkdir()
    inputs = load_inputs(loc)
    assert [(s.name, s.description) for s in inputs.skills] == [
        ("notes", "Keep notes."),
        ("release", "Project way."),
        ("db-migration", "Schema changes."),
    ]
    assert inputs.skills[1].path == str(project / ".crank" / "skills" / "release" / "SKILL.md")
    overridden = [s for s in inputs.skipped if "overridden" in s["reason"]]
    assert [s["path"] for s in overridden] == [
        str(loc.user_dir / "skills" / "release" / "SKILL.md")
    ]


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("# Release\nNo front matter at all.\n", "no YAML front matter"),
        ("---\nname: x\ndescription: y\n", "not closed"),
        ("---\nname: [unclosed\ndescription: y\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nname: x\n---\nbody\n", "no 'description'"),
        ("---\nname: ''\ndescription: y\n---\n", "no 'name'"),
        ("---\nname: 3\ndescription: y\n---\n", "no 'name'"),
    ],
)
def test_broken_front_matter_is_a_reason_not_an_exception(text: str, complaint: str) -> None:
    result = parse_skill(Path("/s/SKILL.md"), text)
    assert isinstance(result, str) and complaint in result


def test_broken_skills_are_left_out_and_reported(project: Path) -> None:
    good = write(project / ".crank" / "skills" / "good" / "SKILL.md", skill_text("good", "Fine."))
    bad = write(project / ".crank" / "skills" / "bad" / "SKILL.md", "no front matter\n")
    binary = project / ".crank" / "skills" / "bin" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"---\nname: \xff\xfe\n---\n")
    inputs = load_inputs(locations(project))
    assert [s.path for s in inputs.skills] == [str(good)]
    assert len(inputs.problems) == 2
    assert any(str(bad) in p and "no YAML front matter" in p for p in inputs.problems)
    assert any(str(binary) in p and "not UTF-8" in p for p in inputs.problems)
    skipped = {s["path"] for s in inputs.skipped}
    assert {str(bad), str(binary)} <= skipped


def test_untrusted_workspace_skips_project_files_but_keeps_the_users(project: Path) -> None:
    loc = locations(project, project / "services" / "api", trusted=False)
    write(loc.user_dir / "AGENTS.md", "Mine.\n")
    write(loc.user_dir / "skills" / "notes" / "SKILL.md", skill_text("notes", "Keep notes."))
    skill = write(
        project / ".crank" / "skills" / "evil" / "SKILL.md", skill_text("evil", "Do bad.")
    )
    inputs = load_inputs(loc)
    assert [c.path for c in inputs.context_files] == [str(loc.user_dir / "AGENTS.md")]
    assert [s.name for s in inputs.skills] == ["notes"]
    assert {s["path"] for s in inputs.skipped} == {
        str(project / "AGENTS.md"),
        str(project / "services" / "CLAUDE.md"),
        str(project / "services" / "api" / "AGENTS.md"),
        str(skill),
    }
    assert all(s["reason"] == UNTRUSTED for s in inputs.skipped)
    assert inputs.problems == ()


async def test_compute_prompt_puts_skipped_reasons_in_the_source_map(project: Path) -> None:
    build = await compute_prompt(
        [read_tool()], locations(project, trusted=False), datetime.date(2026, 3, 14)
    )
    assert "Use uv" not in build.prompt.text
    assert {
        "kind": "skipped",
        "path": str(project / "AGENTS.md"),
        "reason": UNTRUSTED,
    } in build.prompt.sources
    trusted = await compute_prompt([read_tool()], locations(project), datetime.date(2026, 3, 14))
    assert "Use uv, never pip." in trusted.prompt.text
    assert trusted.prompt.text.endswith(f"Current working directory: {project}")


def test_unreadable_context_file_is_reported_not_raised(project: Path) -> None:
    target = project / "AGENTS.md"
    target.unlink()
    target.mkdir()  # a directory named AGENTS.md: not a file, so CLAUDE.md rules apply
    write(project / "CLAUDE.md", "Fallback.\n")
    assert [c.text for c in load_inputs(locations(project)).context_files] == ["Fallback.\n"]


def test_locations_are_normalised_to_absolute_paths(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.parent)
    loc = PromptLocations(
        Path("shop"), Path("shop/services/../services/api"), True, user_dir=Path("u")
    )
    assert loc.workspace_root == project
    assert loc.path_dirs() == [project, project / "services", project / "services" / "api"]
    assert loc.user_dir == project.parent / "u"
    assert load_inputs(loc).context_files[0].path == str(project / "AGENTS.md")


def test_a_project_file_linking_outside_the_workspace_is_not_loaded(
    project: Path, tmp_path: Path
) -> None:
    # A cloned repository's AGENTS.md (or skill) as a link to the user's Crank config,
    # which may hold a provider key: trusting the workspace must not put it in the prompt.
    secret = write(tmp_path / "home" / "config.json", '{"provider": {"apiKey": "sk-secret"}}')
    (project / "services" / "web" / "AGENTS.md").unlink()
    (project / "services" / "web" / "AGENTS.md").symlink_to(secret)
    skill = project / ".crank" / "skills" / "leak"
    skill.mkdir(parents=True)
    outside_skill = write(tmp_path / "home" / "SKILL.md", skill_text("leak", "sk-secret"))
    (skill / "SKILL.md").symlink_to(outside_skill)
    inputs = load_inputs(locations(project, project / "services" / "web"))
    assert all("sk-secret" not in c.text for c in inputs.context_files)
    assert inputs.skills == ()
    reasons = {Path(s["path"]).name: s["reason"] for s in inputs.skipped}
    assert "outside the workspace" in reasons["AGENTS.md"]
    assert "outside the workspace" in reasons["SKILL.md"]


def test_an_oversized_context_file_is_left_out_without_reading_it(project: Path) -> None:
    """A 2 GB AGENTS.md (sparse here) is refused from its size, not read into memory."""
    with (project / "AGENTS.md").open("wb") as handle:
        handle.truncate(2 * 1024**3)
    skill = write(project / ".crank" / "skills" / "big" / "SKILL.md", skill_text("big", "Big."))
    with skill.open("a") as handle:
        handle.write("x" * (MAX_FILE_BYTES + 1))
    loaded = load_inputs(locations(project))
    assert [c.path for c in loaded.context_files] == []
    assert not loaded.skills
    reasons = {s["path"]: s.get("reason", "") for s in loaded.skipped}
    assert "2,147,483,648 bytes, over the 256 KiB limit" in reasons[str(project / "AGENTS.md")]
    assert "over the 256 KiB limit" in reasons[str(skill)]


def test_a_fifo_in_place_of_a_skill_does_not_block(project: Path) -> None:
    """A FIFO named SKILL.md would block a plain open for ever (nobody writes to it):
    the listing passes over it, and the read would refuse it if it came in between."""
    folder = project / ".crank" / "skills" / "pipe"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "SKILL.md")
    loaded: list[object] = []
    worker = threading.Thread(target=lambda: loaded.append(load_inputs(locations(project))))
    worker.start()
    worker.join(120)  # a hang guard, not a timing: the load takes milliseconds
    assert loaded, "the loader blocked on a FIFO"
