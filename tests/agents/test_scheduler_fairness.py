"""Weighted fairness and the starvation bound of the Scheduler (MWP-WRK-009, MWP-WRK-010).

The bound checked here is derived in ``docs/scheduler.md`` and recomputed by the test
from the weights, quotas and slot count: while a Group is ready (an eligible item, below its
quota) at most ``K_g = sum_{h != g} floor(w_h (C_max / w_g + 2 L_max) / C_min) + 1`` dispatches
go to other Groups before it is served, and in time it waits at most ``(K_g // S + 1) * D``
ticks (plus ``D`` while held back by its own quota), ``D`` being the longest an item holds a slot.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mwp_local.agents.scheduler.core import (
    Dispatch,
    PreemptionPolicy,
    QueuedWork,
    RequestedUrgency,
    Scheduler,
    SchedulerConfig,
)

from .scheduler_sim import TICK, SlotSim

D_MAX = 4  # the longest any item holds a slot, in ticks


def dispatch_bound(weights: dict[str, Fraction], g: str, config: SchedulerConfig) -> int:
    """K_g: the most dispatches other Groups may get while ``g`` is ready."""
    c_min, c_max, lead = config.min_charge_us, config.max_charge_us, config.max_lead_us
    return sum(
        math.floor(w_h * (Fraction(c_max) / weights[g] + 2 * lead) / c_min) + 1
        for h, w_h in weights.items()
        if h != g
    )


def _backlogged_run(
    weights: dict[str, float],
    *,
    slots: int,
    ticks: int,
    seed: int,
    estimate: dict[str, float] | None = None,
    priority_class: dict[str, int] | None = None,
    urgency: dict[str, RequestedUrgency] | None = None,
) -> SlotSim:
    """Every Group always has work queued; durations 1..5 ticks drawn from a seeded RNG."""
    rng = random.Random(seed)
    config = SchedulerConfig(weights=weights, min_charge_us=TICK, max_charge_us=5 * TICK)
    sim = SlotSim(Scheduler(config), slots)
    counter = 0
    for tick in range(ticks):
        sim.settle(tick)
        for g in weights:
            while sum(1 for w in sim.queued.values() if w.group_id == g) < 3:
                counter += 1
                ticks_needed = rng.randint(1, 5)
                factor = 1.0 if estimate is None else estimate.get(g, 1.0)
                sim.enqueue(
                    QueuedWork(
                        work_item_id=f"{g}-{counter}",
                        group_id=g,
                        enqueued_us=tick * TICK,
                        estimated_duration_us=int(ticks_needed * TICK * factor),
                        priority_class=(priority_class or {}).get(g, 0),
                        urgency=(urgency or {}).get(g, RequestedUrgency.NORMAL),
                    ),
                    ticks_needed,
                )
        for decision in sim.decide(tick):
            sim.apply(tick, decision)
    return sim


def _shares(sim: SlotSim) -> dict[str, float]:
    total = sum(sim.served.values())
    return {g: served / total for g, served in sim.served.items()}


@pytest.mark.req("MWP-WRK-010")
def test_served_shares_converge_to_weights_over_a_long_run() -> None:
    weights = {"g-one": 1.0, "g-two": 2.0, "g-three": 3.0}
    sim = _backlogged_run(weights, slots=4, ticks=4000, seed=11)
    shares = _shares(sim)
    # Tolerance 0.01 of total service: the theory allows a few C_max per Group out of ~16,000
    # ticks served, i.e. well under 0.005.
    for g, w in weights.items():
        assert shares[g] == pytest.approx(w / 6.0, abs=0.01), shares
    snapshot = sim.scheduler.snapshot()
    for g, w in weights.items():
        group = snapshot.group(g)
        assert group.weight_share == pytest.approx(w / 6.0)
        assert group.served_share == pytest.approx(w / 6.0, abs=0.01)


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-010")
def test_underestimated_durations_do_not_buy_a_larger_share() -> None:
    # g-low claims every item takes no time at all; debt from reported service corrects it.
    weights = {"g-low": 1.0, "g-honest": 1.0}
    sim = _backlogged_run(weights, slots=3, ticks=4000, seed=5, estimate={"g-low": 0.0})
    shares = _shares(sim)
    assert shares["g-low"] == pytest.approx(0.5, abs=0.02), shares


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-010")
def test_critical_urgency_and_top_priority_class_do_not_change_long_run_shares() -> None:
    weights = {"g-loud": 1.0, "g-quiet": 1.0}
    sim = _backlogged_run(
        weights,
        slots=2,
        ticks=4000,
        seed=3,
        priority_class={"g-loud": 3},
        urgency={"g-loud": RequestedUrgency.CRITICAL, "g-quiet": RequestedUrgency.ROUTINE},
    )
    shares = _shares(sim)
    assert shares["g-quiet"] == pytest.approx(0.5, abs=0.02), shares


@dataclass(frozen=True)
class Arrival:
    """A generated burst of ``count`` alike WorkItems arriving together."""

    tick: int
    group: int
    count: int
    ticks: int
    estimate_ticks: int
    urgency: RequestedUrgency
    priority_class: int
    deadline_tick: int | None
    gate_opens_after: int | None
    preemptible: bool


def arrivals(n_groups: int) -> st.SearchStrategy[Arrival]:
    """Bursts of arrivals into one of ``n_groups`` Groups over the first 40 ticks."""
    return st.builds(
        Arrival,
        tick=st.integers(0, 40),
        group=st.integers(0, n_groups - 1),
        count=st.integers(1, 8),
        ticks=st.integers(1, D_MAX),
        # Extremes often: no estimate at all, or twice the longest real duration.
        estimate_ticks=st.sampled_from([0, 2 * D_MAX]) | st.integers(0, 2 * D_MAX),
        urgency=st.sampled_from(list(RequestedUrgency)),
        priority_class=st.integers(0, 4),
        deadline_tick=st.none() | st.integers(0, 40),
        gate_opens_after=st.none() | st.integers(0, 10),
        preemptible=st.booleans(),
    )


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, object]:
    """Groups with weights and quotas, a slot count, a preemption set-up and arrivals."""
    n_groups = draw(st.integers(2, 4))
    return {
        "weights": [draw(st.sampled_from([0.5, 1, 2, 3])) for _ in range(n_groups)],
        "quotas": [draw(st.none() | st.integers(1, 3)) for _ in range(n_groups)],
        "slots": draw(st.integers(1, 4)),
        "preemption": draw(st.sampled_from(list(PreemptionPolicy))),
        "margin": draw(st.sampled_from([0.5, 1.0, 2.0])),
        "min_run": draw(st.integers(0, 2)),
        "safe_every": draw(st.integers(1, 3)),
        "lead": draw(st.sampled_from([0, 1, 2])),
        "arrivals": draw(st.lists(arrivals(n_groups), min_size=1, max_size=30)),
    }


def _burst(tick: int, group: int, count: int, ticks: int = D_MAX, estimate: int = D_MAX) -> Arrival:
    return Arrival(
        tick, group, count, ticks, estimate, RequestedUrgency.NORMAL, 0, None, None, True
    )


#: Group 0 works once, goes idle while group 1 is busy for a long time, then returns with a
#: burst: without lifting its virtual time on return it would hold the slot far past the bound.
RETURN_FROM_IDLE: dict[str, object] = {
    "weights": [1, 1],
    "quotas": [None, None],
    "slots": 1,
    "preemption": PreemptionPolicy.NEVER,
    "margin": 1.0,
    "min_run": 0,
    "safe_every": 1,
    "lead": 0,
    "arrivals": [_burst(0, 0, 1), *(_burst(t, 1, 8) for t in (1, 9, 17, 25)), _burst(40, 0, 8)],
}


#: Group 0 goes first with an item estimated at twice C_max, then group 1 streams short items.
#: The charge is capped at C_max, so group 0 waits 4 dispatches (5 if ties went the other way)
#: against a bound of K = 5; without the cap it would wait 8.
OVERESTIMATE: dict[str, object] = {
    **RETURN_FROM_IDLE,
    "arrivals": [
        _burst(0, 0, 1, ticks=1, estimate=2 * D_MAX),
        _burst(0, 0, 1, ticks=1, estimate=1),
        _burst(0, 1, 8, ticks=1, estimate=1),
    ],
}


def _alike(group: int, ticks: int = 1) -> Arrival:
    """One item arriving at tick 0, estimated at nothing (so every dispatch is charged C_min)."""
    return Arrival(0, group, 1, ticks, 0, RequestedUrgency.ROUTINE, 0, None, None, False)


#: The dispatch bound is attained. Weights 0.5, 0.5 and 3, one slot, no lead: K = 2 for the
#: weight-3 group (each other Group may win once, at the pass V0 they all start at). All three
#: passes tie at 0, the ties go by Group ID, so group 2 waits exactly 2 dispatches.
DISPATCH_BOUND_ATTAINED: dict[str, object] = {
    **RETURN_FROM_IDLE,
    "weights": [0.5, 0.5, 3],
    "quotas": [None, None, None],
    "arrivals": [_alike(0), _alike(1), _alike(2)],
}


#: The time bound is attained, on a wait that starts right after a dispatch. Group 0 (weight 3,
#: K = 1) fills both slots at tick 0 with 4-tick items and is still ready; nothing else is ready,
#: so both slots stay busy until tick 4 = (K // S + 1) * D, when it is served again.
TIME_BOUND_ATTAINED: dict[str, object] = {
    **RETURN_FROM_IDLE,
    "weights": [3, 0.5],
    "slots": 2,
    "arrivals": [_alike(0, ticks=D_MAX)] * 3,
}


@dataclass(frozen=True)
class Closest:
    """How near a run came to the bounds: the most by which a wait fell short of them (<= 0)."""

    dispatches: int
    ticks: int


# Derandomized: CI runs the same 300 generated scenarios every time (a failure reproduces on any
# machine, and the example database is not consulted). Widen a local search with
# ``max_examples`` and ``derandomize=False`` when changing the Scheduler.
@pytest.mark.req("MWP-WRK-010", "MWP-WRK-009", "MWP-WRK-015")
@settings(
    max_examples=300,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(scenario=scenarios())
@example(scenario=RETURN_FROM_IDLE)
@example(scenario=OVERESTIMATE)
@example(scenario=DISPATCH_BOUND_ATTAINED)
@example(scenario=TIME_BOUND_ATTAINED)
def test_any_ready_group_is_served_within_the_bound_whatever_the_arrivals(
    scenario: dict[str, object],
) -> None:
    _run_within_the_bounds(scenario)


@pytest.mark.req("MWP-WRK-010")
@pytest.mark.parametrize(
    ("scenario", "bound"),
    [(DISPATCH_BOUND_ATTAINED, "dispatches"), (TIME_BOUND_ATTAINED, "ticks")],
    ids=["dispatch-bound", "time-bound"],
)
def test_the_starvation_bounds_are_attained(scenario: dict[str, object], bound: str) -> None:
    # The bounds are exact, not slack: an off-by-one in the Scheduler's ties or in K_g fails here
    # even when no generated scenario happens to reach a bound.
    assert getattr(_run_within_the_bounds(scenario), bound) == 0


def _run_within_the_bounds(scenario: dict[str, object]) -> Closest:
    """Run a scenario, asserting every bound at every dispatch; return how close it came."""
    weights_in: list[float] = scenario["weights"]  # type: ignore[assignment]
    quotas_in: list[int | None] = scenario["quotas"]  # type: ignore[assignment]
    n_slots: int = scenario["slots"]  # type: ignore[assignment]
    plan: list[Arrival] = scenario["arrivals"]  # type: ignore[assignment]
    groups = [f"group-{i}" for i in range(len(weights_in))]
    config = SchedulerConfig(
        weights={g: float(w) for g, w in zip(groups, weights_in, strict=True)},
        quotas={g: q for g, q in zip(groups, quotas_in, strict=True) if q is not None},
        min_charge_us=TICK,
        max_charge_us=D_MAX * TICK,
        class_lead_us=TICK,
        deadline_lead_us=TICK,
        max_lead_us=scenario["lead"] * TICK,  # type: ignore[operator]
        deadline_horizon_us=10 * TICK,
        preemption=scenario["preemption"],  # type: ignore[arg-type]
        preemption_score_margin=scenario["margin"],  # type: ignore[arg-type]
        min_run_before_preemption_us=scenario["min_run"] * TICK,  # type: ignore[operator]
    )
    safe_every: int = scenario["safe_every"]  # type: ignore[assignment]
    sim = SlotSim(Scheduler(config), n_slots, safe_point=lambda tick, ran: ran % safe_every == 0)
    weights = {g: Fraction(repr(float(w))) for g, w in zip(groups, weights_in, strict=True)}
    bound = {g: dispatch_bound(weights, g, config) for g in groups}
    time_bound = {g: (bound[g] // n_slots + 1) * D_MAX for g in groups}

    def ready(g: str) -> bool:
        quota = config.quota_of(g)
        return sim.has_eligible(g) and (quota is None or sim.running_count(g) < quota)

    def enqueue(wid: str, a: Arrival, tick: int) -> None:
        sim.enqueue(
            QueuedWork(
                work_item_id=wid,
                group_id=groups[a.group],
                urgency=a.urgency,
                deadline_us=None if a.deadline_tick is None else a.deadline_tick * TICK,
                enqueued_us=tick * TICK,
                estimated_duration_us=a.estimate_ticks * TICK,
                priority_class=a.priority_class,
                risk_gate_open=a.gate_opens_after is None,
            ),
            a.ticks,
            preemptible=a.preemptible,
        )
        if a.gate_opens_after is not None:
            gates.setdefault(tick + a.gate_opens_after + 1, []).append(wid)

    closest = Closest(dispatches=-(10**9), ticks=-(10**9))
    waiting_since: dict[str, tuple[int, int] | None] = dict.fromkeys(groups)  # (tick, others)
    eligible_since: dict[str, int | None] = dict.fromkeys(groups)
    gates: dict[int, list[str]] = {}
    last_tick = max(a.tick for a in plan) + 20
    tick = 0
    while tick <= last_tick or not sim.idle():
        assert tick < last_tick + 2000, "the run did not drain"
        sim.settle(tick)
        for wid in gates.pop(tick, []):
            sim.open_gate(wid)
        for n, a in enumerate(plan):
            for k in range(a.count if a.tick == tick else 0):
                enqueue(f"wi-{n}-{k}", a, tick)
        for g in groups:
            if not ready(g):
                waiting_since[g] = None
            elif waiting_since[g] is None:
                waiting_since[g] = (tick, 0)
            if not sim.has_eligible(g):
                eligible_since[g] = None
            elif eligible_since[g] is None:
                eligible_since[g] = tick
        for decision in sim.decide(tick):
            sim.apply(tick, decision)
            if not isinstance(decision, Dispatch):
                continue
            served = sim.running[decision.slot_id]
            assert served is not None
            winner = served.work.group_id
            for g in groups:
                wait = waiting_since[g]
                if g == winner:
                    if wait is not None:
                        assert wait[1] <= bound[g], (g, wait, bound)
                        assert tick - wait[0] <= time_bound[g], (g, wait, tick, time_bound)
                        closest = Closest(
                            dispatches=max(closest.dispatches, wait[1] - bound[g]),
                            ticks=max(closest.ticks, tick - wait[0] - time_bound[g]),
                        )
                    since = eligible_since[g]
                    if since is not None:
                        assert tick - since <= time_bound[g] + D_MAX, (g, since, tick)
                    # Still ready after being served: a new wait starts right now.
                    waiting_since[g] = (tick, 0) if ready(g) else None
                    eligible_since[g] = tick if sim.has_eligible(g) else None
                elif wait is not None:
                    waiting_since[g] = (wait[0], wait[1] + 1)
                    assert wait[1] + 1 <= bound[g], (g, wait, bound)
        tick += 1
    # Cooperative preemption (MWP-WRK-015): only ever asked of a slot at a safe point.
    for shown, request in sim.requests:
        assert shown.at_safe_point and shown.preemptible
        assert shown.work_item_id == request.work_item_id
    return closest
