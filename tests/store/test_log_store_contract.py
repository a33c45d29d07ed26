"""The LogStore contract: every test here runs against the in-memory and the DuckDB store."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from blake3 import blake3

from mwp_local.store.base import IntegrityError, LogStore, StoreClosedError
from mwp_local.store.records import PROJECTION_BY_NAME, Batch, ProjectionDelta

from .conftest import StoreMaker, snapshot
from .factory import GROUP_A, GROUP_B, LogFactory, budget_row, mission_row


def _upserts(table: str, *rows: dict[str, Any]) -> ProjectionDelta:
    return ProjectionDelta(upserts={table: rows})


def test_store_satisfies_the_log_store_protocol(store: LogStore) -> None:
    assert isinstance(store, LogStore)


def test_empty_store_has_genesis_head_and_nothing_in_it(store: LogStore) -> None:
    assert store.chain_head() == (0, bytes(32))
    assert store.event_count() == 0
    assert list(store.events()) == []
    assert list(store.entries()) == []
    assert list(store.receipts()) == []
    assert store.rejections() == []
    assert store.last_sequence(GROUP_A) == 0
    for name in PROJECTION_BY_NAME:
        assert store.projection_rows(name) == []


def test_committed_batch_reads_back_unchanged(store: LogStore, factory: LogFactory) -> None:
    batch = factory.batch(4, rejections=2)
    store.commit(batch)
    assert list(store.events()) == list(batch.events)
    assert list(store.events(GROUP_A)) == list(batch.events)
    assert list(store.receipts()) == list(batch.receipts)
    assert store.rejections() == list(batch.rejections)
    assert store.event_count() == 4
    assert [e.position for e in store.entries()] == [1, 2, 3, 4]


def test_events_keep_optional_fields_and_unicode(store: LogStore, factory: LogFactory) -> None:
    event = factory.event(
        kind="work.claimed",
        work_item_id="urn:mwp:work-item:ü",
        from_state="offered",
        to_state="claimed",
        payload={"emoji": "🧵", "nested": {"a": [1, 2.5, None, True]}},
    )
    store.commit(Batch(events=(event,)))
    assert list(store.events()) == [event]


def test_group_events_come_in_sequence_order_and_skip_up_to_after_sequence(
    store: LogStore, factory: LogFactory
) -> None:
    for _ in range(3):
        a = factory.event(GROUP_A)
        b = factory.event(GROUP_B)
        org = factory.event(None, kind="ext.missionweaveprotocol.identity.session_opened")
        store.commit(Batch(events=(a, org, b)))
    a_events = list(store.events(GROUP_A))
    assert [e.sequence for e in a_events] == [1, 2, 3]
    assert {e.group_id for e in a_events} == {GROUP_A}
    assert [e.sequence for e in store.events(GROUP_B, after_sequence=1)] == [2, 3]
    assert list(store.events(GROUP_B, after_sequence=3)) == []
    assert store.last_sequence(GROUP_A) == 3
    assert store.last_sequence(GROUP_B) == 3


def test_whole_log_includes_org_scoped_events_in_position_order(
    store: LogStore, factory: LogFactory
) -> None:
    org = factory.event(None)
    a = factory.event(GROUP_A)
    store.commit(Batch(events=(org, a)))
    b = factory.event(GROUP_B)
    store.commit(Batch(events=(b,)))
    assert list(store.events()) == [org, a, b]
    assert [(x.position, x.event) for x in store.entries()] == [(1, org), (2, a), (3, b)]
    assert [x.event for x in store.entries(after_position=2)] == [b]


def test_events_after_sequence_without_a_group_is_refused(store: LogStore) -> None:
    with pytest.raises(ValueError):
        list(store.events(None, after_sequence=1))


def test_chain_head_equals_an_independent_recomputation(
    store: LogStore, factory: LogFactory
) -> None:
    documents = []
    for n in (1, 5, 2):
        batch = factory.batch(n)
        store.commit(batch)
        documents += [e.document for e in batch.events]
    chain = bytes(32)
    for document in documents:
        chain = blake3(chain + document.encode("utf-8")).digest()
    assert store.chain_head() == (8, chain)
    assert list(store.entries())[-1].chain == chain


def test_receipt_is_found_by_actor_and_action(store: LogStore, factory: LogFactory) -> None:
    batch = factory.batch(2)
    store.commit(batch)
    receipt = batch.receipts[0]
    assert store.receipt(receipt.actor_id, receipt.action_id) == receipt
    assert store.receipt(receipt.actor_id, "urn:uuid:unknown") is None
    assert store.receipt("urn:mwp:agent:other", receipt.action_id) is None


def test_receipt_without_events_or_group_round_trips(store: LogStore, factory: LogFactory) -> None:
    receipt = factory.receipt((), group_id=None)
    store.commit(Batch(receipts=(receipt,)))
    assert store.receipt(receipt.actor_id, receipt.action_id) == receipt


def test_receipts_and_rejections_keep_commit_order(store: LogStore, factory: LogFactory) -> None:
    batches = [factory.batch(1, rejections=1) for _ in range(5)]
    for batch in batches:
        store.commit(batch)
    assert list(store.receipts()) == [b.receipts[0] for b in batches]
    assert store.rejections() == [b.rejections[0] for b in batches]


def test_rejection_only_batch_appends_no_event(store: LogStore, factory: LogFactory) -> None:
    store.commit(Batch(rejections=(factory.rejection(details_json='{"expected":3}'),)))
    assert store.event_count() == 0
    assert store.rejections()[0].details_json == '{"expected":3}'


def test_empty_batch_changes_nothing(store: LogStore) -> None:
    before = snapshot(store)
    store.commit(Batch())
    assert snapshot(store) == before


# --- refused batches leave the store exactly as it was -------------------------------------


def _refused_leaves_store_unchanged(store: LogStore, batch: Batch) -> None:
    before = snapshot(store)
    with pytest.raises(IntegrityError):
        store.commit(batch)
    assert snapshot(store) == before


@pytest.fixture
def populated(store: LogStore, factory: LogFactory) -> LogStore:
    """A store holding two batches, a rejection and some projection rows."""
    store.commit(
        factory.batch(
            3, rejections=1, projections=_upserts("proj_missions", mission_row("urn:m:1"))
        )
    )
    store.commit(
        factory.batch(
            2,
            GROUP_B,
            projections=_upserts("proj_budgets", budget_row("urn:w:1", "tokens", 1.0)),
        )
    )
    return store


def test_sequence_gap_is_refused_and_changes_nothing(
    populated: LogStore, factory: LogFactory
) -> None:
    good = factory.event(GROUP_A)
    gap = factory.event(GROUP_A, sequence=good.sequence + 2)  # type: ignore[operator]
    _refused_leaves_store_unchanged(populated, Batch(events=(good, gap)))


def test_repeated_sequence_is_refused(populated: LogStore, factory: LogFactory) -> None:
    _refused_leaves_store_unchanged(populated, Batch(events=(factory.event(GROUP_A, sequence=3),)))


def test_first_sequence_of_a_group_must_be_one(store: LogStore, factory: LogFactory) -> None:
    _refused_leaves_store_unchanged(store, Batch(events=(factory.event(GROUP_A, sequence=2),)))


def test_org_scoped_event_with_a_sequence_is_refused(
    populated: LogStore, factory: LogFactory
) -> None:
    event = factory.event(None)
    bad = Batch(events=(event.__class__(**{**_fields(event), "sequence": 1}),))
    _refused_leaves_store_unchanged(populated, bad)


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__dataclass_fields__}


def test_duplicate_receipt_in_a_later_batch_is_refused_after_events_were_staged(
    populated: LogStore, factory: LogFactory
) -> None:
    existing = next(iter(populated.receipts()))
    events = (factory.event(GROUP_A), factory.event(GROUP_A))
    again = factory.receipt(events, actor_id=existing.actor_id, action_id=existing.action_id)
    batch = Batch(
        events=events,
        receipts=(again,),
        projections=_upserts("proj_missions", mission_row("urn:m:2")),
    )
    _refused_leaves_store_unchanged(populated, batch)


def test_duplicate_receipt_within_one_batch_is_refused(
    populated: LogStore, factory: LogFactory
) -> None:
    first = factory.receipt()
    twin = factory.receipt(action_id=first.action_id)
    _refused_leaves_store_unchanged(populated, Batch(receipts=(first, twin)))


@pytest.mark.parametrize("field", ["document", "explanation", "command_hash"])
def test_record_with_a_required_field_left_none_is_refused(
    populated: LogStore, factory: LogFactory, field: str
) -> None:
    batch = factory.batch(2, rejections=1)
    if field == "document":
        event = batch.events[1]
        events = (batch.events[0], event.__class__(**{**_fields(event), field: None}))
        batch = Batch(events=events, receipts=batch.receipts, rejections=batch.rejections)
    elif field == "explanation":
        rejection = batch.rejections[0]
        bad = rejection.__class__(**{**_fields(rejection), field: None})
        batch = Batch(events=batch.events, receipts=batch.receipts, rejections=(bad,))
    else:
        receipt = batch.receipts[0]
        bad_receipt = receipt.__class__(**{**_fields(receipt), field: None})
        batch = Batch(events=batch.events, receipts=(bad_receipt,))
    _refused_leaves_store_unchanged(populated, batch)


def test_malformed_payload_json_is_refused(populated: LogStore, factory: LogFactory) -> None:
    event = factory.event(GROUP_A)
    broken = event.__class__(**{**_fields(event), "payload_json": '{"a":'})
    _refused_leaves_store_unchanged(populated, Batch(events=(broken,)))


def test_malformed_rejection_details_fail_the_whole_batch(
    populated: LogStore, factory: LogFactory
) -> None:
    batch = factory.batch(5, rejections=0)
    bad = Batch(
        events=batch.events,
        receipts=batch.receipts,
        rejections=(factory.rejection(), factory.rejection(details_json="{NaN}")),
        projections=_upserts("proj_missions", mission_row("urn:m:9")),
    )
    _refused_leaves_store_unchanged(populated, bad)


@pytest.mark.parametrize(
    "row",
    [
        {"mission_id": "urn:m:1", "no_such_column": 1},
        {"mission_id": None, "state": "active"},
        {"state": "active"},
        {"mission_id": "urn:m:1", "revision": "3"},
        {"mission_id": "urn:m:1", "revision": True},
        {"mission_id": 7},
    ],
    ids=[
        "unknown-column",
        "null-key",
        "missing-key",
        "text-in-bigint",
        "bool-in-bigint",
        "int-key",
    ],
)
def test_invalid_projection_row_is_refused(
    populated: LogStore, factory: LogFactory, row: dict[str, Any]
) -> None:
    batch = factory.batch(2)
    delta = ProjectionDelta(upserts={"proj_missions": (mission_row("urn:m:5"), row)})
    bad = Batch(events=batch.events, receipts=batch.receipts, projections=delta)
    _refused_leaves_store_unchanged(populated, bad)


def test_undeclared_projection_table_is_refused(populated: LogStore, factory: LogFactory) -> None:
    bad = Batch(projections=ProjectionDelta(upserts={"proj_nope": ({"x": 1},)}))
    _refused_leaves_store_unchanged(populated, bad)


def test_key_both_upserted_and_deleted_in_one_delta_is_refused(
    populated: LogStore, factory: LogFactory
) -> None:
    delta = ProjectionDelta(
        upserts={"proj_missions": (mission_row("urn:m:1", state="done"),)},
        deletes={"proj_missions": (("urn:m:1",),)},
    )
    _refused_leaves_store_unchanged(populated, Batch(projections=delta))


def test_delete_key_of_wrong_arity_is_refused(populated: LogStore) -> None:
    delta = ProjectionDelta(deletes={"proj_budgets": (("work_item", "urn:w:1"),)})
    _refused_leaves_store_unchanged(populated, Batch(projections=delta))


# --- projections ---------------------------------------------------------------------------


def test_projection_upsert_inserts_then_replaces_the_whole_row(
    store: LogStore, factory: LogFactory
) -> None:
    store.commit(
        Batch(projections=_upserts("proj_missions", mission_row("urn:m:1", objective="x")))
    )
    store.commit(Batch(projections=_upserts("proj_missions", mission_row("urn:m:1", revision=2))))
    (row,) = store.projection_rows("proj_missions")
    assert row["revision"] == 2
    assert row["objective"] is None  # whole-row replacement, not a column merge
    assert set(row) == set(PROJECTION_BY_NAME["proj_missions"].column_names)


def test_projection_key_upserted_twice_in_one_delta_keeps_the_last_row(store: LogStore) -> None:
    delta = _upserts(
        "proj_missions",
        mission_row("urn:m:1", revision=1),
        mission_row("urn:m:2"),
        mission_row("urn:m:1", revision=7),
    )
    store.commit(Batch(projections=delta))
    rows = store.projection_rows("proj_missions")
    assert [(r["mission_id"], r["revision"]) for r in rows] == [("urn:m:1", 7), ("urn:m:2", 1)]


def test_projection_key_changed_in_consecutive_batches_keeps_one_row(store: LogStore) -> None:
    for revision in range(1, 6):
        store.commit(
            Batch(projections=_upserts("proj_missions", mission_row("urn:m:1", revision=revision)))
        )
    assert [r["revision"] for r in store.projection_rows("proj_missions")] == [5]


def test_projection_delete_removes_only_the_named_keys(store: LogStore) -> None:
    rows = [budget_row("urn:w:1", d, 1.0) for d in ("tokens", "cost", "time")]
    store.commit(Batch(projections=_upserts("proj_budgets", *rows)))
    delta = ProjectionDelta(
        deletes={
            "proj_budgets": (("work_item", "urn:w:1", "cost"), ("work_item", "urn:w:9", "cost"))
        }
    )
    store.commit(Batch(projections=delta))
    remaining = [r["dimension"] for r in store.projection_rows("proj_budgets")]
    assert remaining == ["time", "tokens"]


def test_projection_rows_are_sorted_by_key_with_typed_values(store: LogStore) -> None:
    rows = [
        budget_row("urn:w:2", "b", 3),
        budget_row("urn:w:1", "z", 1.5),
        budget_row("urn:w:1", "a", 2),
    ]
    store.commit(Batch(projections=_upserts("proj_budgets", *rows)))
    out = store.projection_rows("proj_budgets")
    assert [(r["scope_id"], r["dimension"]) for r in out] == [
        ("urn:w:1", "a"),
        ("urn:w:1", "z"),
        ("urn:w:2", "b"),
    ]
    assert all(isinstance(r["used_value"], float) for r in out)
    assert out[2]["used_value"] == 3.0


def test_projection_boolean_and_text_columns_round_trip(store: LogStore) -> None:
    row = {
        "work_item_id": "urn:w:é",
        "mission_id": "urn:m:1",
        "exclusive": True,
        "attempts": 2**40,
        "document": '{"x":"ü"}',
    }
    store.commit(Batch(projections=_upserts("proj_work_items", row)))
    (out,) = store.projection_rows("proj_work_items")
    assert {k: out[k] for k in row} == row


def test_projection_rows_of_an_undeclared_table_is_refused(store: LogStore) -> None:
    with pytest.raises(ValueError):
        store.projection_rows("log_events")


def test_replace_projections_writes_given_rows_and_empties_the_rest(
    populated: LogStore,
) -> None:
    populated.replace_projections(
        {"proj_missions": [mission_row("urn:m:b"), mission_row("urn:m:a", revision=4)]}
    )
    assert [r["mission_id"] for r in populated.projection_rows("proj_missions")] == [
        "urn:m:a",
        "urn:m:b",
    ]
    assert populated.projection_rows("proj_budgets") == []


def test_replace_projections_with_a_repeated_key_is_refused_and_changes_nothing(
    populated: LogStore,
) -> None:
    before = snapshot(populated)
    with pytest.raises(IntegrityError):
        populated.replace_projections(
            {"proj_budgets": [budget_row("urn:w:1", "t", 1), budget_row("urn:w:1", "t", 2)]}
        )
    assert snapshot(populated) == before


def test_replace_projections_leaves_the_log_alone(populated: LogStore) -> None:
    before = snapshot(populated)
    populated.replace_projections({})
    after = snapshot(populated)
    assert after["entries"] == before["entries"]
    assert after["receipts"] == before["receipts"]
    assert after["head"] == before["head"]
    assert all(rows == [] for rows in after["projections"].values())


def test_rebuild_by_replay_restores_dropped_projections(
    store: LogStore, factory: LogFactory
) -> None:
    # A toy reducer: one proj_missions row per Group with the count of its Events.
    for group in (GROUP_A, GROUP_B, GROUP_A):
        batch = factory.batch(2, group)
        count = store.last_sequence(group) + 2
        delta = _upserts("proj_missions", mission_row(group, revision=count))
        store.commit(Batch(events=batch.events, receipts=batch.receipts, projections=delta))
    live = store.projection_rows("proj_missions")
    store.replace_projections({})
    counts: dict[str, int] = {}
    for event in store.events():
        assert event.group_id is not None
        counts[event.group_id] = counts.get(event.group_id, 0) + 1
    store.replace_projections(
        {"proj_missions": [mission_row(g, revision=n) for g, n in counts.items()]}
    )
    assert store.projection_rows("proj_missions") == live


# --- lifecycle and threads -----------------------------------------------------------------


def test_closed_store_refuses_calls_and_closing_twice_is_harmless(
    store: LogStore, factory: LogFactory
) -> None:
    store.close()
    store.close()
    with pytest.raises(StoreClosedError):
        store.commit(factory.batch(1))
    with pytest.raises(StoreClosedError):
        store.event_count()


def test_concurrent_readers_see_only_whole_batches(store: LogStore) -> None:
    factory = LogFactory()
    size = 7
    stop = threading.Event()
    seen: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            while not stop.is_set():
                seen.append(sum(1 for _ in store.entries()))
                seen.append(len(list(store.events(GROUP_A))))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(40):
            store.commit(factory.batch(size))
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert not errors
    assert seen and all(n % size == 0 for n in seen)
    assert store.event_count() == 40 * size


def test_concurrent_committers_are_serialized(make_store: StoreMaker) -> None:
    store = make_store()
    factories = [LogFactory(start=1_000_000 * i) for i in range(3)]
    groups = [f"urn:mwp:group:{i}" for i in range(3)]
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            for _ in range(20):
                store.commit(factories[i].batch(3, groups[i]))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert store.event_count() == 180
    assert [e.position for e in store.entries()] == list(range(1, 181))
    for group in groups:
        assert [e.sequence for e in store.events(group)] == list(range(1, 61))
