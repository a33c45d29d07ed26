"""DuckDB-specific behaviour of the Group log: recovery on reopen, the file layout, rollback of
a failure injected mid-transaction, read-only opening and refusal of damaged files."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

from mwp_local.authority.records import EventRecord, ReceiptRecord, RejectionRecord
from mwp_local.store import duckdb_log
from mwp_local.store.base import (
    REQUIRED_FIELDS,
    IntegrityError,
    LogStoreError,
    StoreClosedError,
)
from mwp_local.store.chain import verify_chain
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import PROJECTION_BY_NAME, Batch, ProjectionDelta

from .conftest import snapshot
from .factory import GROUP_A, GROUP_B, LogFactory, budget_row, mission_row


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "group.duckdb"


def _fill(store: DuckDBLogStore, factory: LogFactory) -> None:
    store.commit(factory.batch(3, rejections=1))
    store.commit(factory.batch(2, GROUP_B))
    store.commit(Batch(events=(factory.event(None),)))
    store.commit(
        factory.batch(
            1,
            projections=ProjectionDelta(
                upserts={
                    "proj_missions": (mission_row("urn:m:1"),),
                    "proj_budgets": (budget_row("urn:w:1", "tokens", 2.0),),
                }
            ),
        )
    )


def test_reopen_recovers_head_sequences_and_counters(path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(path) as store:
        _fill(store, factory)
        before = snapshot(store)
        sequences = {g: store.last_sequence(g) for g in (GROUP_A, GROUP_B)}
    with DuckDBLogStore(path) as store:
        assert snapshot(store) == before
        assert {g: store.last_sequence(g) for g in (GROUP_A, GROUP_B)} == sequences
        store.commit(factory.batch(2, rejections=1))
        assert [e.position for e in store.entries()] == list(range(1, 10))
        (position, chain) = store.chain_head()
        entries = list(store.entries())
        assert verify_chain((e.event.document, e.chain) for e in entries) == []
        assert (position, chain) == (entries[-1].position, entries[-1].chain)
        positions = duckdb_rows(store, "SELECT position FROM log_rejections ORDER BY position")
        assert positions == [(1,), (2,)]


def duckdb_rows(store: DuckDBLogStore, query: str) -> list[tuple[Any, ...]]:
    with store.cursor() as cur:
        return cur.execute(query).fetchall()


def test_log_events_has_typed_columns(path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(path) as store:
        event = factory.event()
        store.commit(Batch(events=(event,)))
        types = dict(
            duckdb_rows(
                store,
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'log_events'",
            )
        )
        assert types["payload"] == "JSON"
        assert types["occurred_at_ts"] == "TIMESTAMP WITH TIME ZONE"
        assert types["chain"] == "BLOB"
        assert types["position"] == types["sequence"] == "BIGINT"
        ((micros, text),) = duckdb_rows(
            store, "SELECT epoch_us(occurred_at_ts), occurred_at FROM log_events"
        )
        assert (micros, text) == (event.occurred_at_us, event.occurred_at)
        ((value,),) = duckdb_rows(store, "SELECT payload->>'$.text' FROM log_events")
        assert value == "héllo 1 ✓"


@pytest.mark.parametrize(
    ("table", "record"),
    [
        ("log_events", EventRecord),
        ("log_receipts", ReceiptRecord),
        ("log_rejections", RejectionRecord),
    ],
)
def test_not_null_columns_are_exactly_the_required_record_fields(
    path: Path, table: str, record: type
) -> None:
    with DuckDBLogStore(path) as store:
        rows = duckdb_rows(
            store,
            "SELECT column_name, is_nullable FROM information_schema.columns "
            f"WHERE table_name = '{table}'",
        )
    renamed = {"payload": "payload_json", "receipt": "receipt_json", "details": "details_json"}
    not_null = {renamed.get(name, name) for name, nullable in rows if nullable == "NO"}
    not_null -= {"position", "chain", "occurred_at_ts"}
    assert not_null == set(REQUIRED_FIELDS[record])


def test_projection_tables_have_declared_columns_and_primary_keys(path: Path) -> None:
    with DuckDBLogStore(path) as store:
        for table in PROJECTION_BY_NAME.values():
            columns = duckdb_rows(
                store,
                "SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_name = '{table.name}' ORDER BY ordinal_position",
            )
            assert tuple(columns) == table.columns
            ((constraint,),) = duckdb_rows(
                store,
                "SELECT constraint_column_names FROM duckdb_constraints() "
                f"WHERE table_name = '{table.name}' AND constraint_type = 'PRIMARY KEY'",
            )
            assert tuple(constraint) == table.key


class _Injected(RuntimeError):
    pass


def test_failure_injected_after_rows_were_inserted_rolls_everything_back(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    factory = LogFactory()
    # The plain path: projection rows in the commit's own transaction (the deferred path
    # writes them in a transaction of their own, tests/store/test_deferred_projections.py).
    with DuckDBLogStore(path, defer_projections=False) as store:
        _fill(store, factory)
        before = snapshot(store)
        calls = []

        def fail_on_second_table(writer: Any, change: Any) -> None:
            calls.append(change.table.name)
            if len(calls) == 2:
                raise _Injected("disk on fire")
            original(writer, change)

        original = store._apply_change
        monkeypatch.setattr(store, "_apply_change", fail_on_second_table)
        batch = factory.batch(
            50,
            rejections=2,
            projections=ProjectionDelta(
                upserts={
                    "proj_missions": (mission_row("urn:m:1", revision=9),),
                    "proj_budgets": (budget_row("urn:w:2", "cost", 1.0),),
                },
                deletes={"proj_budgets": (("work_item", "urn:w:1", "tokens"),)},
            ),
        )
        with pytest.raises(_Injected):
            store.commit(batch)
        assert calls == ["proj_missions", "proj_budgets"]
        assert snapshot(store) == before
        monkeypatch.undo()
        store.commit(batch)  # the same batch commits once the fault is gone
        assert store.event_count() == before["count"] + 50
    with DuckDBLogStore(path) as store:
        assert store.event_count() == before["count"] + 50


class _FailingCommit:
    """A writer cursor whose COMMIT fails (after DuckDB rolled the transaction back)."""

    def __init__(self, real: duckdb.DuckDBPyConnection) -> None:
        self._real = real

    def commit(self) -> None:
        self._real.rollback()
        raise OSError("fsync failed")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_failed_commit_statement_leaves_head_in_step_with_the_file(path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(path) as store:
        _fill(store, factory)
        before = snapshot(store)
        real = store._writer
        assert real is not None
        store._writer = _FailingCommit(real)  # type: ignore[assignment]
        with pytest.raises(OSError):
            store.commit(factory.batch(4))
        assert snapshot(store) == before
        store._writer = real
        retry = LogFactory(sequences={GROUP_A: store.last_sequence(GROUP_A)}, start=10_000)
        store.commit(retry.batch(4))
        assert store.event_count() == before["count"] + 4


def test_read_only_store_reads_and_refuses_commits(path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(path) as store:
        _fill(store, factory)
        before = snapshot(store)
    with DuckDBLogStore(path, read_only=True) as store:
        assert snapshot(store) == before
        with pytest.raises(StoreClosedError):
            store.commit(factory.batch(1))
        with pytest.raises(StoreClosedError):
            store.replace_projections({})


def test_opening_a_database_that_is_not_a_log_is_refused(path: Path) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE something (x INTEGER)")
    con.close()
    with pytest.raises(LogStoreError):
        DuckDBLogStore(path, read_only=True)


def test_a_file_of_another_schema_version_is_refused(path: Path) -> None:
    DuckDBLogStore(path).close()
    con = duckdb.connect(str(path))
    con.execute("UPDATE mwp_store_meta SET value = '999' WHERE name = 'schema_version'")
    con.close()
    with pytest.raises(LogStoreError, match="999"):
        DuckDBLogStore(path)


def test_a_log_with_a_missing_row_is_refused_on_open(path: Path) -> None:
    with DuckDBLogStore(path) as store:
        _fill(store, LogFactory())
    con = duckdb.connect(str(path))
    con.execute("DELETE FROM log_events WHERE position = 2")  # tampering from outside
    con.close()
    with pytest.raises(LogStoreError, match="rows but its last position"):
        DuckDBLogStore(path)


def test_a_projection_table_of_an_old_shape_is_recreated_empty_and_reported(path: Path) -> None:
    with DuckDBLogStore(path) as store:
        _fill(store, LogFactory())
        assert store.stale_projections == frozenset()
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE proj_missions DROP COLUMN objective")
    con.close()
    with DuckDBLogStore(path) as store:
        assert store.stale_projections == {"proj_missions"}
        assert store.projection_rows("proj_missions") == []
        assert store.projection_rows("proj_budgets") != []
        store.commit(
            Batch(projections=ProjectionDelta(upserts={"proj_missions": (mission_row("urn:m:1"),)}))
        )
    with DuckDBLogStore(path) as store:
        assert store.stale_projections == frozenset()


def test_duplicate_receipt_is_reported_as_an_integrity_error(path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(path) as store:
        batch = factory.batch(1)
        store.commit(batch)
        with pytest.raises(IntegrityError):
            store.commit(Batch(receipts=batch.receipts))


def test_no_statement_in_the_adapter_updates_or_deletes_log_rows() -> None:
    source = inspect.getsource(duckdb_log)
    assert not re.search(r"\bUPDATE\b", source)
    deletes = re.findall(r"DELETE FROM \{?([\w\"()._]+)", source)
    assert deletes and all("log_" not in target for target in deletes)
