"""The table layout of the DuckDB Group log file: column definitions, DDL, Arrow conversion.

This module owns what the log tables look like (``log_events``, ``log_receipts``,
``log_rejections``, one ``proj_*`` table per ``records.PROJECTIONS`` entry) and how records become
Arrow rows for them and are read back. It is pure definition: it opens no connection and runs no
statement (``duckdb_log`` does). The Parquet export reuses ``LOG_TABLE_SCHEMAS``, so an export
holds exactly the columns of the log tables.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from .records import ProjectionTable

__all__ = [
    "EVENT_FIELDS",
    "EVENT_SELECT",
    "LOG_TABLES",
    "LOG_TABLE_SCHEMAS",
    "RECEIPT_FIELDS",
    "RECEIPT_SELECT",
    "REJECTION_FIELDS",
    "REJECTION_SELECT",
    "SCHEMA_VERSION",
    "Column",
    "log_arrow",
    "log_table_ddl",
    "projection_arrow",
    "projection_ddl",
    "quote",
    "select_text",
]

#: Version of this file layout, stored in ``mwp_store_meta``; a file of another version is refused.
SCHEMA_VERSION = "1"

_STR = pa.string()
_INT = pa.int64()


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """One column of a log table: its SQL type, its Arrow type and the record field it holds
    (``None`` for ``position`` and ``chain``, which the store assigns)."""

    name: str
    sql: str
    arrow: pa.DataType
    field: str | None


def _columns(*specs: tuple[Any, ...]) -> tuple[Column, ...]:
    """Columns from ``(name, SQL type, Arrow type[, record field])``; the field defaults to the
    column name, except for the store-assigned ``position`` and ``chain``."""
    out = []
    for spec in specs:
        name, sql, arrow = spec[:3]
        default = None if name in ("position", "chain") else name
        out.append(Column(name, sql, arrow, spec[3] if len(spec) == 4 else default))
    return tuple(out)


#: The log tables, column by column in table order (``log_arrow`` builds Arrow rows in the same
#: order, so inserts can match columns by position).
LOG_TABLES: Mapping[str, tuple[Column, ...]] = {
    "log_events": _columns(
        ("position", "BIGINT NOT NULL", _INT),
        ("group_id", "VARCHAR", _STR),
        ("sequence", "BIGINT", _INT),
        ("aggregate_revision", "BIGINT", _INT),
        ("event_id", "VARCHAR NOT NULL", _STR),
        ("kind", "VARCHAR NOT NULL", _STR),
        ("occurred_at", "VARCHAR NOT NULL", _STR),
        ("occurred_at_us", "BIGINT NOT NULL", _INT),
        ("occurred_at_ts", "TIMESTAMPTZ NOT NULL", pa.timestamp("us", tz="UTC"), "occurred_at_us"),
        ("actor_type", "VARCHAR NOT NULL", _STR),
        ("actor_id", "VARCHAR NOT NULL", _STR),
        ("cause_type", "VARCHAR NOT NULL", _STR),
        ("cause_id", "VARCHAR NOT NULL", _STR),
        ("correlation_id", "VARCHAR NOT NULL", _STR),
        ("work_item_id", "VARCHAR", _STR),
        ("mission_id", "VARCHAR", _STR),
        ("from_state", "VARCHAR", _STR),
        ("to_state", "VARCHAR", _STR),
        ("payload", "JSON NOT NULL", _STR, "payload_json"),
        ("document", "VARCHAR NOT NULL", _STR),
        ("chain", "BLOB NOT NULL", pa.binary()),
    ),
    "log_receipts": _columns(
        ("position", "BIGINT NOT NULL", _INT),
        ("actor_id", "VARCHAR NOT NULL", _STR),
        ("action_id", "VARCHAR NOT NULL", _STR),
        ("command_hash", "VARCHAR NOT NULL", _STR),
        ("command_document", "VARCHAR NOT NULL", _STR),
        ("kind", "VARCHAR NOT NULL", _STR),
        ("group_id", "VARCHAR", _STR),
        ("accepted_at", "VARCHAR NOT NULL", _STR),
        ("event_ids", "VARCHAR[] NOT NULL", pa.list_(_STR)),
        ("receipt", "JSON NOT NULL", _STR, "receipt_json"),
    ),
    "log_rejections": _columns(
        ("position", "BIGINT NOT NULL", _INT),
        ("received_at", "VARCHAR NOT NULL", _STR),
        ("actor_id", "VARCHAR", _STR),
        ("action_id", "VARCHAR", _STR),
        ("kind", "VARCHAR", _STR),
        ("group_id", "VARCHAR", _STR),
        ("work_item_id", "VARCHAR", _STR),
        ("code", "VARCHAR NOT NULL", _STR),
        ("explanation", "VARCHAR NOT NULL", _STR),
        ("rule", "VARCHAR", _STR),
        ("stage", "VARCHAR", _STR),
        ("reason", "VARCHAR", _STR),
        ("details", "JSON NOT NULL", _STR, "details_json"),
        ("command_text", "VARCHAR NOT NULL", _STR),
    ),
}
_EXTRA_DDL = {"log_receipts": ",\n  PRIMARY KEY (actor_id, action_id)"}

#: The Arrow schema of each log table: what ``arrow_batches`` yields and the Parquet export holds
#: (JSON columns as text).
LOG_TABLE_SCHEMAS: Mapping[str, pa.Schema] = {
    table: pa.schema([(c.name, c.arrow) for c in columns]) for table, columns in LOG_TABLES.items()
}

_ARROW_TYPES: Mapping[str, pa.DataType] = {
    "VARCHAR": _STR,
    "BIGINT": _INT,
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
}


def quote(identifier: str) -> str:
    """An SQL identifier in double quotes."""
    return '"' + identifier.replace('"', '""') + '"'


def select_text(column: Column) -> str:
    """The column as a ``SELECT`` expression, JSON as its text."""
    return f"CAST({column.name} AS VARCHAR)" if column.sql.startswith("JSON") else column.name


def _record_select(table: str, record: type) -> tuple[tuple[str, ...], str]:
    """The record's field names and the ``SELECT`` list reading them back from ``table``."""
    fields = tuple(f.name for f in dataclasses.fields(record))
    by_field = {c.field: c for c in LOG_TABLES[table] if c.name != "occurred_at_ts"}
    items = []
    for name in fields:
        expr = select_text(by_field[name])
        items.append(expr if expr == name else f"{expr} AS {name}")
    return fields, ", ".join(items)


EVENT_FIELDS, EVENT_SELECT = _record_select("log_events", EventRecord)
RECEIPT_FIELDS, RECEIPT_SELECT = _record_select("log_receipts", ReceiptRecord)
REJECTION_FIELDS, REJECTION_SELECT = _record_select("log_rejections", RejectionRecord)


def log_table_ddl(table: str) -> str:
    """``CREATE TABLE IF NOT EXISTS`` of a log table."""
    body = ",\n  ".join(f"{c.name} {c.sql}" for c in LOG_TABLES[table])
    return f"CREATE TABLE IF NOT EXISTS {table} (\n  {body}{_EXTRA_DDL.get(table, '')}\n)"


def projection_ddl(table: ProjectionTable) -> str:
    """``CREATE TABLE`` of a projection table, with its declared key as primary key."""
    body = ",\n  ".join(f"{quote(name)} {sql_type}" for name, sql_type in table.columns)
    key = ", ".join(quote(name) for name in table.key)
    return f"CREATE TABLE {quote(table.name)} (\n  {body},\n  PRIMARY KEY ({key})\n)"


def log_arrow(
    table: str, records: Sequence[Any], first_position: int, chains: Sequence[bytes] = ()
) -> pa.Table:
    """A log table's new rows as Arrow, in table column order."""
    arrays = []
    for column in LOG_TABLES[table]:
        if column.field is not None:
            values: Any = list(map(operator.attrgetter(column.field), records))
        elif column.name == "position":
            values = range(first_position, first_position + len(records))
        else:
            values = chains
        arrays.append(pa.array(values, column.arrow))
    return pa.Table.from_arrays(arrays, schema=LOG_TABLE_SCHEMAS[table])


def projection_arrow(table: ProjectionTable, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Validated projection rows as Arrow, in the table's column order."""
    arrays = [
        pa.array([row[name] for row in rows], _ARROW_TYPES[sql_type])
        for name, sql_type in table.columns
    ]
    return pa.Table.from_arrays(arrays, names=list(table.column_names))
