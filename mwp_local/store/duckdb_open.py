"""Opening a DuckDB Group log file: the connection, and the file's tables as this code declares
them. ``DuckDBLogStore`` calls these once, before it reads the head.

* ``connect``: DuckDB lets one process at a time use a file that is open for writing; a second
  process, even a read-only one, gets ``IOException: Could not set lock on file ...``. The usual
  way to meet it here is a notebook's Sandbox holding its directory while someone runs
  ``mwp-local sql DIR`` (or opens the same directory) elsewhere, so it becomes a
  ``StoreLockedError`` that names the holding process and says what to do.
* ``create_schema``: what a writable file is missing is created, and projection tables whose
  declared shape changed are recreated empty (the caller rebuilds them by replay).
* ``check_schema_version``: a file written by another schema version is refused.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import TYPE_CHECKING

from . import views
from .base import LogStoreError, StoreLockedError
from .duckdb_schema import LOG_TABLES, SCHEMA_VERSION, log_table_ddl, projection_ddl, quote
from .records import PROJECTIONS

if TYPE_CHECKING:
    import duckdb

_LOCK = re.compile(r"Could not set lock on file")
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")

Config = dict[str, str | bool | int | float | list[str]]


def connect(path: Path, *, read_only: bool, config: Config) -> duckdb.DuckDBPyConnection:
    """A connection to ``path``; ``StoreLockedError`` when another process holds it.

    DuckDB is imported here, on first use, rather than with the package (figure 7)."""
    import duckdb

    try:
        return duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.IOException as exc:
        text = str(exc)
        if not _LOCK.search(text):
            raise
        holder = _HOLDER.search(text)
        who = (
            f"process {holder['pid']} ({holder['program']})"
            if holder is not None
            else "another process"
        )
        raise StoreLockedError(
            errno.EBUSY,
            f"the log is open for writing in {who}; DuckDB lets one process at a time use a log "
            "file that is being written. Close the Sandbox there (sandbox.close()), or query it "
            "from that process (sandbox.sql(...))",
            str(path),
        ) from None


def create_schema(con: duckdb.DuckDBPyConnection) -> tuple[bool, frozenset[str]]:
    """Create what is missing and recreate the projection tables whose shape changed, in one
    transaction; return whether the file held no table or view before (a new file) and the
    names of the recreated (stale) projection tables.

    The columns are read from ``duckdb_columns()`` without its internal ones (the very rows of
    the ``information_schema.columns`` view over it, without the view), and the version row is
    inserted unless present rather than with ``ON CONFLICT DO NOTHING``: both cost less in
    DuckDB 2.0."""
    con.begin()
    try:
        declared: dict[str, list[tuple[str, str]]] = {}
        for name, column, kind in con.execute(
            "SELECT table_name, column_name, data_type FROM duckdb_columns() "
            "WHERE NOT internal AND schema_name = 'main' ORDER BY table_name, column_index"
        ).fetchall():
            declared.setdefault(name, []).append((column, kind))
        con.execute(
            "CREATE TABLE IF NOT EXISTS mwp_store_meta "
            "(name VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)"
        )
        con.execute(
            "INSERT INTO mwp_store_meta SELECT 'schema_version', ? WHERE NOT EXISTS "
            "(SELECT 1 FROM mwp_store_meta WHERE name = 'schema_version')",
            [SCHEMA_VERSION],
        )
        for log_table in LOG_TABLES:
            con.execute(log_table_ddl(log_table))
        stale = []
        for table in PROJECTIONS:
            existing = declared.get(table.name, [])
            if existing and tuple(existing) != table.columns:
                con.execute(f"DROP TABLE {quote(table.name)} CASCADE")
                stale.append(table.name)
            if not existing or table.name in stale:
                con.execute(projection_ddl(table))
        views.create_views(con)
        con.commit()
    except BaseException:
        con.rollback()
        raise
    return not declared, frozenset(stale)


def check_schema_version(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """Refuse a file that is no mwp_local log, or one of another schema version."""
    import duckdb

    try:
        rows = con.execute(
            "SELECT value FROM mwp_store_meta WHERE name = 'schema_version'"
        ).fetchall()
    except duckdb.CatalogException:
        raise LogStoreError(f"{path} is not an mwp_local log (no mwp_store_meta)") from None
    if rows != [(SCHEMA_VERSION,)]:
        found = rows[0][0] if rows else None
        raise LogStoreError(
            f"{path} has log schema version {found!r}; this code reads {SCHEMA_VERSION!r}"
        )


__all__ = ["Config", "check_schema_version", "connect", "create_schema"]
