"""Suite-wide settings.

Hypothesis's deadline and its "input generation is slow" health check are clocks: on a
loaded machine (two cores shared with other work) they fail a property that holds. Speed
belongs in bench/, so the suite runs every property with neither; the properties and
their example counts are unchanged.

Suites that need the sandbox or ripgrep say so with ``@pytest.mark.requires(...)``:
skipped without it, and failed without it when ``CI`` is set (tests/support/required.py).
"""

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("crank", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("crank")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires(*names): needs the sandbox or rg (tests/support/required.py): skipped "
        "without it, failed without it in CI",
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    from tests.support.required import in_ci, missing

    for mark in item.iter_markers("requires"):
        why = missing(*mark.args)
        if why is None:
            continue
        if in_ci():
            pytest.fail(f"{why}; CI must run this suite (install it, see docs/tools.md)")
        pytest.skip(why)


@pytest.fixture(autouse=True)
def _own_data_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crank's data folder (the window cache, ...) is the test's own: a window one
    test's loopback server taught must not reach another test on the same port."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))
