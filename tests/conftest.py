"""Suite-wide settings.

Hypothesis's deadline and its "input generation is slow" health check are clocks: on a
loaded machine (two cores shared with other work) they fail a property that holds. Speed
belongs in bench/, so the suite runs every property with neither; the properties and
their example counts are unchanged.
"""

from hypothesis import HealthCheck, settings

settings.register_profile("crank", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("crank")
