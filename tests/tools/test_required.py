"""A security suite whose requirement is missing is skipped on a developer's machine and
fails in CI (``CI`` set), never skipped in silence there (tests/support/required.py)."""

from __future__ import annotations

from typing import Any

import pytest

import tests.conftest as suite
import tests.support.required as required


class _Item:
    def __init__(self, *names: str) -> None:
        self.mark = pytest.mark.requires(*names).mark

    def iter_markers(self, name: str) -> Any:
        return iter([self.mark] if name == "requires" else [])


def test_a_missing_requirement_fails_in_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(required.NEEDS, "gone", lambda: "gone is not installed")
    item: Any = _Item("gone")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must run"):
        suite.pytest_runtest_setup(item)
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="gone is not installed"):
        suite.pytest_runtest_setup(item)
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception):
        suite.pytest_runtest_setup(item)


def test_a_present_requirement_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(required.NEEDS, "here", lambda: None)
    monkeypatch.setenv("CI", "true")
    item: Any = _Item("here")
    suite.pytest_runtest_setup(item)  # neither skipped nor failed


def test_the_security_suites_declare_what_they_need() -> None:
    from tests.security import test_chaos
    from tests.tools import test_sandbox

    assert test_chaos.pytestmark.mark.name == "requires"
    assert test_chaos.pytestmark.mark.args == ("sandbox",)
    assert test_sandbox.needs_bwrap.mark.args == ("sandbox",)
