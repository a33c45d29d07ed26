"""Blocking (MWP-WRK-017): a blocked Worker checkpoints, emits ``work.blocked`` with the required
resolution and releases its execution slot; once unblocked the work returns to its Group's queue
and is started again."""

from __future__ import annotations

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.protocol.tables import WorkItemState

from .worker_world import GROUP, act, started_world, worker

A = "urn:mwp-local:work:a"
B = "urn:mwp-local:work:b"


@pytest.mark.req("MWP-WRK-017")
def test_a_block_releases_the_slot_and_unblocked_work_returns_to_its_group_queue() -> None:
    world = started_world()
    for wid in (A, B):
        world.authorize(wid)
        world.offer(wid)
    runtime = worker(world, max_concurrency=1, queue_capacity=4)
    act(world, runtime, ("work.accept_offer", "work.start"))
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    [running] = policy.slots.values()
    first, second = running.work_item_id, ({A, B} - {running.work_item_id}).pop()
    running.block_at_us = world.now_us + 120_000_000
    world.advance(120)

    [blocked] = act(world, runtime, ("work.block",))
    item = world.state.work_items[first]
    assert item.state is WorkItemState.BLOCKED
    assert blocked.payload["requiredResolution"]
    progress = blocked.payload["checkpoint"]["progress"]
    assert progress["blockers"] == [blocked.payload["requiredResolution"]]
    assert policy.slots == {}  # the slot is free ...
    [start] = act(world, runtime, ("work.start",))  # ... and the other item takes it
    assert start.payload["workItemId"] == second
    assert world.state.work_items[second].state is WorkItemState.ACTIVE
    assert {row.work_item_id: row.state for row in runtime.work_queues()[GROUP]} == {
        first: "blocked",
        second: "active",
    }

    world.ok("coordinator", "work.unblock", {"workItemId": first, "resolution": "Use Markdown."})
    act(world, runtime, ("work.start",))  # nothing to start: the only slot is busy
    assert world.state.work_items[first].state is WorkItemState.QUEUED
    rows = {row.work_item_id: row.state for row in runtime.work_queues()[GROUP]}
    assert rows[first] == "queued"  # back in its Group's queue
    queue = policy.scheduler.snapshot().group(GROUP).queue
    assert [entry.work_item_id for entry in queue] == [first]

    policy.slots[second].block_at_us = world.now_us  # free the slot again
    act(world, runtime, ("work.block",))
    [restart] = act(world, runtime, ("work.start",))
    assert restart.payload["workItemId"] == first
    assert policy.slots[first].done_before_us == 120_000_000  # from its block checkpoint


@pytest.mark.req("MWP-WRK-017")
def test_blocked_work_does_not_re_enter_the_queue_before_it_is_unblocked() -> None:
    world = started_world()
    world.authorize(A)
    world.offer(A)
    runtime = worker(world, max_concurrency=1)
    act(world, runtime, ("work.accept_offer", "work.start"))
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    policy.slots[A].block_at_us = world.now_us
    act(world, runtime, ("work.block",))
    world.advance(60)
    assert act(world, runtime, ("work.start",)) == []
    assert policy.scheduler.snapshot().group(GROUP).queue == ()
