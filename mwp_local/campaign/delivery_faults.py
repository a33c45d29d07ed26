"""The delivery-bus half of a fault schedule: reordering, delays and duplicates, disconnects
and Group-service outages, as the mission file's ``[delivery]`` table (``DeliveryConfig``).

Returns None when the schedule has no delivery fault (the Sandbox then delivers directly) or
when the sandbox has no delivery bus yet (the kinds are then reported as not applied).
"""

from __future__ import annotations

from typing import Any

from .schedule import Schedule, bus_available


def delivery_config(schedule: Schedule, start_us: int) -> Any | None:
    """The ``DeliveryConfig`` of the schedule's delivery faults, or None."""
    faults = [
        f for f in schedule.faults if f.kind in ("reordered_delivery", "disconnect", "group_outage")
    ]
    if not faults or not bus_available():
        return None
    from ..delivery.config import DeliveryConfig, Window

    def window(params: dict[str, Any], agent: str | None, grace_s: int = 0) -> Window:
        at = start_us + params["at_s"] * 1_000_000
        return Window(
            at_us=at,
            until_us=at + params["for_s"] * 1_000_000,
            agent=agent,
            grace_us=grace_s * 1_000_000,
        )

    shuffle = [f.params for f in faults if f.kind == "reordered_delivery"]
    return DeliveryConfig(
        reorder=max((p["reorder"] for p in shuffle), default=0.0),
        delay=max((p["delay"] for p in shuffle), default=0.0),
        duplicate=max((p["duplicate"] for p in shuffle), default=0.0),
        disconnects=tuple(
            window(f.params, f.params["agent"]) for f in faults if f.kind == "disconnect"
        ),
        outages=tuple(
            window(f.params, None, f.params["grace_s"]) for f in faults if f.kind == "group_outage"
        ),
    )
