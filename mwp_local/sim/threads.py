"""Threads mode: every agent in its own thread against a scaled wall clock, so real races
happen (urgent offers to several Workers at once, leases expiring under load).

Each agent thread owns its runtime: Events committed by anyone are queued to it and folded by
its own thread before it decides, so no runtime is touched by two threads. A timer thread lets
leases expire. Any exception in any thread stops the run and is re-raised in the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..agents.runtime import AgentRuntime
from ..authority import Accepted
from ..group_log import GroupLog
from .clock import ScaledClock, timestamp


@dataclass
class _Mailbox:
    events: list[dict[str, Any]] = field(default_factory=list)
    cond: threading.Condition = field(default_factory=threading.Condition)


class ThreadedRun:
    """Runs ``runtimes`` against ``log`` until ``done()`` or ``timeout_s`` real seconds."""

    def __init__(
        self,
        log: GroupLog,
        runtimes: list[AgentRuntime],
        clock: ScaledClock,
        done: Callable[[], bool],
        on_blobs: Callable[[dict[str, bytes]], None],
    ) -> None:
        self.log = log
        self.runtimes = runtimes
        self.clock = clock
        self.done = done
        self.on_blobs = on_blobs
        self.mail = {id(r): _Mailbox() for r in runtimes}
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.actions = 0
        self._count = threading.Lock()

    def _broadcast(self, events: list[dict[str, Any]]) -> None:
        for box in self.mail.values():
            with box.cond:
                box.events.extend(events)
                box.cond.notify()

    def _agent(self, runtime: AgentRuntime) -> None:
        box = self.mail[id(runtime)]
        try:
            while not self.stop.is_set():
                with box.cond:
                    pending, box.events = box.events, []
                if pending:
                    runtime.deliver(pending)
                now = self.clock.now_us()
                intents = runtime.intents(now)
                if intents:
                    intent = intents[0]
                    if intent.blobs:
                        self.on_blobs(intent.blobs)
                    at = timestamp(now)
                    outcome = self.log.submit(runtime.command(intent, at.text), at)
                    if isinstance(outcome, Accepted):
                        self._broadcast(list(outcome.event_documents))
                    with box.cond:
                        pending, box.events = box.events, []
                    if pending:
                        runtime.deliver(pending)
                    runtime.outcome(intent, outcome, now)
                    with self._count:
                        self.actions += 1
                    continue
                wake = runtime.next_wakeup(now)
                wait = 0.05 if wake is None else min(0.05, self.clock.real_seconds(wake - now))
                with box.cond:
                    if not box.events and not self.stop.is_set():
                        box.cond.wait(timeout=max(wait, 0.001))
        except BaseException as exc:  # surfaced in the caller
            self.errors.append(exc)
            self.stop.set()

    def _timers(self) -> None:
        try:
            while not self.stop.is_set():
                accepted = self.log.tick(timestamp(self.clock.now_us()))
                for outcome in accepted:
                    self._broadcast(list(outcome.event_documents))
                if self.done():
                    self.stop.set()
                    break
                self.stop.wait(0.02)
        except BaseException as exc:
            self.errors.append(exc)
            self.stop.set()

    def run(self, timeout_s: float) -> bool:
        """Run; True when ``done()`` became true. Re-raises the first thread exception."""
        threads = [
            threading.Thread(target=self._agent, args=(r,), name=f"agent-{r.name}", daemon=True)
            for r in self.runtimes
        ]
        threads.append(threading.Thread(target=self._timers, name="timers", daemon=True))
        for t in threads:
            t.start()
        finished = self.stop.wait(timeout_s)
        self.stop.set()
        for box in self.mail.values():
            with box.cond:
                box.cond.notify_all()
        for t in threads:
            t.join(timeout=10)
        if self.errors:
            raise self.errors[0]
        return finished and self.done()
