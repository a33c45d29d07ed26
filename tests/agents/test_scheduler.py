"""Behaviours of the Worker's global Scheduler: dispatch, quotas, gates, ordering, preemption,
bounded state, frozen snapshots and the values it takes (MWP-WRK-009, 010, 015, 028).

Long-run fairness and the starvation bound are in ``test_scheduler_fairness.py``; scheduling
disclosure is in ``test_scheduler_disclosure.py``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from enum import Enum
from fractions import Fraction

import pytest

from mwp_local.agents.scheduler.core import (
    Decision,
    Dispatch,
    GroupSnapshot,
    PreemptionPolicy,
    PreemptionReason,
    QueuedWork,
    RequestedUrgency,
    RequestPreemption,
    Scheduler,
    SchedulerConfig,
    SchedulerSnapshot,
    Slot,
)

from .scheduler_sim import TICK, SlotSim

CRITICAL = RequestedUrgency.CRITICAL
ROUTINE = RequestedUrgency.ROUTINE


def work(wid: str, group: str, **fields: object) -> QueuedWork:
    """A queued item of one second, enqueued at time zero unless told otherwise."""
    values: dict[str, object] = {"enqueued_us": 0, "estimated_duration_us": TICK, **fields}
    return QueuedWork(work_item_id=wid, group_id=group, **values)  # type: ignore[arg-type]


def free(*slot_ids: str) -> list[Slot]:
    """Free slots."""
    return [Slot(slot_id=s) for s in slot_ids]


def busy(slot_id: str, wid: str, group: str, *, started_us: int = 0, **fields: bool) -> Slot:
    """A slot running ``wid`` of ``group``."""
    return Slot(slot_id=slot_id, work_item_id=wid, group_id=group, started_us=started_us, **fields)


def dispatched(decisions: Sequence[Decision]) -> list[str]:
    """The WorkItem IDs dispatched, in order."""
    return [d.work_item_id for d in decisions if isinstance(d, Dispatch)]


def requests(decisions: Sequence[Decision]) -> list[RequestPreemption]:
    """The preemption requests."""
    return [d for d in decisions if isinstance(d, RequestPreemption)]


def no_preemption(**fields: object) -> SchedulerConfig:
    """A configuration that never preempts."""
    return SchedulerConfig(preemption=PreemptionPolicy.NEVER, **fields)  # type: ignore[arg-type]


# -- dispatching into slots ------------------------------------------------------------------


@pytest.mark.req("MWP-WRK-009")
def test_free_slots_are_filled_and_occupied_slots_are_left_alone() -> None:
    s = Scheduler(no_preemption())
    for i in range(3):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=i))
    decisions = s.decide(5 * TICK, [busy("s0", "x", "gx"), *free("s1", "s2")])
    assert decisions == [
        Dispatch(slot_id="s1", work_item_id="a0"),
        Dispatch(slot_id="s2", work_item_id="a1"),
    ]
    assert s.work("a2") is not None and s.snapshot().group("ga").running == ("a0", "a1")


@pytest.mark.req("MWP-WRK-010")
def test_group_quota_caps_concurrent_slots_even_when_slots_are_free() -> None:
    s = Scheduler(no_preemption(quotas={"ga": 1}))
    for i in range(4):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=i))
    s.enqueue(work("b0", "gb"))
    decisions = s.decide(0, free("s0", "s1", "s2"))
    assert sorted(dispatched(decisions)) == ["a0", "b0"]
    # The third slot stays free: ga is at its quota and gb has nothing left.
    assert s.decide(0, [busy("s0", "a0", "ga"), busy("s1", "b0", "gb"), *free("s2")]) == []
    s.completed("a0", service_us=TICK)
    assert dispatched(s.decide(TICK, [busy("s1", "b0", "gb"), *free("s0", "s2")])) == ["a1"]


@pytest.mark.req("MWP-WRK-010")
def test_quota_counts_work_running_in_slots_the_scheduler_did_not_dispatch() -> None:
    s = Scheduler(no_preemption(quotas={"ga": 1}))
    s.enqueue(work("a1", "ga"))
    assert s.decide(0, [busy("s0", "a0", "ga"), *free("s1")]) == []


@pytest.mark.req("MWP-WRK-010")
def test_item_behind_a_closed_risk_gate_waits_until_the_gate_opens() -> None:
    s = Scheduler(no_preemption())
    s.enqueue(work("a0", "ga", risk_gate_open=False, urgency=CRITICAL))
    s.enqueue(work("a1", "ga", urgency=ROUTINE))
    assert dispatched(s.decide(0, free("s0"))) == ["a1"]
    assert s.decide(TICK, [busy("s0", "a1", "ga"), *free("s1")]) == []
    s.set_readiness("a0", risk_gate_open=True)
    assert dispatched(s.decide(TICK, [busy("s0", "a1", "ga"), *free("s1")])) == ["a0"]


@pytest.mark.req("MWP-WRK-010")
def test_item_waits_while_its_resources_are_unavailable() -> None:
    s = Scheduler(no_preemption())
    s.enqueue(work("a0", "ga", resources_available=False))
    assert s.decide(0, free("s0")) == []
    s.set_readiness("a0", resources_available=True)
    assert dispatched(s.decide(0, free("s0"))) == ["a0"]


@pytest.mark.req("MWP-WRK-009")
def test_slot_awaiting_start_is_not_dispatched_into_twice() -> None:
    s = Scheduler(no_preemption())
    s.enqueue(work("a0", "ga"))
    s.enqueue(work("a1", "ga"))
    assert dispatched(s.decide(0, free("s0"))) == ["a0"]
    # The Worker has not started a0 yet and still reports s0 free.
    assert s.decide(0, free("s0")) == []
    s.requeue("a0", service_us=0)  # it could not start after all
    assert dispatched(s.decide(0, free("s0"))) == ["a0"]


# -- order inside a Group --------------------------------------------------------------------


@pytest.mark.req("MWP-WRK-015")
def test_raising_urgency_reorders_queued_items_at_once() -> None:
    s = Scheduler(no_preemption())
    for i in range(3):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=i, urgency=ROUTINE))
    assert [e.work_item_id for e in s.snapshot(10).group("ga").queue] == ["a0", "a1", "a2"]
    s.reprioritize("a2", urgency=CRITICAL)
    assert [e.work_item_id for e in s.snapshot(10).group("ga").queue] == ["a2", "a0", "a1"]
    assert dispatched(s.decide(10, free("s0"))) == ["a2"]


@pytest.mark.req("MWP-WRK-010", "MWP-WRK-015")
def test_a_near_deadline_moves_an_item_ahead_in_its_group() -> None:
    s = Scheduler(no_preemption())
    s.enqueue(work("a0", "ga", enqueued_us=0))
    s.enqueue(work("a1", "ga", enqueued_us=1))
    s.reprioritize("a1", deadline_us=10 * TICK)
    assert dispatched(s.decide(2, free("s0"))) == ["a1"]
    s.reprioritize("a0", deadline_us=None)  # clearing a deadline is a change too
    assert s.work("a0") == work("a0", "ga", enqueued_us=0)


@pytest.mark.req("MWP-WRK-010")
def test_aging_lets_a_long_waiting_routine_item_pass_newer_critical_ones() -> None:
    config = no_preemption(aging_points_per_s=1.0)
    s = Scheduler(config)
    s.enqueue(work("old", "ga", urgency=ROUTINE, enqueued_us=0))
    # Critical is 3 points above routine; after 4 s of waiting the routine item is ahead.
    s.enqueue(work("new", "ga", urgency=CRITICAL, enqueued_us=4 * TICK))
    assert dispatched(s.decide(4 * TICK, free("s0"))) == ["old"]


# -- order across Groups ---------------------------------------------------------------------


@pytest.mark.req("MWP-WRK-009")
def test_critical_urgency_does_not_put_a_group_ahead_of_another() -> None:
    s = Scheduler(no_preemption())
    for i in range(6):
        s.enqueue(work(f"a{i}", "ga", urgency=CRITICAL, enqueued_us=i))
        s.enqueue(work(f"b{i}", "gb", urgency=ROUTINE, enqueued_us=i))
    order = []
    for tick in range(12):
        (wid,) = dispatched(s.decide(tick * TICK, free("s0")))
        s.completed(wid, service_us=TICK)
        order.append(wid[0])
    assert order == ["a", "b"] * 6


@pytest.mark.req("MWP-WRK-010")
def test_weights_set_the_dispatch_ratio_between_backlogged_groups() -> None:
    s = Scheduler(no_preemption(weights={"ga": 3.0, "gb": 1.0}))
    for i in range(20):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=i))
        s.enqueue(work(f"b{i}", "gb", enqueued_us=i))
    order = []
    for tick in range(16):
        (wid,) = dispatched(s.decide(tick * TICK, free("s0")))
        s.completed(wid, service_us=TICK)
        order.append(wid[0])
    assert order.count("a") == 12 and order.count("b") == 4
    assert all("b" in order[i : i + 4] for i in range(0, 16, 4))


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-010")
def test_a_group_flooding_critical_top_class_work_cannot_starve_another_group() -> None:
    config = SchedulerConfig(min_charge_us=TICK, max_charge_us=TICK, max_lead_us=2 * TICK)
    sim = SlotSim(Scheduler(config), 1)
    for i in range(50):
        sim.enqueue(
            work(f"a{i}", "ga", urgency=CRITICAL, priority_class=3, deadline_us=0, enqueued_us=0),
            1,
        )
    sim.enqueue(work("b0", "gb", urgency=ROUTINE), 1)
    served_before_b = 0
    for tick in range(60):
        if dispatched(sim.step(tick)) == ["b0"]:
            break
        served_before_b += 1
    else:
        pytest.fail("gb was never served")
    # K_gb = floor(1 * (C_max / 1 + 2 L_max) / C_min) + 1 = floor(1 + 4) + 1 = 6.
    assert served_before_b <= 6


@pytest.mark.req("MWP-WRK-010")
def test_a_group_returning_from_idle_banks_no_credit() -> None:
    s = Scheduler(no_preemption())
    s.enqueue(work("a0", "ga"))
    for i in range(10):
        s.enqueue(work(f"b{i}", "gb", enqueued_us=i))
    for tick in range(9):
        (wid,) = dispatched(s.decide(tick * TICK, free("s0")))
        s.completed(wid, service_us=TICK)
    for i in range(1, 6):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=9 * TICK))
    order = []
    for tick in range(9, 13):
        (wid,) = dispatched(s.decide(tick * TICK, free("s0")))
        s.completed(wid, service_us=TICK)
        order.append(wid[0])
    assert order.count("b") >= 1  # ga does not get a run of slots for the time it was away


# -- cooperative preemption ------------------------------------------------------------------


def _running_routine_and_waiting_critical(config: SchedulerConfig) -> Scheduler:
    s = Scheduler(config)
    s.enqueue(work("a0", "ga", urgency=ROUTINE))
    assert dispatched(s.decide(0, free("s0"))) == ["a0"]
    s.enqueue(work("a1", "ga", urgency=CRITICAL, enqueued_us=TICK))
    return s


@pytest.mark.req("MWP-WRK-015")
def test_preemption_is_never_requested_of_a_slot_not_at_a_safe_point() -> None:
    s = _running_routine_and_waiting_critical(SchedulerConfig())
    for tick in range(2, 30):
        assert s.decide(tick * TICK, [busy("s0", "a0", "ga", at_safe_point=False)]) == []
    decisions = s.decide(30 * TICK, [busy("s0", "a0", "ga", at_safe_point=True)])
    assert decisions == [
        RequestPreemption(slot_id="s0", work_item_id="a0", reason=PreemptionReason.GROUP_PRIORITY)
    ]


@pytest.mark.req("MWP-WRK-015")
def test_work_that_is_not_preemptible_is_never_asked_to_pause() -> None:
    s = _running_routine_and_waiting_critical(SchedulerConfig())
    slot = busy("s0", "a0", "ga", at_safe_point=True, preemptible=False)
    assert s.decide(5 * TICK, [slot]) == []


@pytest.mark.req("MWP-WRK-015")
def test_work_is_not_asked_to_pause_before_its_minimum_run() -> None:
    s = _running_routine_and_waiting_critical(
        SchedulerConfig(min_run_before_preemption_us=10 * TICK)
    )
    assert s.decide(9 * TICK, [busy("s0", "a0", "ga", at_safe_point=True)]) == []
    assert len(requests(s.decide(10 * TICK, [busy("s0", "a0", "ga", at_safe_point=True)]))) == 1


@pytest.mark.req("MWP-WRK-015")
def test_preemption_policy_never_requests_nothing() -> None:
    s = _running_routine_and_waiting_critical(no_preemption())
    assert s.decide(5 * TICK, [busy("s0", "a0", "ga", at_safe_point=True)]) == []


@pytest.mark.req("MWP-WRK-015")
def test_a_pending_request_is_not_repeated_and_clears_when_the_item_leaves() -> None:
    s = _running_routine_and_waiting_critical(SchedulerConfig())
    slot = busy("s0", "a0", "ga", at_safe_point=True)
    assert len(requests(s.decide(5 * TICK, [slot]))) == 1
    assert s.snapshot().slots[0].preemption_requested
    assert s.decide(6 * TICK, [slot]) == []
    s.requeue("a0", service_us=6 * TICK)
    assert dispatched(s.decide(6 * TICK, free("s0"))) == ["a1"]
    assert not s.snapshot().slots[0].preemption_requested


@pytest.mark.req("MWP-WRK-015")
def test_preempted_item_reenters_its_group_queue_and_resumes_later() -> None:
    config = SchedulerConfig(min_charge_us=TICK, max_charge_us=4 * TICK)
    sim = SlotSim(Scheduler(config), 1, safe_point=lambda tick, ran: ran == 2)
    sim.enqueue(work("a0", "ga", urgency=ROUTINE, estimated_duration_us=4 * TICK), 4)
    sim.step(0)
    sim.enqueue(work("a1", "ga", urgency=CRITICAL, enqueued_us=TICK), 1)
    assert sim.step(1) == []  # 1. not at a safe point yet: no request
    (request,) = requests(sim.step(2))  # 1. the Scheduler requests preemption at a safe point
    assert request.work_item_id == "a0"
    # 2-4. the Worker checkpoints at its safe point, pauses and frees the slot;
    # 5. the item re-enters its Group queue and the critical one takes the slot.
    assert dispatched(sim.step(3)) == ["a1"]
    queue = sim.scheduler.snapshot(3 * TICK).group("ga").queue
    assert [e.work_item_id for e in queue] == ["a0"]
    assert sim.scheduler.work("a0") == work(
        "a0", "ga", urgency=ROUTINE, estimated_duration_us=2 * TICK
    )
    assert dispatched(sim.step(4)) == ["a0"]  # resumed
    assert [shown.at_safe_point for shown, _ in sim.requests] == [True]


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-015")
def test_another_groups_urgency_never_preempts_running_work() -> None:
    s = Scheduler(SchedulerConfig())
    s.enqueue(work("b0", "gb", urgency=ROUTINE))
    assert dispatched(s.decide(0, free("s0"))) == ["b0"]
    s.enqueue(work("a0", "ga", urgency=CRITICAL, deadline_us=0))
    assert s.decide(60 * TICK, [busy("s0", "b0", "gb", at_safe_point=True)]) == []


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-015")
def test_higher_priority_class_preempts_only_while_its_group_is_not_ahead() -> None:
    s = Scheduler(SchedulerConfig())
    s.enqueue(work("b0", "gb"))
    assert dispatched(s.decide(0, free("s0"))) == ["b0"]
    s.enqueue(work("a0", "ga", priority_class=2))
    (request,) = requests(s.decide(5 * TICK, [busy("s0", "b0", "gb", at_safe_point=True)]))
    assert request.reason is PreemptionReason.PRIORITY_CLASS

    # ga was charged ten seconds of service when gb was charged one: ga is ahead in virtual
    # time, so its priority class does not let it displace gb.
    ahead = Scheduler(SchedulerConfig())
    ahead.enqueue(work("x0", "ga", estimated_duration_us=10 * TICK))
    ahead.enqueue(work("b0", "gb"))
    assert sorted(dispatched(ahead.decide(0, free("s0", "s1")))) == ["b0", "x0"]
    ahead.completed("x0", service_us=10 * TICK)
    ahead.enqueue(work("a0", "ga", priority_class=2, enqueued_us=TICK))
    slots = [busy("s0", "other", "gz"), busy("s1", "b0", "gb", at_safe_point=True)]
    assert ahead.decide(10 * TICK, slots) == []


# -- bounded state ---------------------------------------------------------------------------


def _reachable(obj: object) -> tuple[int, set[str]]:
    """Entries of every container reachable from ``obj`` (config aside) and every string."""
    entries, strings, seen, stack = 0, set(), set(), [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            strings.add(item)
            continue
        if isinstance(item, int | float | Fraction | Enum | SchedulerConfig) or item is None:
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, dict):
            entries += len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            entries += len(item)
            stack.extend(item)
        elif dataclasses.is_dataclass(item):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))
        else:
            stack.extend(vars(item).values())
    return entries, strings


def _run_through(s: Scheduler, n_items: int) -> None:
    sim = SlotSim(s, 2, safe_point=lambda tick, ran: ran == 1)
    for i in range(n_items):
        urgency = CRITICAL if i % 7 == 0 else ROUTINE
        sim.enqueue(work(f"wi-{i}", f"g{i % 3}", urgency=urgency, enqueued_us=i), 1 + i % 3)
    tick = 0
    while not sim.idle():
        sim.step(tick)
        tick += 1
    sim.step(tick)


@pytest.mark.req("MWP-WRK-010")
def test_finished_items_leave_no_trace_in_the_scheduler() -> None:
    s = Scheduler()
    _run_through(s, 300)
    _, strings = _reachable(s)
    assert not any(text.startswith("wi-") for text in strings)
    s.enqueue(work("q0", "g0"))
    s.enqueue(work("q1", "g1"))
    s.remove("q0")
    s.remove("q1")
    assert s.remove("q1") is False
    _, strings = _reachable(s)
    assert not {"q0", "q1"} & strings


@pytest.mark.req("MWP-WRK-010")
def test_internal_state_does_not_grow_with_the_number_of_items_ever_seen() -> None:
    schedulers = [Scheduler(), Scheduler(), Scheduler()]
    for s, history in zip(schedulers, (6, 60, 600), strict=True):
        _run_through(s, history)
        for i in range(5):
            s.enqueue(work(f"now-{i}", f"g{i % 3}"))
    # The same queue gives the same amount of state for a round to look at, however long
    # the history behind it.
    assert len({_reachable(s)[0] for s in schedulers}) == 1
    for s in schedulers:
        assert len(dispatched(s.decide(10**9, free("s0", "s1")))) == 2


@pytest.mark.req("MWP-WRK-010")
def test_forget_group_drops_an_empty_group_and_refuses_a_busy_one() -> None:
    s = Scheduler()
    s.enqueue(work("a0", "ga"))
    with pytest.raises(ValueError):
        s.forget_group("ga")
    s.decide(0, free("s0"))
    with pytest.raises(ValueError):
        s.forget_group("ga")
    s.completed("a0", service_us=TICK)
    s.forget_group("ga")
    assert s.snapshot().groups == ()
    s.forget_group("never-seen")


# -- snapshots -------------------------------------------------------------------------------


def _walk_snapshot(value: object) -> None:
    """Every value inside a snapshot is immutable: frozen dataclasses, tuples and scalars."""
    if isinstance(value, str | int | float | Enum) or value is None:
        return
    if isinstance(value, tuple):
        for item in value:
            _walk_snapshot(item)
        return
    assert dataclasses.is_dataclass(value), type(value)
    params = getattr(type(value), "__dataclass_params__")  # noqa: B009
    assert params.frozen, type(value)
    for f in dataclasses.fields(value):
        _walk_snapshot(getattr(value, f.name))


@pytest.mark.req("MWP-WRK-010")
def test_snapshot_is_frozen_and_does_not_follow_later_changes() -> None:
    s = Scheduler(no_preemption(quotas={"ga": 2}))
    s.enqueue(work("a0", "ga"))
    s.enqueue(work("a1", "ga", urgency=CRITICAL))
    s.enqueue(work("b0", "gb", risk_gate_open=False))
    s.decide(0, free("s0"))
    s.completed("a1", service_us=TICK)
    snap = s.snapshot(TICK)
    assert isinstance(snap, SchedulerSnapshot)
    _walk_snapshot(snap)
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.taken_at_us = 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.groups[0].served_us = 0  # type: ignore[misc]
    before = snap
    s.enqueue(work("a2", "ga"))
    s.decide(TICK, free("s0"))
    assert snap == before and [e.work_item_id for e in snap.group("ga").queue] == ["a0"]
    ga: GroupSnapshot = snap.group("ga")
    assert (ga.quota, ga.served_us, ga.served_share, ga.weight_share) == (2, TICK, 1.0, 0.5)
    assert snap.group("gb").queue[0].eligible is False
    with pytest.raises(KeyError):
        snap.group("nobody")


@pytest.mark.req("MWP-WRK-010")
def test_snapshot_positions_count_within_each_group() -> None:
    s = Scheduler()
    for i in range(3):
        s.enqueue(work(f"a{i}", "ga", enqueued_us=i))
        s.enqueue(work(f"b{i}", "gb", enqueued_us=i))
    snap = s.snapshot(10)
    for group in snap.groups:
        assert [e.position for e in group.queue] == [1, 2, 3]


# -- values ----------------------------------------------------------------------------------


@pytest.mark.req("MWP-WRK-028")
def test_queued_work_holds_scheduling_metadata_and_no_mission_content() -> None:
    names = {f.name for f in dataclasses.fields(QueuedWork)}
    assert names == {
        "work_item_id",
        "group_id",
        "urgency",
        "deadline_us",
        "business_impact_rank",
        "enqueued_us",
        "estimated_duration_us",
        "risk_gate_open",
        "resources_available",
        "priority_class",
    }


@pytest.mark.parametrize(
    "fields",
    [
        {"business_impact_rank": -1},
        {"enqueued_us": -1},
        {"estimated_duration_us": 1.5},
        {"priority_class": True},
        {"urgency": "critical"},
        {"deadline_us": -5},
    ],
)
def test_queued_work_rejects_invalid_metadata(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        work("a0", "ga", **fields)


def test_queued_work_needs_both_ids() -> None:
    with pytest.raises(ValueError):
        QueuedWork(work_item_id="", group_id="ga", enqueued_us=0, estimated_duration_us=0)
    with pytest.raises(ValueError):
        QueuedWork(work_item_id="a0", group_id="", enqueued_us=0, estimated_duration_us=0)


def test_slot_names_its_work_group_and_start_together_or_not_at_all() -> None:
    with pytest.raises(ValueError):
        Slot(slot_id="s0", work_item_id="a0")
    with pytest.raises(ValueError):
        Slot(slot_id="")
    assert Slot(slot_id="s0").free


@pytest.mark.parametrize(
    "fields",
    [
        {"weights": {"ga": 0}},
        {"weights": {"ga": float("nan")}},
        {"default_weight": -1.0},
        {"quotas": {"ga": 0}},
        {"min_charge_us": 0},
        {"min_charge_us": 10, "max_charge_us": 5},
        {"deadline_horizon_us": 0},
        {"aging_points_per_s": -1.0},
        {"preemption": "cooperative"},
    ],
)
def test_config_rejects_values_that_break_the_fairness_bound(fields: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        SchedulerConfig(**fields)  # type: ignore[arg-type]


def test_config_mappings_cannot_be_changed_after_construction() -> None:
    weights = {"ga": 2.0}
    config = SchedulerConfig(weights=weights)
    weights["ga"] = 100.0
    assert config.weight_of("ga") == 2.0 and config.exact_weight_of("gz") == 1
    with pytest.raises(TypeError):
        config.weights["ga"] = 3.0  # type: ignore[index]
    assert SchedulerConfig(weights={"ga": 0.1}).exact_weight_of("ga") == Fraction(1, 10)


def test_enqueueing_a_known_item_and_touching_unknown_items_are_refused() -> None:
    s = Scheduler()
    s.enqueue(work("a0", "ga"))
    with pytest.raises(ValueError):
        s.enqueue(work("a0", "gb"))
    with pytest.raises(KeyError):
        s.reprioritize("zz", urgency=CRITICAL)
    with pytest.raises(KeyError):
        s.completed("a0", service_us=0)  # queued, not in flight
    with pytest.raises(KeyError):
        s.requeue("a0", service_us=0)
    with pytest.raises(ValueError):
        s.record_service("ga", -1)
    with pytest.raises(ValueError):
        s.decide(0, [*free("s0"), *free("s0")])
