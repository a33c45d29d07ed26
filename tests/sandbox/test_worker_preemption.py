"""Cooperative preemption (MWP-WRK-015): a high-priority arrival preempts running work in the
five steps of §11.3, and only once the running work is at a safe point; an unsafe point is never
interrupted."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.scheduler.core import (
    Decision,
    PreemptionPolicy,
    RequestPreemption,
    Scheduler,
    SchedulerConfig,
    Slot,
)
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.drivers.sandbox import Sandbox

from .inline import CAP, at_us, events, mission_file, of_item

LONG = "urn:mwp-local:work:m:long"
URGENT = "urn:mwp-local:work:hot:urgent"
HOT = "urn:mwp-local:group:hot"
MINUTE = 60_000_000


def _sandbox(tmp_path: Path, **options: Any) -> Sandbox:
    """Worker ``w`` (one slot) runs a two-hour item; ten minutes in, an urgent item arrives
    from a Mission the Organization's policy ranks one priority class higher."""
    spec = mission_file(
        [{"name": "w", "capabilities": [CAP], "behaviour": {"jitter": 0.0}}],
        [
            {"id": "m", "work": [{"id": "long", "duration": "2h"}]},
            {
                "id": "hot",
                "starts_after": "10m",
                "work": [{"id": "urgent", "urgency": "critical"}],
            },
        ],
    )
    fields = {"priority_classes": {HOT: 1}, "scheduler": _RecordingScheduler(), **options}
    return Sandbox(tmp_path / "s", spec, worker_options={"w": fields})


def _requests(sandbox: Sandbox) -> list[tuple[int, str, bool]]:
    policy = unwrap(sandbox.runtime("w").policy)
    assert isinstance(policy, WorkerPolicy) and isinstance(policy.scheduler, _RecordingScheduler)
    return policy.scheduler.seen


class _RecordingScheduler(Scheduler):
    """The Worker's Scheduler, remembering when it asked which slot to yield (§11.3 step 1)."""

    def __init__(self) -> None:
        super().__init__(SchedulerConfig(preemption=PreemptionPolicy.COOPERATIVE))
        self.seen: list[tuple[int, str, bool]] = []

    def decide(self, now_us: int, slots: Iterable[Slot]) -> list[Decision]:
        slots = tuple(slots)
        decisions = super().decide(now_us, slots)
        safe = {s.slot_id: s.at_safe_point for s in slots}
        for d in decisions:
            if isinstance(d, RequestPreemption):
                self.seen.append((now_us, d.work_item_id, safe[d.slot_id]))
        return decisions


def _long_resumed(sandbox: Sandbox) -> bool:
    return len(of_item(sandbox, LONG, "work.started")) >= 2


@pytest.mark.req("MWP-WRK-015")
def test_a_high_priority_arrival_preempts_cooperatively_in_the_five_steps(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path)
    sandbox.run(until=_long_resumed, max_steps=400)
    requests = _requests(sandbox)
    first_start = of_item(sandbox, LONG, "work.started")[0]
    accepted = of_item(sandbox, URGENT, "work.offer.accepted")[0]
    [paused] = [e for e in of_item(sandbox, LONG, "work.checkpointed") if e["payload"]["preempted"]]
    urgent_start = of_item(sandbox, URGENT, "work.started")[0]
    # 1. the Scheduler requested preemption of the running item, once the urgent item was queued
    assert requests and {wid for _, wid, _ in requests} == {LONG}
    assert at_us(accepted) <= requests[0][0] <= at_us(paused)
    # 2. at a safe point: past the set-up phase of the running work
    assert all(safe for _, _, safe in requests)
    assert at_us(paused) >= at_us(first_start) + MINUTE
    # 3. it emitted the checkpoint (durable progress, lease released) and paused
    leases = {lease["leaseType"]: lease["state"] for lease in paused["payload"]["leases"]}
    assert leases == {"execution": "released", "ownership": "active"}
    point = paused["payload"]["checkpoint"]
    assert point["completedUs"] == at_us(paused) - at_us(first_start)
    # 4. its execution slot was released: the urgent item starts in it right after
    log = events(sandbox)
    assert log.index(urgent_start) > log.index(paused)
    starts = [r for r in sandbox.history if r.kind == "work.start" and r.accepted]
    assert {r.why.rsplit(" ", 1)[-1] for r in starts} == {"slot-0"}
    # 5. the paused item re-entered its Group queue and resumes later, from its checkpoint
    resumed = of_item(sandbox, LONG, "work.started")[1]
    assert log.index(resumed) > log.index(urgent_start)
    policy = unwrap(sandbox.runtime("w").policy)
    assert isinstance(policy, WorkerPolicy)
    assert policy.slots[LONG].done_before_us == point["completedUs"]
    sandbox.close()


@pytest.mark.req("MWP-WRK-015")
def test_work_at_an_unsafe_point_is_never_interrupted(tmp_path: Path) -> None:
    setup = 30 * MINUTE  # the long item is at an unsafe point for its first half hour
    sandbox = _sandbox(tmp_path, setup_us=setup)
    sandbox.run(until=_long_resumed, max_steps=400)
    requests = _requests(sandbox)
    started = at_us(of_item(sandbox, LONG, "work.started")[0])
    arrived = at_us(of_item(sandbox, URGENT, "work.offer.accepted")[0])
    assert arrived < started + setup  # the urgent item waited while the work was unsafe ...
    checkpoints = of_item(sandbox, LONG, "work.checkpointed")
    assert all(at_us(e) >= started + setup for e in checkpoints)
    assert requests and all(safe and at >= started + setup for at, _, safe in requests)
    [paused] = [e for e in checkpoints if e["payload"]["preempted"]]
    assert at_us(paused) == started + setup  # ... and was let in at the first safe point
    sandbox.close()


@pytest.mark.req("MWP-WRK-015")
def test_without_a_higher_priority_arrival_running_work_is_not_preempted(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path, priority_classes={})  # both Missions in the same class
    sandbox.run(until=lambda s: bool(of_item(s, URGENT, "work.started")), max_steps=400)
    assert not any(e["payload"]["preempted"] for e in of_item(sandbox, LONG, "work.checkpointed"))
    sandbox.close()
