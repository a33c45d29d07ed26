"""The Worker's side of cooperative preemption (MWP-WRK-015): it honours a request to yield only
at a safe, idempotent checkpoint, even if a Scheduler asked at an unsafe point."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from mwp_local.agents.scheduler.core import (
    Decision,
    PreemptionReason,
    RequestPreemption,
    Scheduler,
    Slot,
)
from mwp_local.protocol.tables import WorkItemState

from .worker_world import act, started_world, worker

WID = "urn:mwp-local:work:feature"


class _Insistent(Scheduler):
    """A Scheduler that asks every running slot to yield, safe point or not."""

    def decide(self, now_us: int, slots: Iterable[Slot]) -> list[Decision]:
        slots = tuple(slots)
        decisions = super().decide(now_us, slots)
        for slot in slots:
            if slot.work_item_id is not None:
                decisions.append(
                    RequestPreemption(
                        slot_id=slot.slot_id,
                        work_item_id=slot.work_item_id,
                        reason=PreemptionReason.PRIORITY_CLASS,
                    )
                )
        return decisions


@pytest.mark.req("MWP-WRK-015")
def test_a_request_to_yield_at_an_unsafe_point_is_not_honoured_until_a_safe_point() -> None:
    world = started_world()
    world.authorize(WID)
    world.offer(WID)
    runtime = worker(world, scheduler=_Insistent(), setup_us=300_000_000)
    act(world, runtime)
    assert world.state.work_items[WID].state is WorkItemState.ACTIVE
    for _ in range(4):  # asked again and again during the set-up phase: it keeps working
        world.advance(60)
        assert act(world, runtime, ("work.checkpoint",)) == []
    world.advance(60)  # 300 s in: a safe point
    [paused] = act(world, runtime, ("work.checkpoint",))
    assert paused.payload["preempted"] is True
    assert world.state.work_items[WID].state is WorkItemState.QUEUED


@pytest.mark.req("MWP-WRK-015")
def test_running_work_is_left_alone_when_nobody_asks_it_to_yield() -> None:
    world = started_world()
    world.authorize(WID)
    world.offer(WID)
    runtime = worker(world, setup_us=60_000_000)
    act(world, runtime)
    world.advance(120)  # past the set-up phase, before the halfway checkpoint
    assert act(world, runtime, ("work.checkpoint",)) == []
    assert world.state.work_items[WID].state is WorkItemState.ACTIVE
