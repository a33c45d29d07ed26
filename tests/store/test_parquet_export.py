"""Parquet export: Hive partitions per Group in the standard escaping that engines decode (the
partition column reads back as the Group ID itself), rows in log order within a partition, read
back identically by plain pyarrow.dataset, DuckDB's read_parquet and Polars."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mwp_local.store.base import LogStore
from mwp_local.store.chain import verify_chain
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.parquet import ORG_PARTITION, decode_group, encode_group, export_parquet
from mwp_local.store.records import Batch

from .conftest import StoreMaker
from .factory import GROUP_A, GROUP_B, LogFactory

GROUP_UPPER = "urn:mwp:group:acme/research"  # differs from GROUP_A only by case


def _fill(store: LogStore) -> None:
    factory = LogFactory()
    for group in (GROUP_A, GROUP_B, GROUP_UPPER, GROUP_A):
        store.commit(factory.batch(3, group, rejections=1))
        store.commit(
            Batch(events=(factory.event(None),), receipts=(factory.receipt(group_id=None),))
        )


@given(st.text())
def test_partition_encoding_is_reversible_and_filesystem_safe(group_id: str) -> None:
    if not group_id:
        return
    try:
        value = encode_group(group_id)
    except ValueError:
        assert len(group_id.encode()) > 70  # only over-long IDs are refused
        return
    assert re.fullmatch(r"(?:[a-z0-9._~-]|%[0-9A-F]{2})+", value)
    assert decode_group(value) == group_id


def test_partition_encoding_keeps_ids_differing_only_by_case_apart() -> None:
    assert encode_group(GROUP_A) != encode_group(GROUP_UPPER)
    assert encode_group("urn:mwp:Group/1") == "urn%3Amwp%3A%47roup%2F1"


def test_partition_names_are_the_ones_duckdb_partition_by_writes(tmp_path: Path) -> None:
    groups = ["urn:mwp-local:group:billing", "https://example.org/g/1?x=1#f", "urn:x:é ü"]
    duckdb.connect().execute(
        'COPY (SELECT unnest(?) AS "group", 1 AS n) TO ? (FORMAT parquet, PARTITION_BY ("group"))',
        [groups, str(tmp_path / "duck")],
    )
    written = {p.name for p in (tmp_path / "duck").iterdir()}
    assert written == {f"group={encode_group(g)}" for g in groups}


def test_org_scoped_rows_get_the_hive_null_partition() -> None:
    assert encode_group(None) == ORG_PARTITION
    assert decode_group(ORG_PARTITION) is None
    assert decode_group(None) is None


@pytest.mark.parametrize("value", ["a%zz", "a%4", "A", "a/b", "a:b", "%"])
def test_malformed_partition_value_is_refused(value: str) -> None:
    with pytest.raises(ValueError):
        decode_group(value)


def test_export_reads_back_identically_with_pyarrow_and_duckdb(
    make_store: StoreMaker, tmp_path: Path
) -> None:
    store = make_store()
    _fill(store)
    out = tmp_path / "export"
    summary = export_parquet(store, out)
    entries = list(store.entries())
    assert summary.events.rows == len(entries) == 16
    assert summary.receipts.rows == 8
    assert summary.rejections.rows == 4
    assert summary.events.rows_by_group == {GROUP_A: 6, GROUP_B: 3, GROUP_UPPER: 3, None: 4}

    by_pyarrow = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    py_rows = sorted(by_pyarrow.to_pylist(), key=lambda r: r["position"])
    con = duckdb.connect()
    db_rows = con.execute(
        'SELECT position, "group", group_id, document, chain FROM read_parquet(?, '
        "hive_partitioning = true) ORDER BY position",
        [str(out / "events" / "*" / "*.parquet")],
    ).fetchall()

    expected = [(e.position, e.event.group_id, e.event.document, e.chain) for e in entries]
    assert [(r["position"], r["group_id"], r["document"], r["chain"]) for r in py_rows] == expected
    assert [(p, g, d, c) for p, _, g, d, c in db_rows] == expected
    # Both readers decode the partition column back to the Group ID itself.
    assert all(r["group"] == r["group_id"] for r in py_rows)
    assert all(part == group for _, part, group, _, _ in db_rows)
    # The export alone proves the log untouched.
    assert verify_chain((r["document"], r["chain"]) for r in py_rows) == []
    manifest = json.loads(summary.manifest.read_text())
    assert manifest["chain_head"]["chain"] == store.chain_head()[1].hex()


def test_exported_events_keep_every_column(make_store: StoreMaker, tmp_path: Path) -> None:
    store = make_store()
    _fill(store)
    export_parquet(store, tmp_path)
    table = ds.dataset(tmp_path / "events", format="parquet", partitioning="hive").to_table()
    rows = {r["position"]: r for r in table.to_pylist()}
    for entry in store.entries():
        row = rows[entry.position]
        event = entry.event
        assert row["payload"] == event.payload_json
        assert row["sequence"] == event.sequence
        assert row["occurred_at"] == event.occurred_at
        assert row["occurred_at_ts"].timestamp() * 1_000_000 == pytest.approx(event.occurred_at_us)


def test_receipts_and_rejections_read_back_with_duckdb(
    make_store: StoreMaker, tmp_path: Path
) -> None:
    store = make_store()
    _fill(store)
    export_parquet(store, tmp_path)
    con = duckdb.connect()
    for name, expected in (("receipts", 8), ("rejections", 4)):
        pattern = str(tmp_path / name / "*" / "*.parquet")
        ((n,),) = con.execute(
            "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)", [pattern]
        ).fetchall()
        assert n == expected
    actions = con.execute(
        "SELECT action_id FROM read_parquet(?, hive_partitioning = true) ORDER BY position",
        [str(tmp_path / "receipts" / "*" / "*.parquet")],
    ).fetchall()
    assert [a for (a,) in actions] == [r.action_id for r in store.receipts()]


def test_memory_and_duckdb_stores_export_the_same_rows(tmp_path: Path) -> None:
    from mwp_local.store.duckdb_log import DuckDBLogStore

    memory = MemoryLogStore()
    _fill(memory)
    with DuckDBLogStore(tmp_path / "log.duckdb") as duck:
        _fill(duck)
        export_parquet(memory, tmp_path / "m")
        export_parquet(duck, tmp_path / "d")
    for name in ("events", "receipts", "rejections"):
        m = ds.dataset(tmp_path / "m" / name, partitioning="hive").to_table().sort_by("position")
        d = ds.dataset(tmp_path / "d" / name, partitioning="hive").to_table().sort_by("position")
        assert m.equals(d)


def test_empty_store_exports_readable_empty_datasets(tmp_path: Path) -> None:
    summary = export_parquet(MemoryLogStore(), tmp_path)
    assert summary.events.rows == 0
    con = duckdb.connect()
    ((n,),) = con.execute(
        "SELECT count(*) FROM read_parquet(?, hive_partitioning = true)",
        [str(tmp_path / "events" / "*" / "*.parquet")],
    ).fetchall()
    assert n == 0


def test_export_refuses_an_existing_target_unless_asked_to_overwrite(tmp_path: Path) -> None:
    store = MemoryLogStore()
    _fill(store)
    export_parquet(store, tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        export_parquet(store, tmp_path)
    summary = export_parquet(store, tmp_path, overwrite=True)
    assert summary.events.rows == 16
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_small_row_groups_and_buffer_flushes_keep_every_row_in_log_order(
    make_store: StoreMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mwp_local.store import parquet

    monkeypatch.setattr(parquet, "_ROWS_PER_WRITE", 4)
    monkeypatch.setattr(parquet, "_MAX_BUFFERED_ROWS", 6)
    store = make_store()
    factory = LogFactory()
    for i in range(12):
        group = (GROUP_A, GROUP_B, None)[i % 3]
        store.commit(Batch(events=tuple(factory.event(group) for _ in range(i % 4 + 1))))
    summary = export_parquet(store, tmp_path)
    assert summary.events.rows == store.event_count()
    for group in (GROUP_A, GROUP_B, None):
        path = tmp_path / "events" / f"group={encode_group(group)}" / "part-0.parquet"
        positions = ds.dataset(path).to_table().column("position").to_pylist()
        expected = [e.position for e in store.entries() if e.event.group_id == group]
        assert positions == expected


STRANGE_GROUPS = [
    "urn:mwp-local:group:billing",
    "urn:mwp:group:acme/Research",
    "urn:mwp:group:acme/research",
    "https://example.org/groups/b?x=1&y=%41#frag",
    "urn:x:a b=c_d.e~f",
    "urn:x:日本語",
]


def _strange_export(tmp_path: Path) -> Path:
    store = MemoryLogStore()
    factory = LogFactory()
    for group in STRANGE_GROUPS:
        store.commit(factory.batch(2, group))
    store.commit(Batch(events=(factory.event(None),)))
    export_parquet(store, tmp_path / "out")
    return tmp_path / "out"


def test_every_engine_reads_the_partition_as_the_group_id_and_filters_on_it(
    tmp_path: Path,
) -> None:
    out = _strange_export(tmp_path)
    con = duckdb.connect()
    pattern = str(out / "events" / "*" / "*.parquet")
    rows = con.execute(
        'SELECT "group", group_id FROM read_parquet(?, hive_partitioning = true)', [pattern]
    ).fetchall()
    assert len(rows) == 2 * len(STRANGE_GROUPS) + 1
    assert all(part == group for part, group in rows)
    for group in STRANGE_GROUPS:
        ((n,),) = con.execute(
            'SELECT count(*) FROM read_parquet(?, hive_partitioning = true) WHERE "group" = ?',
            [pattern, group],
        ).fetchall()
        assert n == 2, group
    table = ds.dataset(out / "events", format="parquet", partitioning="hive").to_table()
    assert all(r["group"] == r["group_id"] for r in table.to_pylist())


def test_polars_reads_the_partition_as_the_group_id(tmp_path: Path) -> None:
    pl = pytest.importorskip("polars")
    out = _strange_export(tmp_path)
    frame = pl.read_parquet(str(out / "events" / "**" / "*.parquet"), hive_partitioning=True)
    assert all(r["group"] == r["group_id"] for r in frame.select("group", "group_id").to_dicts())
    billing = frame.filter(pl.col("group") == "urn:mwp-local:group:billing")
    assert billing.height == 2


def test_rows_keep_log_order_within_each_partition_file(
    make_store: StoreMaker, tmp_path: Path
) -> None:
    store = make_store()
    factory = LogFactory()
    # Interleave the Groups, so that order within a file is not an accident of batching.
    for _ in range(5):
        for group in (GROUP_B, GROUP_A, None):
            store.commit(
                factory.batch(2, group, rejections=1)
                if group
                else Batch(events=(factory.event(None),))
            )
    export_parquet(store, tmp_path)
    for name in ("events", "receipts", "rejections"):
        for path in (tmp_path / name).glob("*/*.parquet"):
            positions = pq.read_table(path).column("position").to_pylist()
            assert positions == sorted(positions), path
