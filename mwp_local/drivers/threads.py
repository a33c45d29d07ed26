"""Threads mode: every agent in its own thread against a scaled wall clock, so real races
happen (urgent offers to several Workers at once, leases expiring under load).

Each agent thread owns its runtime: no runtime (and no Worker's local store) is touched by two
threads. Events reach it one of two ways:

* **direct** (no delivery bus): Events committed by anyone are queued to the mailbox of every
  agent that may receive them (``delivery.audience``: a Group's Events to its members only)
  and folded by the agent's own thread before it decides;
* **through the delivery bus** (the mission file's ``[delivery]`` table): committed Events are
  published to the shared bus (``delivery.threaded.SharedBus``, one lock around it) and each
  agent's thread runs the delivery rounds of its own session (frames, faults, ``ACK``,
  ``CURSOR_TOO_OLD`` restores) before it decides. Through a Group-service outage the thread has
  its agent go offline and neither acts nor is served; afterwards it reconciles what its agent
  buffered before anything else, and no agent acts until every buffered Command is in (§11.5).

Before deciding, the thread lets the driver serve the agent's slots (``serve``: capability
tokens, external operations). A Worker's local projections are group-committed: the thread
commits them when its agent goes idle (at most every ``FLUSH_EVERY_S``) and when the run ends,
rather than before each action. A timer thread lets leases expire (not while the Group service
is down). Any exception in any thread stops the run and is re-raised in the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from ..agents.base import Intent
from ..agents.runtime import AgentRuntime
from ..authority import Accepted
from ..authority.pipeline import Outcome
from ..delivery.audience import DirectFeed
from ..store.group_log import GroupLog
from .bus import BusDriver
from .clock import ScaledClock, timestamp
from .threaded_bus import SharedBus

#: The longest a thread waits (real seconds) before it looks at the clock and the stop flag.
MAX_WAIT_S = 0.05
#: An idle agent commits its local projections at most this often (real seconds): every Event
#: wakes every agent, and one local commit per agent per Event would cost more than the
#: actions (a Worker's commit also writes the Group log's staged tail first). What waits is
#: bounded by this, by ``runtime.MAX_PENDING`` and by the run's end (``benchmarks/NOTES.md``
#: has what shorter intervals cost).
FLUSH_EVERY_S = 2.0


@dataclass
class _Mailbox:
    #: The canonical JSON text of each Event committed since the agent last looked.
    events: list[str] = field(default_factory=list)
    #: Something changed for the agent (the bus has new frames, an outage moved on).
    poked: bool = False
    cond: threading.Condition = field(default_factory=threading.Condition)


class ThreadedRun:
    """Runs ``runtimes`` against ``log`` until ``done()`` or ``timeout_s`` real seconds; with
    ``delivery`` every Event goes through that delivery bus."""

    def __init__(
        self,
        log: GroupLog,
        runtimes: list[AgentRuntime],
        clock: ScaledClock,
        done: Callable[[], bool],
        on_blobs: Callable[[dict[str, bytes]], None],
        *,
        serve: Callable[[AgentRuntime, int], None] | None = None,
        delivery: BusDriver | None = None,
        feed: DirectFeed | None = None,
    ) -> None:
        self.log = log
        self.runtimes = runtimes
        self.clock = clock
        self.done = done
        self.on_blobs = on_blobs
        self.serve = serve
        self.mail = {id(r): _Mailbox() for r in runtimes}
        #: Without a bus: a Group's Events reach its members' mailboxes only.
        self.feed = feed if feed is not None else DirectFeed()
        self.bus: SharedBus | None = None
        if delivery is not None:
            self.bus = SharedBus(delivery, (r.member.id for r in runtimes), wake=self._poke)
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.actions = 0
        self._count = threading.Lock()

    # ------------------------------------------------------------------ plumbing

    def _poke(self) -> None:
        for box in self.mail.values():
            with box.cond:
                box.poked = True
                box.cond.notify()

    def _broadcast(self, outcome: Accepted) -> None:
        with self.feed.lock:
            self.feed.publish([record.document for record in outcome.events])
            for runtime in self.runtimes:
                events = self.feed.take(runtime.member.id)
                if not events:
                    continue
                box = self.mail[id(runtime)]
                with box.cond:
                    box.events.extend(events)
                    box.cond.notify()

    def _submit(self, data: bytes, now_us: int) -> Outcome:
        """Submit a Command and hand its Events on (to the bus in log order, or to every
        mailbox)."""
        at = timestamp(now_us)
        if self.bus is None:
            outcome = self.log.submit(data, at)
            if isinstance(outcome, Accepted):
                self._broadcast(outcome)
            return outcome
        with self.bus.committing() as publish:
            outcome = self.log.submit(data, at)
            if isinstance(outcome, Accepted):
                publish([record.document for record in outcome.events], now_us)
        return outcome

    def _tick(self, now_us: int) -> None:
        """Let leases expire (not while the Group service is down)."""
        at = timestamp(now_us)
        if self.bus is None:
            for outcome in self.log.tick(at):
                self._broadcast(outcome)
            return
        if self.bus.outage(now_us) is not None:
            return
        with self.bus.committing() as publish:
            for outcome in self.log.tick(at):
                publish([record.document for record in outcome.events], now_us)

    def _receive(self, runtime: AgentRuntime, now_us: int) -> None:
        """Fold what reached the agent: its mailbox, or a delivery round of its session."""
        box = self.mail[id(runtime)]
        with box.cond:
            pending, box.events, box.poked = box.events, [], False
        if pending:
            runtime.deliver(pending)
        if self.bus is not None:
            self.bus.pump(runtime, now_us)

    def _wait(self, runtime: AgentRuntime, wake: int | None, now_us: int) -> None:
        """Wait until poked, the stop flag, ``wake`` (simulated) or ``MAX_WAIT_S``."""
        box = self.mail[id(runtime)]
        if self.bus is not None:
            times = (wake, self.bus.next_wakeup(runtime, now_us))
            wake = min((t for t in times if t is not None), default=None)
        wait = MAX_WAIT_S
        if wake is not None:
            wait = min(wait, self.clock.real_seconds(wake - now_us))
        with box.cond:
            if not box.events and not box.poked and not self.stop.is_set():
                box.cond.wait(timeout=max(wait, 0.001))

    # ------------------------------------------------------------------ agent threads

    def _act(self, runtime: AgentRuntime, intent: Intent, now_us: int) -> None:
        """Sign and submit one Intent, publish its Events, tell the policy the outcome."""
        if intent.blobs:
            self.on_blobs(intent.blobs)
        outcome = self._submit(runtime.command(intent, timestamp(now_us).text), now_us)
        self._receive(runtime, now_us)  # read its own writes when they are already due
        runtime.outcome(intent, outcome, now_us)
        with self._count:
            self.actions += 1

    def _held(self, runtime: AgentRuntime, now_us: int) -> bool:
        """Through the bus, before the agent may act: go offline at an outage (and wait it
        out), else a delivery round and the reconciliation of what it buffered; True when it
        must not act now."""
        bus = self.bus
        if bus is None:
            return False
        bus.go_offline(runtime, now_us)
        outage = bus.outage(now_us)
        if outage is not None:  # nobody reaches the Group service: its session drops
            bus.pump(runtime, now_us)
            self._wait(runtime, outage.until_us, now_us)
            return True
        self._receive(runtime, now_us)
        reconcile = bus.to_reconcile(runtime, now_us)
        for buffered in reconcile:  # rebased and re-signed by the runtime, before anything else
            try:
                self._act(runtime, buffered.intent, now_us)
            finally:
                bus.reconciled(buffered)
        if reconcile:
            return True
        if bus.held(now_us):  # someone has not gone offline or reconciled yet
            self._wait(runtime, None, now_us)
            return True
        return False

    def _agent(self, runtime: AgentRuntime) -> None:
        acting = runtime.flush_before_acting
        runtime.flush_before_acting = False
        flushed = self.clock.now_us()
        try:
            while not self.stop.is_set():
                now = self.clock.now_us()
                if self._held(runtime, now):
                    continue
                if self.bus is None:
                    self._receive(runtime, now)
                if self.serve is not None:
                    self.serve(runtime, now)
                intents = runtime.intents(now)
                if intents:
                    self._act(runtime, intents[0], now)
                    continue
                if self.clock.real_seconds(now - flushed) >= FLUSH_EVERY_S:
                    runtime.flush()  # idle: commit what was released since the last commit
                    flushed = now
                self._wait(runtime, runtime.next_wakeup(now), now)
            runtime.flush()
        except BaseException as exc:  # surfaced in the caller
            self.errors.append(exc)
            self.stop.set()
        finally:
            runtime.flush_before_acting = acting

    # ------------------------------------------------------------------ timers and the run

    def _timers(self) -> None:
        try:
            while not self.stop.is_set():
                self._tick(self.clock.now_us())
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
        self._poke()
        for t in threads:
            t.join(timeout=10)
        if self.errors:
            raise self.errors[0]
        return finished and self.done()
