"""How the DuckDB Group log turns checked rows into statements: log rows as inserts (staged
batches concatenated; ``VALUES`` parameters for a few rows, Arrow for more), projection changes
as deletes and inserts. No decisions, no state: the store (``duckdb_log``) calls these inside
its transaction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import PlannedEvents, TableChange, batches_of
from .duckdb_schema import LOG_TABLES, log_arrow, log_values, projection_arrow, quote
from .records import Batch

if TYPE_CHECKING:  # imported on first use (figure 7)
    import duckdb
    import pyarrow as pa

KEYS_PER_DELETE = 256
#: Up to this many composite keys are deleted with ``(a = ? AND b = ?) OR ...``; more with one
#: ``(a, b) IN (SELECT unnest(?), unnest(?))``, since the ``OR`` form's cost grows with the keys
#: (a group-committed batch of budget rows has hundreds).
OR_KEYS = 8
#: Up to this many projection rows (or log rows of one table) are inserted as ``VALUES``
#: parameters, more as one Arrow batch. Rows are already validated and typed
#: (``normalize_delta``, ``log_values``); for a few rows the parameters skip building the Arrow
#: table and binding its scan, most of a small commit.
PARAMETER_ROWS = 16


def insert_arrow(
    writer: duckdb.DuckDBPyConnection, table: str, rows: pa.Table, scan: bool = True
) -> None:
    """Insert Arrow rows in one statement (columns match by position), which reads them by
    DuckDB's replacement scan of the local variable ``mwp_arrow_rows`` (no table or view has
    that name): unlike ``from_arrow(rows).insert_into(table)``, no Python relation layer binds
    the relation separately first, and unlike ``register``/``unregister`` nothing is added to the
    connection. A database whose external access is off (``sql_access.contain``) has no
    replacement scans: there, ``scan=False`` takes the relation path."""
    if not scan:
        writer.from_arrow(rows).insert_into(table)
        return
    mwp_arrow_rows = rows  # noqa: F841 (read by name by the statement)
    writer.execute(f"INSERT INTO {table} SELECT * FROM mwp_arrow_rows")


def apply_change(
    writer: duckdb.DuckDBPyConnection, change: TableChange, *, scan: bool = True
) -> None:
    """Delete every key the change touches, then insert its rows as one Arrow batch
    (delete-then-insert rather than INSERT OR REPLACE: a key may change twice in one
    transaction)."""
    table = change.table
    name = quote(table.name)
    keys = [*change.deletes, *change.row_keys()]
    if len(table.key) == 1:
        column = quote(table.key[0])
        for chunk in batches_of(keys, KEYS_PER_DELETE):
            marks = ", ".join("?" * len(chunk))
            writer.execute(f"DELETE FROM {name} WHERE {column} IN ({marks})", [k[0] for k in chunk])
    elif len(keys) <= OR_KEYS:
        match = "(" + " AND ".join(f"{quote(c)} = ?" for c in table.key) + ")"
        writer.execute(
            f"DELETE FROM {name} WHERE " + " OR ".join([match] * len(keys)),
            [value for key in keys for value in key],
        )
    elif keys:
        types = dict(table.columns)
        columns = ", ".join(quote(c) for c in table.key)
        lists = ", ".join(f"unnest(?::{types[c]}[])" for c in table.key)
        writer.execute(
            f"DELETE FROM {name} WHERE ({columns}) IN (SELECT {lists})",
            [[key[i] for key in keys] for i in range(len(table.key))],
        )
    if len(change.rows) > PARAMETER_ROWS:
        insert_arrow(writer, table.name, projection_arrow(table, change.rows), scan=scan)
    elif change.rows:
        names = table.column_names
        marks = "(" + ", ".join("?" * len(names)) + ")"
        writer.execute(
            f"INSERT INTO {name} VALUES " + ", ".join([marks] * len(change.rows)),
            [row[column] for row in change.rows for column in names],
        )


@dataclass(frozen=True, slots=True)
class Staged:
    """A checked batch waiting for ``flush``, with where its rows go."""

    batch: Batch
    plan: PlannedEvents
    changes: list[TableChange]
    receipt_position: int
    rejection_position: int


@dataclass(frozen=True, slots=True)
class LogRows:
    """The staged rows of one log table: its records from ``first_position`` on (and, for
    Events, their chain values)."""

    table: str
    records: list[Any]
    first_position: int
    chains: list[bytes]


def log_rows(staged: Sequence[Staged]) -> list[LogRows]:
    """The staged Events, receipts and rejections, one ``LogRows`` per table that gets rows
    (positions are contiguous across staged batches, so they concatenate)."""
    out: list[LogRows] = []
    events = [e for s in staged for e in s.batch.events]
    if events:
        chains = [c for s in staged for c in s.plan.chains]
        out.append(LogRows("log_events", events, staged[0].plan.first_position, chains))
    receipts = [r for s in staged for r in s.batch.receipts]
    if receipts:
        out.append(LogRows("log_receipts", receipts, staged[0].receipt_position, []))
    rejections = [r for s in staged for r in s.batch.rejections]
    if rejections:
        out.append(LogRows("log_rejections", rejections, staged[0].rejection_position, []))
    return out


def insert_log_rows(writer: duckdb.DuckDBPyConnection, rows: LogRows, scan: bool = True) -> None:
    """Insert one table's staged log rows: up to ``PARAMETER_ROWS`` as ``VALUES`` parameters,
    more as one Arrow batch. A durable commit per Command writes one or two rows per table;
    for them, building the Arrow table and binding its scan cost about as much as the COMMIT
    (``benchmarks/NOTES.md``, figure 1b). Both paths store the same values
    (``tests/store/test_log_row_params.py``)."""
    if len(rows.records) > PARAMETER_ROWS:
        table = log_arrow(rows.table, rows.records, rows.first_position, rows.chains)
        insert_arrow(writer, rows.table, table, scan=scan)
        return
    columns = LOG_TABLES[rows.table]
    marks = "(" + ", ".join("?" * len(columns)) + ")"
    writer.execute(
        f"INSERT INTO {rows.table} VALUES " + ", ".join([marks] * len(rows.records)),
        [
            value
            for value_row in log_values(rows.table, rows.records, rows.first_position, rows.chains)
            for value in value_row
        ],
    )
