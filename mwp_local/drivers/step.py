"""Step mode: one agent action at a time on a virtual clock, chosen by a seeded generator.

``StepDriver.step`` advances the virtual clock until some agent wants to act, lets that agent
act (sign its Intent, submit the Command, deliver the Events, tell it the outcome) and reports
the step: the Command, its Events or its rejection, and how the WorkItem or Mission it names
changed. Between actions it lets leases expire, runs the delivery bus's rounds (an outage takes
everyone offline; what was buffered is reconciled before anything else, §11.5) and serves the
agents' execution slots. The same seed gives the same interleaving, so the same log.

It is the step-mode twin of ``threads.ThreadedRun``; the Sandbox owns both and the things they
share (the log, the runtimes, the bus, the clock).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from ..agents.base import Intent
from ..agents.runtime import AgentRuntime
from ..authority import Accepted
from ..authority.pipeline import Outcome
from ..protocol.jsontext import parse_strict
from ..protocol.timestamps import format_utc
from ..store.group_log import GroupLog
from .bus import BusDriver
from .clock import VirtualClock, timestamp
from .reports import StepReport


class StepDriver:
    """Runs ``runtimes`` one action at a time against ``log`` on ``clock``."""

    def __init__(
        self,
        log: GroupLog,
        runtimes: Sequence[AgentRuntime],
        clock: VirtualClock,
        rng: random.Random,
        *,
        finished: Callable[[], bool],
        deliver: Callable[[list[str]], None],
        serve: Callable[[AgentRuntime, int], None],
        store_blobs: Callable[[dict[str, bytes]], None],
        delivery: BusDriver | None = None,
        horizon: Callable[[], int | None] | None = None,
    ) -> None:
        self.log = log
        self.runtimes = runtimes
        self.clock = clock
        self.rng = rng
        self.finished = finished
        self.deliver = deliver
        self.serve = serve
        self.store_blobs = store_blobs
        self.delivery = delivery
        #: The virtual instant the clock may not pass waiting for someone to act (None: no
        #: limit): a run in which nothing changes state stops there (``drivers.progress``).
        self.horizon = horizon
        #: Why the last ``step`` returned None without every Mission terminal: ``"idle"``
        #: (nobody will act again) or ``"quiet"`` (the horizon came first); None otherwise.
        self.stopped: str | None = None
        self.steps = 0
        self.history: list[StepReport] = []
        #: Ask every agent's policy at every step, even one that wanted nothing at this instant
        #: and whose view has not changed since (the plain path ``AgentRuntime.intents`` skips;
        #: tests compare the two).
        self.ask_every_agent = False

    def _runtime(self, name: str) -> AgentRuntime:
        return next(r for r in self.runtimes if r.name == name)

    def tick(self) -> None:
        """Let the leases that ran out expire, and deliver those Events."""
        for outcome in self.log.tick(timestamp(self.clock.now_us())):
            self.deliver([record.document for record in outcome.events])

    def step(self) -> StepReport | None:
        """Perform the next agent action (advancing virtual time as needed); None when every
        Mission is terminal, nobody will ever want to act again (``stopped`` is ``"idle"``), or
        the next action would come after the horizon (``"quiet"``)."""
        self.stopped = None
        while not self.finished():
            now = self.clock.now_us()
            if self.delivery is not None:
                outage = self.delivery.outage(now)
                if outage is not None:  # nobody reaches the Group service
                    if all(o.outage is not outage for o in self.delivery.outages):
                        self.delivery.go_offline(list(self.runtimes), outage)
                    self.clock.advance_to(outage.until_us)
                    continue
            self.tick()
            if self.delivery is not None:
                self.delivery.pump(now)
                if self.delivery.reconcile:  # reconcile before anything else (§11.5)
                    buffered = self.delivery.reconcile.pop(0)
                    return self.perform(self._runtime(buffered.agent), buffered.intent, now)
            for runtime in self.runtimes:
                self.serve(runtime, now)
            skip = not self.ask_every_agent
            ready = [(r, i) for r in self.runtimes if (i := r.intents(now, skip_idle=skip))]
            if ready:
                runtime, intents = ready[self.rng.randrange(len(ready))]
                return self.perform(runtime, intents[0], now)
            wakeups = [w for r in self.runtimes if (w := r.next_wakeup(now)) is not None]
            wakeups += [e for e in self.log.state.active_leases.values() if e > now]
            if self.delivery is not None:
                wakeups += [w for w in (self.delivery.next_wakeup(now),) if w is not None]
            future = [w for w in wakeups if w > now]
            if not future:
                self.stopped = "idle"
                return None
            limit = self.horizon() if self.horizon is not None else None
            if limit is not None and min(future) > limit:
                self.clock.advance_to(max(now, limit))
                self.stopped = "quiet"
                return None
            self.clock.advance_to(min(future))
        return None

    def perform(self, runtime: AgentRuntime, intent: Intent, now: int) -> StepReport:
        """One action: store its blobs, sign and submit its Command, deliver the Events, tell
        the agent the outcome, and report it."""
        at = format_utc(now)
        before = self._views(intent)
        if intent.blobs:
            self.store_blobs(intent.blobs)
        data = runtime.command(intent, at)
        outcome = self.log.submit(data, timestamp(now))
        if isinstance(outcome, Accepted):
            self.deliver([record.document for record in outcome.events])
        runtime.outcome(intent, outcome, now)
        self.steps += 1
        report = self._report(runtime, intent, data, outcome, at, before)
        self.history.append(report)
        return report

    def _views(self, intent: Intent) -> tuple[dict[str, Any], dict[str, Any]]:
        """The WorkItem the intent names and its Group's Mission, as they stand now (each
        ``{}`` when it does not exist)."""
        state = self.log.state
        item_view: dict[str, Any] = {}
        wid = intent.payload.get("workItemId")
        if isinstance(wid, str) and wid in state.work_items:
            item = state.work_items[wid]
            item_view = {
                "workItem": wid,
                "state": str(item.state),
                "revision": item.revision,
                "owner": item.owner["agentId"] if item.owner else None,
                "ownershipEpoch": item.ownership_epoch,
                "executionLease": item.execution_lease_id,
            }
        mission_view: dict[str, Any] = {}
        if intent.group in state.groups:
            mission = state.missions[state.groups[intent.group].mission_id]
            mission_view = {
                "mission": mission.mission_id,
                "state": str(mission.state),
                "revision": mission.revision,
            }
        return item_view, mission_view

    def _report(
        self,
        runtime: AgentRuntime,
        intent: Intent,
        data: bytes,
        outcome: Outcome,
        at: str,
        before: tuple[dict[str, Any], dict[str, Any]],
    ) -> StepReport:
        # The step is about the WorkItem it names once that exists (a work.authorize creates
        # it: before it was nothing, not the Mission), else about the Group's Mission.
        item, mission = self._views(intent)
        after, earlier = (item, before[0]) if item else (mission, before[1])
        common = {
            "number": self.steps,
            "at": at,
            "agent": runtime.name,
            "kind": intent.kind,
            "why": intent.why,
            "command": parse_strict(data),
            "before": earlier,
            "after": after,
            "log_position": self.log.store.event_count(),
        }
        if isinstance(outcome, Accepted):
            return StepReport(accepted=True, events=tuple(outcome.event_documents), **common)
        return StepReport(
            accepted=False,
            code=outcome.error.code.value,
            explanation=outcome.error.explanation,
            rule=outcome.error.rule,
            **common,
        )
