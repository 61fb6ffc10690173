"""crank.workspace.commands alone: what a leading '/' means, the list's order, the
skill wrapper, refusals, and built-ins performed on a stand-in host."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from crank.prompt import PromptTemplate, Skill
from crank.workspace import CrankError
from crank.workspace.commands import (
    CommandCatalog,
    Invocation,
    describe,
    parse_command,
    perform,
)
from crank.workspace.errors import CODES


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/compact", Invocation("compact", "", "/compact")),
        (
            "/skill:review  src/ lib/ ",
            Invocation("skill:review", "src/ lib/", "/skill:review  src/ lib/ "),
        ),
        ("/fix-tests\n12", Invocation("fix-tests", "12", "/fix-tests\n12")),
        ("/a.b_c-d:e x", Invocation("a.b_c-d:e", "x", "/a.b_c-d:e x")),
        ("//compact", "/compact"),
        ("//", "/"),
        ("/etc/hosts is odd", "/etc/hosts is odd"),
        ("/tmp/x", "/tmp/x"),
        ("/", "/"),
        ("/ spaced", "/ spaced"),
        ("hello /compact", "hello /compact"),
        (" /compact", " /compact"),
        ("/naïve", "/naïve"),
    ],
)
def test_parse(text: str, parsed: Invocation | str) -> None:
    assert parse_command(text) == parsed


def skill(tmp_path: Path, name: str, *, hidden: bool = False, body: str = "Do it.") -> Skill:
    path = tmp_path / name / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: about {name}\n---\n{body}\n", "utf-8")
    return Skill(name, f"about {name}", str(path), hidden)


def template(name: str, body: str = "T $1") -> PromptTemplate:
    return PromptTemplate(name, f"about {name}", f"/p/{name}.md", body)


def test_the_list_is_builtins_skills_templates_each_by_name(tmp_path: Path) -> None:
    catalog = CommandCatalog(
        [skill(tmp_path, "zeta"), skill(tmp_path, "alpha"), skill(tmp_path, "hush", hidden=True)],
        [template("b"), template("a"), template("compact"), template("new")],
    )
    names = [(c.name, c.kind) for c in catalog.commands()]
    assert names == [
        ("compact", "builtin"),
        ("model", "builtin"),
        ("new", "builtin"),
        ("undo", "builtin"),
        ("skill:alpha", "skill"),
        ("skill:zeta", "skill"),
        ("a", "template"),
        ("b", "template"),
    ]
    assert len(catalog.problems) == 2 and "/compact is a built-in" in catalog.problems[0]
    assert catalog.to_json()["commands"][1] == {
        "name": "model",
        "description": "List the models, or switch to one",
        "kind": "builtin",
        "argumentHint": "[api/id]",
    }
    hidden = catalog.expand(Invocation("skill:hush", "", "/skill:hush"))
    assert "Do it." in hidden.text


def test_a_skill_is_wrapped_and_read_fresh(tmp_path: Path) -> None:
    review = skill(tmp_path, "review", body="Look for bugs.")
    catalog = CommandCatalog([review])
    Path(review.path).write_text("---\nname: review\ndescription: x\n---\nLook harder.\n", "utf-8")
    out = catalog.expand(Invocation("skill:review", "src/", "/skill:review src/"))
    assert out.typed == "/skill:review src/"
    assert out.text == (
        f'<skill name="review" path="{review.path}">\n'
        f'The user invoked the skill "review" by hand: follow the instructions below. '
        f"Relative paths in them are relative to {Path(review.path).parent}.\n\n"
        "Look harder.\n</skill>\n\nsrc/"
    )
    Path(review.path).unlink()
    with pytest.raises(CrankError) as gone:
        catalog.expand(Invocation("skill:review", "", "/skill:review"))
    assert "cannot be used" in gone.value.message


def test_unknown_names_are_refused_with_the_list(tmp_path: Path) -> None:
    catalog = CommandCatalog([skill(tmp_path, "review")], [template("fix")])
    for name in ("skill:nope", "nope", "skill:fix"):
        with pytest.raises(CrankError) as refused:
            catalog.expand(Invocation(name, "", "/" + name))
        assert refused.value.kind == "unknown_command" and CODES["unknown_command"] == 1008
        assert f"unknown command /{name};" in refused.value.message
        assert "/compact, /model, /new, /undo, /skill:review, /fix" in refused.value.message
        assert f"//{name} sends /{name}" in refused.value.message


class Host:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def compact(self, instructions: str | None) -> dict[str, Any]:
        self.calls.append(("compact", instructions))
        return {"compacted": True, "tokensBefore": 10, "tokensAfter": 2}

    def new_session(self) -> dict[str, Any]:
        self.calls.append(("new",))
        return {"sessionId": "s2"}

    async def models(self) -> dict[str, Any]:
        return {"models": [{"api": "openai", "id": "m"}]}

    async def set_model(self, api: str, model_id: str) -> dict[str, Any]:
        self.calls.append(("model", api, model_id))
        return {"model": {"api": api, "id": model_id}}

    def current_api(self) -> str:
        return "anthropic"


async def test_builtins_call_their_methods() -> None:
    host = Host()
    assert await perform(host, Invocation("compact", "keep paths", "")) == {
        "compacted": True,
        "tokensBefore": 10,
        "tokensAfter": 2,
    }
    await perform(host, Invocation("compact", "", ""))
    await perform(host, Invocation("new", "", ""))
    await perform(host, Invocation("model", "openai/gpt-x", ""))
    await perform(host, Invocation("model", "claude-y", ""))
    assert host.calls == [
        ("compact", "keep paths"),
        ("compact", None),
        ("new",),
        ("model", "openai", "gpt-x"),
        ("model", "anthropic", "claude-y"),
    ]
    listed = await perform(host, Invocation("model", "", ""))
    assert describe("model", listed) == "Models (switch with /model api/id):\n- openai/m"
    for bad in (
        Invocation("new", "now", ""),
        Invocation("model", "a b", ""),
        Invocation("model", "x/", ""),
    ):
        with pytest.raises(CrankError) as refused:
            await perform(host, bad)
        assert refused.value.kind == "invalid_params"
    assert describe("compact", {"compacted": False, "reason": "empty"}) == (
        "Nothing was compacted: empty."
    )
