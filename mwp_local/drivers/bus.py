"""The Sandbox's use of the delivery bus: one session per agent, outages, offline buffers.

``BusDriver`` connects every agent runtime to a ``DeliveryBus`` through a ``BusClient``,
publishes what the Group log commits, and runs delivery rounds. Through a Group-service outage
it has each Worker go offline (``offline.go_offline``: buffer progress of already-active
reversible work, stop the rest) and, once the service is back, hands the Sandbox the buffered
Commands to rebase and submit before any agent acts again (MWP-WRK-020/021). Group Snapshots
are signed with the Organization's Group Authority key. No I/O beyond what the runtimes do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents.bus_client import BusClient
from ..agents.runtime import AgentRuntime
from ..agents.worker.offline import Buffered, Stopped, go_offline
from ..authority.organization import Organization
from ..delivery.bus import DeliveryBus
from ..delivery.config import DeliveryConfig, Window
from ..delivery.snapshots import SnapshotBundle, build_snapshot


@dataclass
class OfflineRecord:
    """What happened around one outage."""

    outage: Window
    buffered: list[Buffered] = field(default_factory=list)
    stopped: list[Stopped] = field(default_factory=list)


class BusDriver:
    """The delivery bus as the Sandbox drives it."""

    def __init__(self, org: Organization, config: DeliveryConfig, *, seed: int) -> None:
        self.org = org
        self.config = config
        self.bus = DeliveryBus(
            config,
            seed=seed,
            organization_id=org.organization_id,
            make_snapshot=self._snapshot,
        )
        self.clients: dict[str, BusClient] = {}
        self.outages: list[OfflineRecord] = []
        #: Buffered Commands waiting for the service to come back, in order.
        self.reconcile: list[Buffered] = []

    def _snapshot(
        self, group_id: str, events: Sequence[dict[str, Any]], created_at: str
    ) -> SnapshotBundle:
        return build_snapshot(
            self.org, group_id, events, created_at, online_window=self.config.online_window or 0
        )

    def attach(self, runtime: AgentRuntime, now_us: int) -> BusClient:
        """Connect ``runtime`` (a restarted agent replaces its old session)."""
        client = BusClient(runtime, fetch=self.bus.snapshot)
        self.clients[runtime.member.id] = client
        self.bus.attach(client, now_us)
        return client

    def publish(self, events: Sequence[str | dict[str, Any]], now_us: int) -> None:
        """Committed Events (each its canonical JSON text, or a document): into the online
        window, then one delivery round."""
        self.enqueue(events, now_us)
        self.bus.pump(now_us)

    def enqueue(self, events: Sequence[str | dict[str, Any]], now_us: int) -> None:
        """Committed Events into the online window and the sessions' queues, without a
        delivery round (threads mode: each agent's thread pumps its own session)."""
        self.bus.publish(events, now_us)

    def pump(self, now_us: int) -> int:
        """One delivery round (during an outage every session is down: nothing moves)."""
        return self.bus.pump(now_us)

    def pump_agent(self, agent_id: str, now_us: int) -> int:
        """One delivery round for one agent's session (it calls only that agent's runtime)."""
        return self.bus.pump_session(agent_id, now_us)

    def outage(self, now_us: int) -> Window | None:
        """The Group-service outage in force at ``now_us``."""
        return self.config.outage_at(now_us)

    def go_offline(self, runtimes: Sequence[AgentRuntime], outage: Window) -> OfflineRecord:
        """Every session drops; each Worker buffers what it may continue offline."""
        self.bus.pump(outage.at_us)  # the bus notices the outage: sessions are down
        record = self.offline_record(outage)
        for runtime in runtimes:
            self.went_offline(outage, *go_offline(runtime, outage))
        return record

    def offline_record(self, outage: Window) -> OfflineRecord:
        """The record of ``outage`` (made the first time an agent goes offline for it)."""
        record = next((o for o in self.outages if o.outage is outage), None)
        if record is None:
            record = OfflineRecord(outage=outage)
            self.outages.append(record)
        return record

    def went_offline(
        self, outage: Window, buffered: Sequence[Buffered], stopped: Sequence[Stopped]
    ) -> None:
        """Record what one agent buffered and stopped at ``outage``; its buffered Commands
        join the ones to reconcile when the service is back."""
        record = self.offline_record(outage)
        record.buffered += buffered
        record.stopped += stopped
        self.reconcile += buffered

    def settle(self, now_us: int, *, max_rounds: int = 100_000) -> int:
        """Keep delivering (virtual time moving from wakeup to wakeup, no agent acting) until
        every agent has acknowledged everything; returns the time reached."""
        at = now_us
        for _ in range(max_rounds):
            self.pump(at)
            if self.bus.settled():
                return at
            later = self.bus.next_wakeup(at)
            if later is None:
                break
            at = later
        raise RuntimeError("the delivery bus did not settle")

    def summary(self) -> dict[str, int]:
        """Counts for a run summary: frames and faults, restores, offline reconciliation."""
        stats = self.bus.stats
        return {
            "EVENT frames": stats.frames.get("EVENT", 0),
            "duplicates": stats.duplicates,
            "reordered rounds": stats.reorders,
            "delays": stats.delays,
            "drops": stats.drops,
            "redeliveries": stats.redeliveries,
            "disconnects": stats.disconnects,
            "CURSOR_TOO_OLD": stats.cursor_too_old,
            "snapshot restores": sum(
                1 for c in self.clients.values() for r in c.restorations if r.refused is None
            ),
            "BACKPRESSURE": stats.backpressure,
            "offline buffered": sum(len(o.buffered) for o in self.outages),
        }

    def next_wakeup(self, now_us: int) -> int | None:
        """When the bus next has something to do."""
        return self.bus.next_wakeup(now_us)


__all__ = ["BusDriver", "OfflineRecord"]
