"""A delivery bus driven by hand: make one, publish Events and run delivery rounds until it
settles, watch a consumer that never acknowledges, judge a frame.

``new_bus`` makes a ``DeliveryBus`` whose Group Snapshots are signed with the Organization's
Group Authority key; ``drive`` publishes Events a few at a time and runs delivery rounds until
every session has acknowledged everything (virtual time jumps from wake-up to wake-up: no
sleeping); ``Slow`` is a receiver that records frames and never acknowledges (backpressure);
``schema_verdict`` is a frame's verdict against ``websocket-frame.schema.json``. Used by
notebook 07 (``mwp_local.notebook.delivery``) and the delivery tests.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..authority.organization import Organization
from ..protocol.documents import validate
from ..protocol.errors import ProtocolError
from . import frames
from .bus import DeliveryBus
from .config import DeliveryConfig
from .snapshots import SnapshotBundle, build_snapshot

#: 2026-07-15T09:00:00Z, when the sample missions start (µs), and one second.
T0 = 1_784_106_000_000_000
SECOND = 1_000_000


def new_bus(org: Organization, config: DeliveryConfig, *, seed: int = 1) -> DeliveryBus:
    """A delivery bus whose Group Snapshots are signed with ``org``'s Group Authority key."""

    def snapshot(group: str, events: Sequence[dict[str, Any]], at: str) -> SnapshotBundle:
        return build_snapshot(org, group, events, at, online_window=config.online_window or 0)

    return DeliveryBus(
        config, seed=seed, organization_id=org.organization_id, make_snapshot=snapshot
    )


@dataclass
class Slow:
    """A consumer that records frames and never acknowledges."""

    agent_id: str
    frames: list[dict[str, Any]] = field(default_factory=list)

    def receive(
        self, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        self.frames.append(frame)
        return []

    def acknowledge(self, now_us: int) -> dict[str, Any] | None:
        return None

    def subscribe(self, now_us: int) -> dict[str, Any] | None:
        return None

    def by_group(self) -> dict[str, int]:
        """EVENT frames received per Group (short names)."""
        out: dict[str, int] = {}
        for f in self.frames:
            if f["frameType"] == "EVENT" and f["event"].get("groupId"):
                short = f["event"]["groupId"].rsplit(":", 1)[-1]
                out[short] = out.get(short, 0) + 1
        return out


def drive(
    bus: DeliveryBus, events: Sequence[dict[str, Any]], *, start: int = T0, chunk: int = 3
) -> int:
    """Publish ``events`` ``chunk`` at a time (one virtual second apart, a delivery round
    after each), then run rounds from wake-up to wake-up until every session has acknowledged
    everything; returns the virtual time reached."""
    now = start
    for i in range(0, len(events), chunk):
        bus.publish(copy.deepcopy(list(events[i : i + chunk])), now)
        bus.pump(now)
        now += SECOND
    for _ in range(100_000):
        bus.pump(now)
        if bus.settled():
            return now
        later = bus.next_wakeup(now)
        if later is None:
            break
        now = later
    raise RuntimeError("the bus did not settle")


def schema_verdict(frame: dict[str, Any]) -> str:
    """``valid`` or the section-19 error of ``websocket-frame.schema.json`` (our validators)."""
    try:
        validate(frames.FRAME_SCHEMA, frame)
    except ProtocolError as error:
        return f"{error.code.value}: {error.explanation}"
    return "valid"
