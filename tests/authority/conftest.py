"""Every Event any Authority test produces is checked after the test (``world``'s shared
fixture)."""

from .world import every_event_is_official_and_verifies  # noqa: F401  (an autouse fixture)
