"""The delivery bus shared by the agent threads of threads mode (§11.5, §16, §17).

``SharedBus`` wraps the Sandbox's ``BusDriver`` with one lock: every use of the bus (publishing
what the Group log committed, a delivery round, a wake-up time, the offline records) happens
under it, so the bus and its fault generator are never used by two threads at once. A thread
commits to the Group log and publishes what it committed under that lock too (``committing``),
so Events reach the bus in log order. A delivery round for an agent (``pump``) calls only that
agent's runtime, and each agent's thread pumps its own session, so a runtime is still touched by
its own thread only; the faults of a frame are drawn by the same bus code as in step mode.

Group-service outages follow step mode. Each agent's thread, once its clock reaches an outage,
takes a last delivery round just before it (what was due before contact was lost, as step mode
delivers it) and has its own runtime go offline (``offline.go_offline``: buffer signed progress
of already-active reversible work, stop the rest) and records it here; until the outage ends
the agent neither acts nor is served. Afterwards each agent first reconciles what it buffered
(the Commands are rebased by its runtime and submitted), and no agent acts before every agent
has gone offline for the outage and every buffered Command was submitted (``held``). The time
Commands carry is read by the thread before it acts, so none carries a time inside the outage.

The lock is never held while waiting, and the only lock taken under it is the Group log's (while
committing); ``wake`` (called after every change, outside the lock) lets the driver rouse its
waiting agent threads. No clock reads: the caller supplies the time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..agents.runtime import AgentRuntime
from ..agents.worker.offline import Buffered, go_offline
from ..delivery.config import Window
from .bus import BusDriver


class SharedBus:
    """``driver`` as several threads use it; ``agents`` are the Agent IDs of every runtime
    taking part (each must go offline for an outage before anyone acts after it)."""

    def __init__(
        self, driver: BusDriver, agents: Iterable[str], *, wake: Callable[[], None]
    ) -> None:
        self.driver = driver
        self.agents = frozenset(agents)
        self.wake = wake
        self._lock = threading.Lock()
        # Outages already handled (by step mode before the threads started) count as offline
        # for everyone; what they buffered and was not reconciled yet stays in the driver.
        self._offline: dict[int, set[str]] = {
            id(record.outage): set(self.agents) for record in driver.outages
        }

    # ------------------------------------------------------------------ delivery

    @contextmanager
    def committing(self) -> Iterator[Callable[[Sequence[str | dict[str, Any]], int], None]]:
        """Hold the bus while the caller commits to the Group log and publishes (with the
        function this yields) what it committed: Events reach the bus in log order, so each
        Group's sequences arrive contiguously, as the online window needs."""
        published: list[int] = []

        def publish(events: Sequence[str | dict[str, Any]], now_us: int) -> None:
            if events:
                self.driver.enqueue(events, now_us)
                published.append(len(events))

        with self._lock:
            yield publish
        if published:
            self.wake()

    def pump(self, runtime: AgentRuntime, now_us: int) -> int:
        """One delivery round for ``runtime``'s session; call it from ``runtime``'s thread."""
        with self._lock:
            return self.driver.pump_agent(runtime.member.id, now_us)

    def next_wakeup(self, runtime: AgentRuntime, now_us: int) -> int | None:
        """When ``runtime``'s session next has something to do."""
        with self._lock:
            return self.driver.bus.next_wakeup(now_us, runtime.member.id)

    # ------------------------------------------------------------------ outages

    def outage(self, now_us: int) -> Window | None:
        """The Group-service outage in force at ``now_us``."""
        return self.driver.outage(now_us)

    def go_offline(self, runtime: AgentRuntime, now_us: int) -> None:
        """Have ``runtime`` go offline for every outage begun by ``now_us`` that it has not
        gone offline for yet; call it from ``runtime``'s thread."""
        agent = runtime.member.id
        for outage in self.driver.config.outages:
            if outage.at_us > now_us:
                continue
            with self._lock:
                if agent in self._offline.get(id(outage), set()):
                    continue
            with self._lock:  # what was due before contact was lost still arrives
                self.driver.pump_agent(agent, outage.at_us - 1)
            buffered, stopped = go_offline(runtime, outage)
            with self._lock:
                self.driver.went_offline(outage, buffered, stopped)
                self._offline.setdefault(id(outage), set()).add(agent)
            self.wake()

    def to_reconcile(self, runtime: AgentRuntime, now_us: int) -> list[Buffered]:
        """What ``runtime`` buffered during outages that have ended by ``now_us``, in order."""
        with self._lock:
            return [
                b
                for b in self.driver.reconcile
                if b.agent == runtime.name and self._ended(b, now_us)
            ]

    def _ended(self, buffered: Buffered, now_us: int) -> bool:
        return any(
            record.outage.until_us <= now_us and any(b is buffered for b in record.buffered)
            for record in self.driver.outages
        )

    def reconciled(self, buffered: Buffered) -> None:
        """``buffered`` was rebased and submitted (accepted or refused)."""
        with self._lock:
            self.driver.reconcile = [b for b in self.driver.reconcile if b is not buffered]
        self.wake()

    def held(self, now_us: int) -> bool:
        """Whether agents must not act yet: an outage is in force, or one has ended but not
        every agent has gone offline for it or buffered progress is not reconciled yet."""
        if self.driver.outage(now_us) is not None:
            return True
        with self._lock:
            for outage in self.driver.config.outages:
                if outage.until_us > now_us:
                    continue
                if self._offline.get(id(outage), set()) != set(self.agents):
                    return True
            return bool(self.driver.reconcile)


__all__ = ["SharedBus"]
