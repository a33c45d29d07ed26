"""Log rows inserted as ``VALUES`` parameters (small commits) store exactly what the Arrow insert
stores (``duckdb_writes.insert_log_rows``): the same batches written both ways give the same
rows, column by column, whatever the writing session's TimeZone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.store import duckdb_writes
from mwp_local.store.base import IntegrityError
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.duckdb_schema import LOG_TABLES
from mwp_local.store.records import Batch

from .factory import GROUP_B, LogFactory

#: Events of the last batch: more than ``PARAMETER_ROWS``, so both stores take the Arrow path.
LARGE = duckdb_writes.PARAMETER_ROWS + 3


def _batches() -> list[Batch]:
    factory = LogFactory()
    batches = [factory.batch(1), factory.batch(3, rejections=2), factory.batch(2, GROUP_B)]
    batches.append(factory.batch(0, receipt=False, rejections=1))
    events = (
        factory.event(None, kind="timer.fired"),
        factory.event(work_item_id="urn:mwp:work-item:w1", from_state="open", to_state="claimed"),
        factory.event(payload={"nested": {"list": [1, 2.5, None, True], "text": "é\u2028"}}),
    )
    batches.append(Batch(events=events, receipts=(factory.receipt(events),)))
    batches.append(Batch(events=(), receipts=(factory.receipt(()),)))
    batches.append(factory.batch(LARGE))
    return batches


def _rows(store: DuckDBLogStore) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    with store.cursor() as cur:
        for table, columns in LOG_TABLES.items():
            select = ", ".join(
                f"epoch_us({c.name})"
                if c.sql.startswith("TIMESTAMPTZ")
                else f"CAST({c.name} AS VARCHAR)"
                if c.sql.startswith("JSON")
                else c.name
                for c in columns
            )
            typed = ", ".join(f"typeof({c.name})" for c in columns)
            out[table] = cur.execute(
                f"SELECT {select}, {typed} FROM {table} ORDER BY position"
            ).fetchall()
    return out


def _write(path: Path, timezone: str, staged: bool) -> dict[str, list[tuple[Any, ...]]]:
    with DuckDBLogStore(path) as store:
        store._writable().execute(f"SET TimeZone = '{timezone}'")
        for batch in _batches():
            if staged:
                store.stage(batch)
            else:
                store.commit(batch)
        store.flush()
        return _rows(store)


@pytest.mark.parametrize("staged", [False, True])
@pytest.mark.parametrize("timezone", ["UTC", "America/New_York"])
def test_parameter_rows_equal_arrow_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, timezone: str, staged: bool
) -> None:
    fast = _write(tmp_path / "fast.duckdb", timezone, staged)
    monkeypatch.setattr(duckdb_writes, "PARAMETER_ROWS", -1)  # every insert as Arrow
    plain = _write(tmp_path / "plain.duckdb", "UTC", staged)
    assert fast == plain
    assert all(fast.values())


@pytest.mark.parametrize("parameter_rows", [duckdb_writes.PARAMETER_ROWS, -1])
def test_malformed_json_is_refused_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parameter_rows: int
) -> None:
    import dataclasses

    monkeypatch.setattr(duckdb_writes, "PARAMETER_ROWS", parameter_rows)
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        batch = factory.batch(1)
        bad = dataclasses.replace(batch.events[0], payload_json="{not json")
        with pytest.raises(IntegrityError):
            store.commit(dataclasses.replace(batch, events=(bad,)))
        assert store.event_count() == 0
