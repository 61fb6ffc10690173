"""Suite-wide settings.

Hypothesis's deadline and its "input generation is slow" health check are clocks: on a
loaded machine (two cores shared with other work) they fail a property that holds. Speed
belongs in bench/, so the suite runs every property with neither; the properties and
their example counts are unchanged.
"""

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("crank", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("crank")


@pytest.fixture(autouse=True)
def _own_data_folder(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crank's data folder (the window cache, ...) is the test's own: a window one
    test's loopback server taught must not reach another test on the same port."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))
