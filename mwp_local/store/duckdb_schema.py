"""The table layout of the DuckDB Group log file: column definitions, DDL, Arrow conversion.

This module owns what the log tables look like (``log_events``, ``log_receipts``,
``log_rejections``, one ``proj_*`` table per ``records.PROJECTIONS`` entry) and how records become
Arrow rows for them and are read back. It is pure definition: it opens no connection and runs no
statement (``duckdb_log`` does). The Parquet export reuses ``log_table_schema``, so an export
holds exactly the columns of the log tables.

A column's Arrow type follows from its SQL type (``arrow_type``), and pyarrow is imported only
when Arrow is first needed: ``from mwp_local import Sandbox`` does not pay for it (figure 7).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import operator
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from .records import ProjectionTable

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "EVENT_FIELDS",
    "EVENT_SELECT",
    "LOG_TABLES",
    "RECEIPT_FIELDS",
    "RECEIPT_SELECT",
    "REJECTION_FIELDS",
    "REJECTION_SELECT",
    "SCHEMA_VERSION",
    "Column",
    "arrow_type",
    "log_arrow",
    "log_table_ddl",
    "log_table_schema",
    "log_values",
    "projection_arrow",
    "projection_ddl",
    "quote",
    "select_text",
]

#: Version of this file layout, stored in ``mwp_store_meta``; a file of another version is refused.
SCHEMA_VERSION = "1"


@functools.cache
def arrow_type(sql: str) -> pa.DataType:
    """The Arrow type of a column of SQL type ``sql`` (``NOT NULL`` ignored; JSON as its text)."""
    import pyarrow as pa

    base = sql.removesuffix(" NOT NULL")
    types = {
        "VARCHAR": pa.string(),
        "JSON": pa.string(),
        "BIGINT": pa.int64(),
        "DOUBLE": pa.float64(),
        "BOOLEAN": pa.bool_(),
        "BLOB": pa.binary(),
        "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
        "VARCHAR[]": pa.list_(pa.string()),
    }
    return types[base]


@dataclasses.dataclass(frozen=True, slots=True)
class Column:
    """One column of a log table: its SQL type and the record field it holds (``None`` for
    ``position`` and ``chain``, which the store assigns)."""

    name: str
    sql: str
    field: str | None

    @property
    def arrow(self) -> pa.DataType:
        """The column's Arrow type."""
        return arrow_type(self.sql)


def _columns(*specs: tuple[str, ...]) -> tuple[Column, ...]:
    """Columns from ``(name, SQL type[, record field])``; the field defaults to the column name,
    except for the store-assigned ``position`` and ``chain``."""
    out = []
    for spec in specs:
        name, sql = spec[:2]
        default = None if name in ("position", "chain") else name
        out.append(Column(name, sql, spec[2] if len(spec) == 3 else default))
    return tuple(out)


#: The log tables, column by column in table order (``log_arrow`` builds Arrow rows in the same
#: order, so inserts can match columns by position).
LOG_TABLES: Mapping[str, tuple[Column, ...]] = {
    "log_events": _columns(
        ("position", "BIGINT NOT NULL"),
        ("group_id", "VARCHAR"),
        ("sequence", "BIGINT"),
        ("aggregate_revision", "BIGINT"),
        ("event_id", "VARCHAR NOT NULL"),
        ("kind", "VARCHAR NOT NULL"),
        ("occurred_at", "VARCHAR NOT NULL"),
        ("occurred_at_us", "BIGINT NOT NULL"),
        ("occurred_at_ts", "TIMESTAMPTZ NOT NULL", "occurred_at_us"),
        ("actor_type", "VARCHAR NOT NULL"),
        ("actor_id", "VARCHAR NOT NULL"),
        ("cause_type", "VARCHAR NOT NULL"),
        ("cause_id", "VARCHAR NOT NULL"),
        ("correlation_id", "VARCHAR NOT NULL"),
        ("work_item_id", "VARCHAR"),
        ("mission_id", "VARCHAR"),
        ("from_state", "VARCHAR"),
        ("to_state", "VARCHAR"),
        ("payload", "JSON NOT NULL", "payload_json"),
        ("document", "VARCHAR NOT NULL"),
        ("chain", "BLOB NOT NULL"),
    ),
    "log_receipts": _columns(
        ("position", "BIGINT NOT NULL"),
        ("actor_id", "VARCHAR NOT NULL"),
        ("action_id", "VARCHAR NOT NULL"),
        ("command_hash", "VARCHAR NOT NULL"),
        ("command_document", "VARCHAR NOT NULL"),
        ("kind", "VARCHAR NOT NULL"),
        ("group_id", "VARCHAR"),
        ("accepted_at", "VARCHAR NOT NULL"),
        ("event_ids", "VARCHAR[] NOT NULL"),
        ("receipt", "JSON NOT NULL", "receipt_json"),
    ),
    "log_rejections": _columns(
        ("position", "BIGINT NOT NULL"),
        ("received_at", "VARCHAR NOT NULL"),
        ("actor_id", "VARCHAR"),
        ("action_id", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("group_id", "VARCHAR"),
        ("work_item_id", "VARCHAR"),
        ("code", "VARCHAR NOT NULL"),
        ("explanation", "VARCHAR NOT NULL"),
        ("rule", "VARCHAR"),
        ("stage", "VARCHAR"),
        ("reason", "VARCHAR"),
        ("details", "JSON NOT NULL", "details_json"),
        ("command_text", "VARCHAR NOT NULL"),
    ),
}
_EXTRA_DDL = {"log_receipts": ",\n  PRIMARY KEY (actor_id, action_id)"}


@functools.cache
def log_table_schema(table: str) -> pa.Schema:
    """The Arrow schema of a log table: what ``arrow_batches`` yields and the Parquet export
    holds (JSON columns as text)."""
    import pyarrow as pa

    return pa.schema([(c.name, c.arrow) for c in LOG_TABLES[table]])


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
    import pyarrow as pa

    arrays = []
    for column in LOG_TABLES[table]:
        if column.field is not None:
            values: Any = list(map(operator.attrgetter(column.field), records))
        elif column.name == "position":
            values = range(first_position, first_position + len(records))
        else:
            values = chains
        arrays.append(pa.array(values, column.arrow))
    return pa.Table.from_arrays(arrays, schema=log_table_schema(table))


_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def log_values(
    table: str, records: Sequence[Any], first_position: int, chains: Sequence[bytes] = ()
) -> list[list[Any]]:
    """A log table's new rows as Python values in table column order, typed as DuckDB binds
    them to the columns' types: what ``log_arrow`` holds, for a ``VALUES`` insert."""
    columns = LOG_TABLES[table]
    out = []
    for offset, record in enumerate(records):
        row: list[Any] = []
        for column in columns:
            if column.field is None:
                row.append(first_position + offset if column.name == "position" else chains[offset])
                continue
            value = getattr(record, column.field)
            if column.sql.startswith("TIMESTAMPTZ"):
                # Exact in microseconds, whatever the session's TimeZone (an aware datetime).
                value = _EPOCH_UTC + datetime.timedelta(microseconds=value)
            elif column.sql.startswith("VARCHAR[]"):
                value = list(value)  # a tuple would bind as a STRUCT
            row.append(value)
        out.append(row)
    return out


def projection_arrow(table: ProjectionTable, rows: Sequence[Mapping[str, Any]]) -> pa.Table:
    """Validated projection rows as Arrow, in the table's column order."""
    import pyarrow as pa

    arrays = [
        pa.array([row[name] for row in rows], arrow_type(sql_type))
        for name, sql_type in table.columns
    ]
    return pa.Table.from_arrays(arrays, names=list(table.column_names))
