"""A tiny deterministic Worker stand-in that drives a Scheduler in whole ticks, for tests.

Each slot runs one item for a known number of ticks. A round is ``settle`` (finished items are
reported ``completed``; items asked to pause at a safe point pause and are ``requeue``d, §11.3),
then ``decide`` and ``apply`` of each decision in order. The driver keeps its own mirror of
what is queued, so tests can judge readiness without asking the Scheduler.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from mwp_local.agents.scheduler.core import (
    Decision,
    Dispatch,
    QueuedWork,
    RequestPreemption,
    Scheduler,
    Slot,
)

TICK = 1_000_000


@dataclass
class _Running:
    work: QueuedWork
    started: int
    remaining: int
    preemptible: bool


@dataclass
class SlotSim:
    """Slots ``s0..s{n-1}`` driven in ticks of one second."""

    scheduler: Scheduler
    n_slots: int
    #: Whether the work in a slot is at a safe point, given (tick, ticks run so far).
    safe_point: Callable[[int, int], bool] = lambda tick, ran: True
    running: dict[str, _Running | None] = field(default_factory=dict)
    queued: dict[str, QueuedWork] = field(default_factory=dict)
    remaining: dict[str, int] = field(default_factory=dict)
    preemptible: dict[str, bool] = field(default_factory=dict)
    served: dict[str, int] = field(default_factory=dict)
    #: Slot ID -> the tick its work was asked to pause (at the safe point it was then at).
    to_pause: dict[str, int] = field(default_factory=dict)
    #: Every RequestPreemption with the Slot state it was made against.
    requests: list[tuple[Slot, RequestPreemption]] = field(default_factory=list)
    last_slots: tuple[Slot, ...] = ()

    def __post_init__(self) -> None:
        self.running = {f"s{i}": None for i in range(self.n_slots)}

    def enqueue(self, work: QueuedWork, ticks: int, *, preemptible: bool = True) -> None:
        """A new item needing ``ticks`` of service."""
        self.scheduler.enqueue(work)
        self.queued[work.work_item_id] = work
        self.remaining[work.work_item_id] = ticks
        self.preemptible[work.work_item_id] = preemptible

    def open_gate(self, work_item_id: str) -> None:
        """The item's risk gate opens."""
        updated = self.scheduler.set_readiness(work_item_id, risk_gate_open=True)
        if work_item_id in self.queued:
            self.queued[work_item_id] = updated

    def settle(self, tick: int) -> None:
        """Report finished work, then pause work that was asked to (it sits at a safe point)."""
        for slot_id, run in self.running.items():
            if run is None:
                continue
            wid = run.work.work_item_id
            ran = tick - run.started
            if ran >= run.remaining:
                self._served(run.work.group_id, run.remaining)
                self.scheduler.completed(wid, service_us=run.remaining * TICK)
                self.running[slot_id] = None
                self.to_pause.pop(slot_id, None)
            elif slot_id in self.to_pause:
                # It checkpointed at the safe point where it was asked, then paused.
                ran = self.to_pause.pop(slot_id) - run.started
                self._served(run.work.group_id, ran)
                left = run.remaining - ran
                again = replace(run.work, estimated_duration_us=left * TICK)
                self.scheduler.requeue(wid, service_us=ran * TICK, work=again)
                self.queued[wid] = again
                self.remaining[wid] = left
                self.running[slot_id] = None

    def slots(self, tick: int) -> tuple[Slot, ...]:
        """The slots as the Worker reports them at ``tick``."""
        out = []
        for slot_id, run in self.running.items():
            if run is None:
                out.append(Slot(slot_id=slot_id))
                continue
            out.append(
                Slot(
                    slot_id=slot_id,
                    work_item_id=run.work.work_item_id,
                    group_id=run.work.group_id,
                    started_us=run.started * TICK,
                    at_safe_point=self.safe_point(tick, tick - run.started),
                    preemptible=run.preemptible,
                )
            )
        return tuple(out)

    def decide(self, tick: int) -> list[Decision]:
        """Ask for decisions (not yet applied)."""
        self.last_slots = self.slots(tick)
        return self.scheduler.decide(tick * TICK, self.last_slots)

    def apply(self, tick: int, decision: Decision) -> None:
        """Carry out one decision as a Worker would."""
        if isinstance(decision, Dispatch):
            assert self.running[decision.slot_id] is None, "dispatch into an occupied slot"
            work = self.queued.pop(decision.work_item_id)
            assert work.eligible, "dispatched an ineligible item"
            self.running[decision.slot_id] = _Running(
                work,
                tick,
                self.remaining[work.work_item_id],
                self.preemptible[work.work_item_id],
            )
        elif isinstance(decision, RequestPreemption):
            shown = next(s for s in self.last_slots if s.slot_id == decision.slot_id)
            self.requests.append((shown, decision))
            self.to_pause[decision.slot_id] = tick

    def step(self, tick: int) -> list[Decision]:
        """One whole round: settle, decide, apply."""
        self.settle(tick)
        decisions = self.decide(tick)
        for decision in decisions:
            self.apply(tick, decision)
        return decisions

    def running_count(self, group_id: str) -> int:
        """Occupied slots of one Group."""
        return sum(
            1 for r in self.running.values() if r is not None and r.work.group_id == group_id
        )

    def has_eligible(self, group_id: str) -> bool:
        """Whether the Group has an eligible queued item."""
        return any(w.group_id == group_id and w.eligible for w in self.queued.values())

    def idle(self) -> bool:
        """Nothing queued and nothing running."""
        return not self.queued and all(r is None for r in self.running.values())

    def _served(self, group_id: str, ticks: int) -> None:
        self.served[group_id] = self.served.get(group_id, 0) + ticks
