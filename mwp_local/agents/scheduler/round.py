"""The Scheduler's bookkeeping (the ledger) and one decision round worked out on it.

``Ledger.plan`` computes a round on copies and changes nothing, so ``Scheduler.disclose`` can ask
what would happen now; ``Ledger.commit`` applies a round. The formulas are documented in
``scheduler.py``; this module must not be used by Workers directly (``Scheduler`` is the API) and,
like the rest of the Scheduler, does no I/O and reads no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fractions import Fraction

from .model import (
    PreemptionPolicy,
    PreemptionReason,
    QueuedWork,
    RequestPreemption,
    SchedulerConfig,
    Slot,
)
from .order import cross_group_lead, within_group_key, within_group_score


@dataclass(slots=True)
class GroupState:
    """One Group's fairness record and queue."""

    weight: Fraction
    pass_: Fraction
    debt_us: int = 0
    served_us: int = 0
    queue: dict[str, QueuedWork] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InFlight:
    """A dispatched item not yet reported finished or requeued, and its slot."""

    work: QueuedWork
    slot_id: str
    dispatched_us: int


@dataclass(frozen=True, slots=True)
class Pending:
    """A preemption request on a slot: the item asked to pause and the Group it helps."""

    work_item_id: str
    for_group: str


@dataclass(slots=True)
class Round:
    """One decision round worked out on copies; ``decide`` commits it, ``disclose`` only reads."""

    free_slots: list[str]
    counts: dict[str, int]
    ready_at_start: frozenset[str]
    passes: dict[str, Fraction]
    debts: dict[str, int]
    virtual: Fraction
    active: set[str]
    pending: dict[str, Pending]
    dispatches: list[tuple[str, QueuedWork]] = field(default_factory=list)
    preemptions: list[tuple[RequestPreemption, str]] = field(default_factory=list)


@dataclass(slots=True)
class Ledger:
    """Everything the Scheduler remembers: queues, items in flight, requests, virtual times."""

    config: SchedulerConfig
    groups: dict[str, GroupState] = field(default_factory=dict)
    #: Queued WorkItem ID -> its Group.
    queued_in: dict[str, str] = field(default_factory=dict)
    in_flight: dict[str, InFlight] = field(default_factory=dict)
    #: Slot ID -> the pending preemption request on it.
    pending: dict[str, Pending] = field(default_factory=dict)
    #: Groups ready at the end of the last round (those are not lifted in the next one).
    active: set[str] = field(default_factory=set)
    virtual: Fraction = Fraction(0)

    def group(self, group_id: str) -> GroupState:
        """The Group's record, created at the current virtual time if new."""
        state = self.groups.get(group_id)
        if state is None:
            weight = self.config.exact_weight_of(group_id)
            state = self.groups[group_id] = GroupState(weight=weight, pass_=self.virtual)
        return state

    def leave_slot(self, work_item_id: str, service_us: int) -> None:
        """An item in flight left its slot after ``service_us``: account it, drop its request."""
        check_service(service_us)
        record = self.in_flight.pop(work_item_id)
        state = self.groups[record.work.group_id]
        state.served_us += service_us
        state.debt_us = self.bounded_debt(
            state.debt_us + service_us - record.work.estimated_duration_us
        )
        self.pending = {
            slot_id: p for slot_id, p in self.pending.items() if p.work_item_id != work_item_id
        }

    def bounded_debt(self, debt_us: int) -> int:
        """``debt_us`` kept within the configured debt limit."""
        limit = self.config.debt_limit
        return max(-limit, min(limit, debt_us))

    def plan(self, now_us: int, slots: tuple[Slot, ...]) -> Round:
        """Work out one round (dispatches, then preemption requests) without changing anything."""
        config = self.config
        if len({s.slot_id for s in slots}) != len(slots):
            raise ValueError("slot IDs must be unique")
        on_slot = {record.slot_id for record in self.in_flight.values()}
        running: dict[str, set[str]] = {}
        free: list[str] = []
        for slot in slots:
            if slot.work_item_id is not None and slot.group_id is not None:
                running.setdefault(slot.group_id, set()).add(slot.work_item_id)
            elif slot.slot_id not in on_slot:
                free.append(slot.slot_id)
        for wid, record in self.in_flight.items():
            running.setdefault(record.work.group_id, set()).add(wid)
        counts = {g: len(ids) for g, ids in running.items()}
        queues: dict[str, list[QueuedWork]] = {}
        for group_id, state in self.groups.items():
            eligible = [w for w in state.queue.values() if w.eligible]
            if eligible:
                queues[group_id] = sorted(
                    eligible, key=lambda w: within_group_key(w, now_us, config)
                )

        def ready(group_id: str) -> bool:
            quota = config.quota_of(group_id)
            below = quota is None or counts.get(group_id, 0) < quota
            return below and bool(queues.get(group_id))

        ready_now = {g for g in queues if ready(g)}
        # Lifting: a Group that was not ready at the end of the last round banks no credit.
        passes = {
            g: self.groups[g].pass_ if g in self.active else max(self.groups[g].pass_, self.virtual)
            for g in ready_now
        }
        plan = Round(
            free_slots=free,
            counts=counts,
            ready_at_start=frozenset(ready_now),
            passes=passes,
            debts={g: self.groups[g].debt_us for g in ready_now},
            virtual=self.virtual,
            active=set(ready_now),
            pending={
                slot_id: p
                for slot_id, p in self.pending.items()
                if self._still_running(slot_id, p, slots)
            },
        )
        leads = {g: cross_group_lead(queues[g][0], now_us, config) for g in ready_now}

        def key(g: str) -> tuple[Fraction, Fraction, int, str]:
            return (passes[g] - leads[g], passes[g], queues[g][0].enqueued_us, g)

        for slot_id in free:
            if not plan.active:
                break
            winner = min(plan.active, key=key)
            plan.virtual = max(plan.virtual, min(passes[g] for g in plan.active))
            work = queues[winner].pop(0)
            owed = work.estimated_duration_us + plan.debts[winner]
            charge = min(config.max_charge_us, max(config.min_charge_us, owed))
            plan.debts[winner] = owed - charge
            passes[winner] += Fraction(charge) / self.groups[winner].weight
            counts[winner] = counts.get(winner, 0) + 1
            plan.dispatches.append((slot_id, work))
            if ready(winner):
                leads[winner] = cross_group_lead(queues[winner][0], now_us, config)
            else:
                plan.active.discard(winner)
        if config.preemption is PreemptionPolicy.COOPERATIVE and plan.active:
            self._preemptions(plan, now_us, slots, queues, key)
        return plan

    def _preemptions(
        self,
        plan: Round,
        now_us: int,
        slots: tuple[Slot, ...],
        queues: dict[str, list[QueuedWork]],
        key: Callable[[str], tuple[Fraction, Fraction, int, str]],
    ) -> None:
        config = self.config
        victims: list[tuple[Slot, QueuedWork]] = []
        for slot in slots:
            if slot.work_item_id is None or slot.started_us is None:
                continue
            if slot.slot_id in plan.pending or not (slot.at_safe_point and slot.preemptible):
                continue
            if now_us - slot.started_us < config.min_run_before_preemption_us:
                continue
            record = self.in_flight.get(slot.work_item_id)
            if record is not None:
                victims.append((slot, record.work))
        if not victims:
            return
        helped = {p.for_group for p in plan.pending.values()}
        order = sorted(plan.active, key=key)
        for group_id in order:
            if group_id in helped or not victims:
                continue
            waiting = queues[group_id][0]
            chosen = self._victim(plan, now_us, group_id, waiting, victims)
            if chosen is None:
                continue
            slot, running, reason = chosen
            victims = [v for v in victims if v[0].slot_id != slot.slot_id]
            request = RequestPreemption(
                slot_id=slot.slot_id, work_item_id=running.work_item_id, reason=reason
            )
            plan.preemptions.append((request, group_id))

    def _victim(
        self,
        plan: Round,
        now_us: int,
        group_id: str,
        waiting: QueuedWork,
        victims: list[tuple[Slot, QueuedWork]],
    ) -> tuple[Slot, QueuedWork, PreemptionReason] | None:
        config = self.config
        cap = config.max_priority_class
        waiting_score = within_group_score(waiting, now_us, config)
        waiting_class = min(waiting.priority_class, cap)
        best: tuple[tuple[int, float, int, str], Slot, QueuedWork, PreemptionReason] | None = None
        for slot, running in victims:
            running_score = within_group_score(running, now_us, config)
            running_class = min(running.priority_class, cap)
            reason: PreemptionReason | None = None
            if running.group_id == group_id:
                if waiting_score - running_score >= config.preemption_score_margin:
                    reason = PreemptionReason.GROUP_PRIORITY
            elif waiting_class - running_class >= config.preemption_class_gap:
                other_pass = plan.passes.get(running.group_id)
                if other_pass is None:
                    other_pass = self.groups[running.group_id].pass_
                if plan.passes[group_id] <= other_pass:
                    reason = PreemptionReason.PRIORITY_CLASS
            if reason is None:
                continue
            assert slot.started_us is not None
            rank = (running_class, running_score, -slot.started_us, slot.slot_id)
            if best is None or rank < best[0]:
                best = (rank, slot, running, reason)
        return None if best is None else (best[1], best[2], best[3])

    def commit(self, plan: Round, now_us: int, slots: tuple[Slot, ...]) -> None:
        """Apply a round worked out by ``plan`` on this very state."""
        for slot in slots:
            seen = self.in_flight.get(slot.work_item_id or "")
            if seen is not None and seen.slot_id != slot.slot_id:
                self.in_flight[seen.work.work_item_id] = replace(seen, slot_id=slot.slot_id)
        for group_id, value in plan.passes.items():
            self.groups[group_id].pass_ = value
        for group_id, debt in plan.debts.items():
            self.groups[group_id].debt_us = self.bounded_debt(debt)
        for slot_id, work in plan.dispatches:
            del self.groups[work.group_id].queue[work.work_item_id]
            del self.queued_in[work.work_item_id]
            self.in_flight[work.work_item_id] = InFlight(work, slot_id, now_us)
        self.virtual = plan.virtual
        self.active = plan.active
        self.pending = dict(plan.pending)
        for request, group_id in plan.preemptions:
            self.pending[request.slot_id] = Pending(request.work_item_id, group_id)

    def _still_running(self, slot_id: str, pending: Pending, slots: tuple[Slot, ...]) -> bool:
        """Whether a pending request still concerns what runs in its slot."""
        record = self.in_flight.get(pending.work_item_id)
        shown = [s for s in slots if s.slot_id == slot_id]
        if record is None or not shown:
            return False
        return shown[0].work_item_id == pending.work_item_id or (
            shown[0].work_item_id is None and record.slot_id == slot_id
        )


def check_service(service_us: int) -> None:
    """Reject a service amount that is not a non-negative integer."""
    if isinstance(service_us, bool) or not isinstance(service_us, int) or service_us < 0:
        raise ValueError(f"service_us must be an integer >= 0, not {service_us!r}")
