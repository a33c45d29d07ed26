"""A Worker's per-Group Event inbox, Cursor and work queue as durable local projections
(MWP-WRK-008): one contract suite for the in-memory and DuckDB stores, then the runtime that
fills them, commits a Cursor only with what it produced, and rebuilds them by replay."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.runtime import AgentRuntime
from mwp_local.protocol.inbox import ORG
from mwp_local.store.agent_store import (
    DuckDBLocalStore,
    InboxRow,
    LocalBatch,
    LocalStore,
    MemoryLocalStore,
    QueueRow,
)

from .worker_world import GROUP, World, act, started_world, worker

G2 = "urn:missionweaveprotocol:group:beta"
M2 = "urn:missionweaveprotocol:mission:beta"
WID = "urn:mwp-local:work:feature"
WID2 = "urn:mwp-local:work:beta-feature"


@pytest.fixture(params=["memory", "duckdb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LocalStore]:
    made: LocalStore = (
        MemoryLocalStore() if request.param == "memory" else DuckDBLocalStore(tmp_path / "w.duckdb")
    )
    yield made
    made.close()


def _row(position: int, group: str = GROUP, sequence: int | None = None) -> InboxRow:
    return InboxRow(
        position=position,
        group_id=group,
        sequence=position if sequence is None else sequence,
        event_id=f"urn:uuid:e-{position}",
        kind="work.offer.created",
        document='{"k":1}',
    )


def _queue_row(wid: str, group: str = GROUP, **over: Any) -> QueueRow:
    fields: dict[str, Any] = {
        "group_id": group,
        "work_item_id": wid,
        "state": "queued",
        "ownership_epoch": 1,
        "contract_version": 1,
        "urgency": "normal",
        "deadline": "2026-07-20T00:00:00Z",
        "lease_id": "urn:mwp-local:lease:1",
        "last_sequence": 3,
    }
    fields.update(over)
    return QueueRow(**fields)


# --------------------------------------------------------------------------- the store contract


@pytest.mark.req("MWP-WRK-008")
def test_a_committed_batch_is_loaded_back_whole(store: LocalStore) -> None:
    store.commit(
        LocalBatch(
            events=(_row(1), _row(2, G2, 1)),
            cursors={GROUP: 1, G2: 1},
            queues={GROUP: (_queue_row(WID),), G2: (_queue_row(WID2, G2),)},
        )
    )
    snap = store.load()
    assert [r.event_id for r in snap.events] == ["urn:uuid:e-1", "urn:uuid:e-2"]
    assert snap.cursors == {GROUP: 1, G2: 1}
    assert snap.queues == {GROUP: (_queue_row(WID),), G2: (_queue_row(WID2, G2),)}


@pytest.mark.req("MWP-WRK-008")
def test_each_group_keeps_its_own_cursor_and_queue(store: LocalStore) -> None:
    store.commit(
        LocalBatch(events=(_row(1),), cursors={GROUP: 1}, queues={GROUP: (_queue_row(WID),)})
    )
    store.commit(
        LocalBatch(events=(_row(2, G2, 1),), cursors={G2: 1}, queues={G2: (_queue_row(WID2, G2),)})
    )
    store.commit(LocalBatch(events=(_row(3, GROUP, 2),), cursors={GROUP: 2}, queues={GROUP: ()}))
    snap = store.load()
    assert snap.cursors == {GROUP: 2, G2: 1}
    assert snap.queues == {G2: (_queue_row(WID2, G2),)}  # an emptied queue is gone


@pytest.mark.req("MWP-WRK-008")
def test_a_batch_with_a_gap_in_release_order_is_refused_and_changes_nothing(
    store: LocalStore,
) -> None:
    store.commit(LocalBatch(events=(_row(1),), cursors={GROUP: 1}))
    with pytest.raises(ValueError, match="position"):
        store.commit(LocalBatch(events=(_row(3),), cursors={GROUP: 3}))
    snap = store.load()
    assert [r.position for r in snap.events] == [1] and snap.cursors == {GROUP: 1}


def test_a_failing_write_stores_neither_the_cursor_nor_what_it_produced(tmp_path: Path) -> None:
    store = DuckDBLocalStore(tmp_path / "w.duckdb")
    bad = _queue_row(WID, ownership_epoch="not a number")
    with pytest.raises(Exception):  # noqa: B017 - whatever the adapter raises, nothing is kept
        store.commit(LocalBatch(events=(_row(1),), cursors={GROUP: 1}, queues={GROUP: (bad,)}))
    snap = store.load()
    assert snap.events == () and snap.cursors == {} and snap.queues == {}
    store.commit(LocalBatch(events=(_row(1),), cursors={GROUP: 1}))  # and it still works
    store.close()


@pytest.mark.req("MWP-WRK-008")
def test_the_duckdb_store_survives_closing_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "agents" / "w.duckdb"
    first = DuckDBLocalStore(path)
    first.commit(
        LocalBatch(events=(_row(1),), cursors={GROUP: 1}, queues={GROUP: (_queue_row(WID),)})
    )
    first.close()
    again = DuckDBLocalStore(path)
    snap = again.load()
    assert snap.cursors == {GROUP: 1} and snap.queues == {GROUP: (_queue_row(WID),)}
    again.commit(LocalBatch(events=(_row(2),), cursors={GROUP: 2}))  # positions continue
    again.close()


# --------------------------------------------------------------------------- the runtime


def _two_groups() -> World:
    """worker-a owns a queued item in each of two Groups."""
    world = started_world()
    world.create_mission(group=G2, mission=M2)
    for wid, group in ((WID, GROUP), (WID2, G2)):
        world.ok(
            "coordinator",
            "work.authorize",
            {"workItemId": wid, "contract": world.contract()},
            group=group,
        )
        world.ok(
            "coordinator",
            "work.offer",
            {
                "workItemId": wid,
                "agentId": world.org.get("worker-a").id,
                "expiresAt": world.at(300),
                "selectionBasis": world.basis(),
            },
            group=group,
        )
        item = world.state.work_items[wid]
        world.ok(
            "worker-a",
            "work.accept_offer",
            {"workItemId": wid},
            group=group,
            expected_revision=item.revision,
        )
    return world


@pytest.mark.req("MWP-WRK-008")
def test_the_runtime_keeps_a_distinct_inbox_cursor_and_queue_per_group() -> None:
    world = _two_groups()
    store = MemoryLocalStore()
    runtime = worker(world, store=store)
    runtime.flush()
    snap = store.load()
    by_group: dict[str, list[int]] = {}
    for row in snap.events:
        by_group.setdefault(row.group_id, []).append(row.sequence)
    assert set(by_group) == {ORG, GROUP, G2}
    for group in (GROUP, G2):
        last = world.state.groups[group].last_sequence
        assert by_group[group] == list(range(1, last + 1))  # every Event once, in order
        assert snap.cursors[group] == last
    assert snap.cursors[ORG] == len(by_group[ORG])
    assert {g: [r.work_item_id for r in rows] for g, rows in snap.queues.items()} == {
        GROUP: [WID],
        G2: [WID2],
    }
    assert snap.queues == runtime.work_queues()


@pytest.mark.req("MWP-WRK-008")
def test_nothing_is_committed_until_the_worker_acts_and_then_all_in_one_transaction() -> None:
    world = _two_groups()
    store = MemoryLocalStore()
    runtime = worker(world, store=store)
    assert store.commits == 0 and store.load().events == ()
    sent = act(world, runtime, ("work.start",))
    assert sent and store.commits >= 1
    # What the Worker acted on is durable: the queue it dispatched from is stored.
    stored = store.load()
    assert stored.cursors[GROUP] >= world.state.work_items[WID].last_sequence - 1


@pytest.mark.req("MWP-WRK-008", "MWP-WRK-029")
def test_the_durable_cursor_never_moves_over_a_gap() -> None:
    world = _two_groups()
    store = MemoryLocalStore()
    runtime = AgentRuntime(world.org, world.org.get("worker-a"), worker(world).policy, local=store)
    events = [e for e in world.events if e.get("groupId") == GROUP]
    gap = events[3]
    runtime.deliver([e for e in world.events if e is not gap])
    runtime.flush()
    snap = store.load()
    assert snap.cursors[GROUP] == gap["sequence"] - 1
    assert gap["eventId"] not in {r.event_id for r in snap.events}
    assert all(r.sequence < gap["sequence"] for r in snap.events if r.group_id == GROUP)
    runtime.deliver([gap])  # redelivery fills the gap, the buffered rest follows
    runtime.flush()
    assert store.load().cursors[GROUP] == world.state.groups[GROUP].last_sequence


@pytest.mark.req("MWP-WRK-008")
def test_a_runtime_reopened_on_its_store_rebuilds_identical_queues_by_replay(
    tmp_path: Path,
) -> None:
    world = _two_groups()
    path = tmp_path / "agents" / "worker-a.duckdb"
    first = worker(world, store=DuckDBLocalStore(path))
    act(world, first, ("work.start",))
    first.close()
    before = first.work_queues()
    again = worker(world, store=DuckDBLocalStore(path))
    assert again.restored is not None and again.restored.matches
    assert again.restored.events > 0
    assert again.work_queues() == before
    assert again.inbox.cursors == first.inbox.cursors
    assert again.deliver(world.events) == 0  # every Event is a duplicate now
    again.close()


@pytest.mark.req("MWP-WRK-008")
def test_a_runtime_without_its_file_rebuilds_the_same_queues_from_the_group_log() -> None:
    world = _two_groups()
    first = worker(world)
    act(world, first, ("work.start",))
    rebuilt = worker(world, store=MemoryLocalStore())  # re-delivery of the whole log
    assert rebuilt.work_queues() == first.work_queues()
    assert {g: c for g, c in rebuilt.inbox.cursors.items() if g != ORG} == {
        g: c for g, c in first.inbox.cursors.items() if g != ORG
    }


@pytest.mark.req("MWP-WRK-008")
def test_a_stored_queue_that_disagrees_with_its_events_is_rebuilt_from_them() -> None:
    world = _two_groups()
    store = MemoryLocalStore()
    first = worker(world, store=store)
    first.flush()
    truth = first.work_queues()
    store.commit(LocalBatch(queues={GROUP: (_queue_row("urn:mwp-local:work:bogus"),)}))
    again = worker(world, store=store)
    assert again.restored is not None and not again.restored.matches
    assert again.work_queues() == truth
    assert store.load().queues == truth  # the projection was corrected, the log won
