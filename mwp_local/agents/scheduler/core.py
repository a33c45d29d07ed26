"""The Worker-owned global Scheduler (§11.1–11.3; MWP-WRK-009, 010, 012, 015).

The Scheduler owns the cross-Group order of one Worker's execution slots and nothing else. It is
pure: no I/O, no clock reads, no threads, no randomness. The Worker tells it what is queued
(``QueuedWork``), what its slots hold (``Slot``) and the time; it answers with decisions
(``Dispatch``, ``RequestPreemption``) and never acts on them. It sees scheduling metadata only,
never Mission content (MWP-WRK-028). Its bookkeeping is a projection: deleting it and
re-enqueueing the Worker's queues rebuilds it (fairness history restarts at zero).

Across Groups it shares the slots by weighted virtual time with a bounded lead, so a ready Group
waits at most a bounded number of other Groups' dispatches; inside a Group it orders items by
score, deadline pressure and aging; with cooperative preemption it asks only a slot at a safe
point to yield. The formulas, the starvation bound with its proof, and the Worker's side of the
contract: ``docs/scheduler.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from enum import Enum
from fractions import Fraction

from .disclosure import DisclosureInputs, schedule_estimate
from .model import (
    Decision,
    Dispatch,
    PreemptionPolicy,
    PreemptionReason,
    QueuedWork,
    RequestedUrgency,
    RequestPreemption,
    SchedulerConfig,
    Slot,
)
from .order import ordered, within_group_key, within_group_score
from .round import InFlight, Ledger, check_service
from .snapshot import GroupSnapshot, QueueEntrySnapshot, SchedulerSnapshot, SlotSnapshot

__all__ = [
    "UNCHANGED",
    "Decision",
    "Dispatch",
    "GroupSnapshot",
    "PreemptionPolicy",
    "PreemptionReason",
    "QueueEntrySnapshot",
    "QueuedWork",
    "RequestPreemption",
    "RequestedUrgency",
    "Scheduler",
    "SchedulerConfig",
    "SchedulerSnapshot",
    "Slot",
    "SlotSnapshot",
]


class _Unchanged(Enum):
    UNCHANGED = "unchanged"


#: Leaves a field as it is in ``Scheduler.reprioritize``.
UNCHANGED = _Unchanged.UNCHANGED


class Scheduler:
    """Weighted-fair, starvation-free selection of queued WorkItems into execution slots.

    One Worker policy owns it and calls it from one thread; it holds no lock.
    """

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config if config is not None else SchedulerConfig()
        self._ledger = Ledger(self.config)
        self._slots: tuple[Slot, ...] = ()
        self._last_now_us = 0

    # -- what the Worker tells it ------------------------------------------------------------

    def enqueue(self, work: QueuedWork) -> None:
        """Add an accepted WorkItem to its Group's queue; ``ValueError`` if the ID is known."""
        if (
            work.work_item_id in self._ledger.queued_in
            or work.work_item_id in self._ledger.in_flight
        ):
            raise ValueError(f"{work.work_item_id!r} is already queued or in flight")
        self._ledger.group(work.group_id).queue[work.work_item_id] = work
        self._ledger.queued_in[work.work_item_id] = work.group_id

    def reprioritize(
        self,
        work_item_id: str,
        *,
        urgency: RequestedUrgency | _Unchanged = UNCHANGED,
        deadline_us: int | _Unchanged | None = UNCHANGED,
        business_impact_rank: int | _Unchanged = UNCHANGED,
        priority_class: int | _Unchanged = UNCHANGED,
    ) -> QueuedWork:
        """Change a queued or running item's priority inputs; the next round uses them at once."""
        changes: dict[str, object] = {}
        if urgency is not UNCHANGED:
            changes["urgency"] = urgency
        if deadline_us is not UNCHANGED:
            changes["deadline_us"] = deadline_us
        if business_impact_rank is not UNCHANGED:
            changes["business_impact_rank"] = business_impact_rank
        if priority_class is not UNCHANGED:
            changes["priority_class"] = priority_class
        return self._replace(work_item_id, changes)

    def set_readiness(
        self,
        work_item_id: str,
        *,
        risk_gate_open: bool | None = None,
        resources_available: bool | None = None,
    ) -> QueuedWork:
        """Open or close an item's risk gate or resource availability (``None``: unchanged)."""
        changes: dict[str, object] = {}
        if risk_gate_open is not None:
            changes["risk_gate_open"] = risk_gate_open
        if resources_available is not None:
            changes["resources_available"] = resources_available
        return self._replace(work_item_id, changes)

    def requeue(
        self, work_item_id: str, *, service_us: int, work: QueuedWork | None = None
    ) -> None:
        """A dispatched item left its slot unfinished (preempted, paused, blocked, not started).

        It re-enters its Group queue, by default with its original metadata (so its age still
        counts); ``work`` may replace that metadata, e.g. with the remaining estimate.
        """
        record = self._ledger.in_flight.get(work_item_id)
        if record is None:
            raise KeyError(f"{work_item_id!r} is not in flight")
        if work is not None and (
            work.work_item_id != work_item_id or work.group_id != record.work.group_id
        ):
            raise ValueError("requeue keeps the WorkItem ID and the Group")
        self._ledger.leave_slot(work_item_id, service_us)
        again = record.work if work is None else work
        self._ledger.groups[again.group_id].queue[work_item_id] = again
        self._ledger.queued_in[work_item_id] = again.group_id

    def completed(self, work_item_id: str, *, service_us: int) -> None:
        """A dispatched item finished (submitted, failed or cancelled) after ``service_us``."""
        if work_item_id not in self._ledger.in_flight:
            raise KeyError(f"{work_item_id!r} is not in flight")
        self._ledger.leave_slot(work_item_id, service_us)

    def remove(self, work_item_id: str, *, service_us: int = 0) -> bool:
        """Forget an item, queued or in flight (finished, failed, cancelled, reassigned).

        ``service_us`` is the service an in-flight item consumed. Returns whether the item was
        known; removing an unknown item is harmless.
        """
        if work_item_id in self._ledger.in_flight:
            self._ledger.leave_slot(work_item_id, service_us)
            return True
        group_id = self._ledger.queued_in.pop(work_item_id, None)
        if group_id is None:
            return False
        del self._ledger.groups[group_id].queue[work_item_id]
        return True

    def record_service(self, group_id: str, service_us: int) -> None:
        """Account service given to a Group outside a dispatched item's own report."""
        check_service(service_us)
        state = self._ledger.group(group_id)
        state.served_us += service_us
        state.debt_us = self._ledger.bounded_debt(state.debt_us + service_us)

    def forget_group(self, group_id: str) -> None:
        """Drop an empty Group's record (the Worker left it); ``ValueError`` if it holds work."""
        state = self._ledger.groups.get(group_id)
        if state is None:
            return
        if state.queue or any(r.work.group_id == group_id for r in self._ledger.in_flight.values()):
            raise ValueError(f"Group {group_id!r} still has queued or running work")
        del self._ledger.groups[group_id]
        self._ledger.active.discard(group_id)

    def work(self, work_item_id: str) -> QueuedWork | None:
        """The metadata the Scheduler holds for an item, queued or in flight, or ``None``."""
        record = self._ledger.in_flight.get(work_item_id)
        if record is not None:
            return record.work
        group_id = self._ledger.queued_in.get(work_item_id)
        return None if group_id is None else self._ledger.groups[group_id].queue[work_item_id]

    # -- what it answers ---------------------------------------------------------------------

    def decide(self, now_us: int, slots: Iterable[Slot]) -> list[Decision]:
        """The decisions of one round: dispatches into free slots, then preemption requests."""
        slots = tuple(slots)
        plan = self._ledger.plan(now_us, slots)
        self._ledger.commit(plan, now_us, slots)
        self._slots = slots
        self._last_now_us = max(self._last_now_us, now_us)
        decisions: list[Decision] = [
            Dispatch(slot_id=slot_id, work_item_id=work.work_item_id)
            for slot_id, work in plan.dispatches
        ]
        decisions.extend(request for request, _ in plan.preemptions)
        return decisions

    def disclose(self, work_item_id: str, now_us: int, slots: Iterable[Slot]) -> dict[str, object]:
        """The item's ``scheduleEstimate`` (MWP-WRK-012); changes nothing in the Scheduler.

        Only the item, its own Group and aggregates of the others are used (see
        ``scheduler_disclosure``).
        """
        slots = tuple(slots)
        work = self.work(work_item_id)
        if work is None:
            raise KeyError(f"{work_item_id!r} is neither queued nor in flight")
        group = self._ledger.groups[work.group_id]
        quota = self.config.quota_of(work.group_id)
        record = self._ledger.in_flight.get(work_item_id)
        if record is not None:
            shown = [s for s in slots if s.work_item_id == work_item_id]
            started = shown[0].started_us if shown else record.dispatched_us
            inputs = DisclosureInputs(
                now_us=now_us,
                work=work,
                started_us=started,
                own_ahead_count=0,
                own_ahead_work_us=0,
                own_running=0,
                own_quota=quota,
                own_next_free_in_us=None,
                own_weight=group.weight,
                slot_count=len(slots),
                dispatch_now=False,
                other_ready_weight=Fraction(0),
                next_free_in_us=None,
            )
            return schedule_estimate(inputs, self.config)
        plan = self._ledger.plan(now_us, slots)
        as_if_eligible = replace(work, risk_gate_open=True, resources_available=True)
        own_key = within_group_key(as_if_eligible, now_us, self.config)
        ahead = [
            w
            for w in group.queue.values()
            if w.eligible
            and w.work_item_id != work_item_id
            and within_group_key(w, now_us, self.config) < own_key
        ]
        own_remaining = [
            self._remaining(r, now_us)
            for r in self._ledger.in_flight.values()
            if r.work.group_id == work.group_id
        ]
        inputs = DisclosureInputs(
            now_us=now_us,
            work=work,
            started_us=None,
            own_ahead_count=len(ahead),
            own_ahead_work_us=sum(w.estimated_duration_us for w in ahead),
            own_running=plan.counts.get(work.group_id, 0),
            own_quota=quota,
            own_next_free_in_us=min(own_remaining, default=None),
            own_weight=group.weight,
            slot_count=len(slots),
            dispatch_now=any(w.work_item_id == work_item_id for _, w in plan.dispatches),
            other_ready_weight=sum(
                (self._ledger.groups[g].weight for g in plan.ready_at_start if g != work.group_id),
                Fraction(0),
            ),
            next_free_in_us=None if plan.free_slots else self._next_free_in(now_us, slots),
        )
        return schedule_estimate(inputs, self.config)

    def queued_ids(self) -> frozenset[str]:
        """The WorkItems waiting in some Group's queue (cheap: no scores, no ordering)."""
        return frozenset(self._ledger.queued_in)

    def in_flight_ids(self) -> frozenset[str]:
        """The WorkItems dispatched into a slot and not yet back (cheap)."""
        return frozenset(self._ledger.in_flight)

    def snapshot(self, now_us: int | None = None) -> SchedulerSnapshot:
        """A frozen picture for widgets: per-Group queues and shares, slots, virtual time.

        Scores and queue positions are computed at ``now_us`` (default: the latest instant the
        Scheduler was given). Slots are those of the latest ``decide``, each holding what the
        Scheduler has dispatched into it and not yet seen back (as the Groups' ``running``
        does), not what the slot held when it was reported: a slot reported free and then
        filled by that very ``decide`` shows its new work.
        """
        now = self._last_now_us if now_us is None else now_us
        total_served = sum(s.served_us for s in self._ledger.groups.values())
        total_weight = sum(s.weight for s in self._ledger.groups.values())
        running: dict[str, list[str]] = {}
        for wid, record in self._ledger.in_flight.items():
            running.setdefault(record.work.group_id, []).append(wid)
        groups = []
        for group_id in sorted(self._ledger.groups):
            state = self._ledger.groups[group_id]
            queue = tuple(
                QueueEntrySnapshot(
                    position=i,
                    work_item_id=w.work_item_id,
                    urgency=w.urgency,
                    priority_class=w.priority_class,
                    eligible=w.eligible,
                    score=within_group_score(w, now, self.config),
                )
                for i, w in enumerate(ordered(tuple(state.queue.values()), now, self.config), 1)
            )
            groups.append(
                GroupSnapshot(
                    group_id=group_id,
                    weight=float(state.weight),
                    quota=self.config.quota_of(group_id),
                    queue=queue,
                    running=tuple(sorted(running.get(group_id, ()))),
                    served_us=state.served_us,
                    served_share=state.served_us / total_served if total_served else 0.0,
                    weight_share=float(state.weight / total_weight),
                    virtual_pass=float(state.pass_),
                    debt_us=state.debt_us,
                )
            )
        occupant = {r.slot_id: r.work for r in self._ledger.in_flight.values()}
        slots = tuple(
            SlotSnapshot(
                slot_id=s.slot_id,
                work_item_id=occupant[s.slot_id].work_item_id if s.slot_id in occupant else None,
                group_id=occupant[s.slot_id].group_id if s.slot_id in occupant else None,
                preemption_requested=s.slot_id in self._ledger.pending,
            )
            for s in self._slots
        )
        return SchedulerSnapshot(
            taken_at_us=now,
            virtual_time=float(self._ledger.virtual),
            groups=tuple(groups),
            slots=slots,
        )

    # -- helpers -----------------------------------------------------------------------------

    def _replace(self, work_item_id: str, changes: dict[str, object]) -> QueuedWork:
        record = self._ledger.in_flight.get(work_item_id)
        if record is not None:
            updated = replace(record.work, **changes)  # type: ignore[arg-type]
            self._ledger.in_flight[work_item_id] = replace(record, work=updated)
            return updated
        group_id = self._ledger.queued_in.get(work_item_id)
        if group_id is None:
            raise KeyError(f"{work_item_id!r} is neither queued nor in flight")
        queue = self._ledger.groups[group_id].queue
        updated = replace(queue[work_item_id], **changes)  # type: ignore[arg-type]
        queue[work_item_id] = updated
        return updated

    def _remaining(self, record: InFlight, now_us: int) -> int:
        return max(0, record.dispatched_us + record.work.estimated_duration_us - now_us)

    def _next_free_in(self, now_us: int, slots: tuple[Slot, ...]) -> int:
        """When the earliest occupied slot should free (unknown work: one disclosure grain)."""
        by_slot = {r.slot_id: r for r in self._ledger.in_flight.values()}
        remaining = []
        for slot in slots:
            wid = slot.work_item_id
            record = by_slot.get(slot.slot_id) if wid is None else self._ledger.in_flight.get(wid)
            if record is None:
                remaining.append(self.config.disclosure_grain_us)
            else:
                started = record.dispatched_us if slot.started_us is None else slot.started_us
                remaining.append(max(0, started + record.work.estimated_duration_us - now_us))
        return min(remaining, default=0)
