"""Prompt templates and hidden skills: parsing, argument substitution, loading with
trust and overrides, on real files in tmp_path."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
from prompt_helpers import read_tool

from crank.prompt import PromptLocations, compute_prompt, load_inputs, skill_body
from crank.prompt.builder import HIDDEN
from crank.prompt.loader import UNTRUSTED, parse_skill
from crank.prompt.templates import expand_template, parse_template, split_arguments


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def locations(root: Path, *, trusted: bool = True) -> PromptLocations:
    return PromptLocations(root, root, trusted, user_dir=root.parent / "user-config")


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        ("Fix $1 then $2.", "a.py b.py", "Fix a.py then b.py."),
        ("Fix $1 then $2.", "a.py", "Fix a.py then ."),
        ("Do: $@", "  x  'y z'  ", "Do: x  'y z'"),
        ("Do: $ARGUMENTS!", "one two", "Do: one two!"),
        ("Quoted: $1|$2", '"two words" last', "Quoted: two words|last"),
        ("Unbalanced: $2", "it's fine", "Unbalanced: fine"),
        ("Price $$5 and $10", " ".join(str(n) for n in range(1, 11)), "Price $5 and 10"),
        ("No placeholders.", "extra words", "No placeholders.\n\nextra words"),
        ("No placeholders.", "", "No placeholders."),
        ("Only $$ money.", "given", "Only $ money.\n\ngiven"),
        ("$ARGUMENTSX stays", "a", "$ARGUMENTSX stays\n\na"),
    ],
)
def test_substitution(body: str, args: str, expected: str) -> None:
    assert expand_template(body, args) == expected


def test_arguments_split_like_a_shell_and_fall_back_on_bad_quotes() -> None:
    assert split_arguments('a "b c" d') == ["a", "b c", "d"]
    assert split_arguments("it's here") == ["it's", "here"]


def test_a_template_with_and_without_front_matter(tmp_path: Path) -> None:
    plain = parse_template(tmp_path / "fix.md", "\n# Fix the build\n\nRun it and fix $1.\n")
    assert not isinstance(plain, str)
    assert plain.name == "fix" and plain.description == "Fix the build"
    assert plain.body == "# Fix the build\n\nRun it and fix $1." and plain.argument_hint is None
    fancy = parse_template(
        tmp_path / "t.md", "---\ndescription: Do it\nargument-hint: FILE\n---\nBody $1\n"
    )
    assert not isinstance(fancy, str)
    assert (fancy.description, fancy.argument_hint, fancy.body) == ("Do it", "FILE", "Body $1")


@pytest.mark.parametrize(
    ("name", "text", "complaint"),
    [
        ("a b.md", "Body", "cannot be typed as a command"),
        ("x:y.md", "Body", "cannot be typed as a command"),
        ("e.md", "\n\n", "the template is empty"),
        ("f.md", "---\ndescription: [1, 2]\n---\nBody", "'description' must be a string"),
        ("g.md", "---\ndescription: x\n", "not closed"),
    ],
)
def test_bad_templates_are_reasons(tmp_path: Path, name: str, text: str, complaint: str) -> None:
    parsed = parse_template(tmp_path / name, text)
    assert isinstance(parsed, str) and complaint in parsed


def test_templates_user_then_project_project_wins_and_trust_gates(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    user = tmp_path / "user-config" / "prompts"
    write(user / "fix.md", "User fix $1")
    write(user / "mine.md", "Only mine")
    write(root / ".crank" / "prompts" / "fix.md", "Project fix $1")
    write(root / ".crank" / "prompts" / "notes.txt", "not a template")
    write(root / ".crank" / "prompts" / "bad name.md", "Body")
    trusted = load_inputs(locations(root))
    assert [(t.name, t.body) for t in trusted.templates] == [
        ("fix", "Project fix $1"),
        ("mine", "Only mine"),
    ]
    assert any("overridden" in s.get("reason", "") for s in trusted.skipped)
    assert any("bad name.md" in problem for problem in trusted.problems)
    untrusted = load_inputs(locations(root, trusted=False))
    assert [(t.name, t.body) for t in untrusted.templates] == [
        ("fix", "User fix $1"),
        ("mine", "Only mine"),
    ]
    reasons = {s["path"]: s.get("reason") for s in untrusted.skipped}
    assert reasons[str(root / ".crank" / "prompts" / "fix.md")] == UNTRUSTED


def test_a_project_template_linking_outside_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    secret = write(tmp_path / "secret.txt", "the key")
    (root / ".crank" / "prompts").mkdir(parents=True)
    (root / ".crank" / "prompts" / "leak.md").symlink_to(secret)
    assert load_inputs(locations(root)).templates == ()


async def test_a_hidden_skill_is_loaded_but_not_in_the_index(tmp_path: Path) -> None:
    root = tmp_path / "shop"
    write(
        root / ".crank" / "skills" / "release" / "SKILL.md",
        "---\nname: release\ndescription: Cut a release\nhidden: true\n---\n\nTag it.\n\n",
    )
    write(
        root / ".crank" / "skills" / "review" / "SKILL.md",
        "---\nname: review\ndescription: Review code\n---\nRead it.\n",
    )
    build = await compute_prompt([read_tool()], locations(root), datetime.date(2026, 12, 1))
    assert [(s.name, s.hidden) for s in build.skills] == [("release", True), ("review", False)]
    assert "review: Review code" in build.prompt.text
    assert "release" not in build.prompt.text
    reasons = [s.get("reason") for s in build.prompt.sources if "release" in s.get("path", "")]
    assert reasons == [HIDDEN]
    assert skill_body(build.skills[0]) == "Tag it."


def test_hidden_must_be_a_boolean(tmp_path: Path) -> None:
    text = "---\nname: a\ndescription: b\nhidden: yes please\n---\nBody\n"
    assert parse_skill(tmp_path / "SKILL.md", text) == "front matter 'hidden' must be true or false"
