"""Parquet export of the Group log: Events, receipts and rejections, Hive-partitioned by Group.

This module owns the export layout and the partition-value encoding. It reads a store only
through the ``LogStore`` interface (so it exports the in-memory store too) and never writes to
the store. Layout under ``out_dir``::

    events/group=<value>/part-0.parquet       the columns of ``log_events``, in log order
    receipts/group=<value>/part-0.parquet     the columns of ``log_receipts``, in commit order
    rejections/group=<value>/part-0.parquet   the columns of ``log_rejections``, in commit order
    manifest.json                             counts and the chain head the export ends at
    views.spark.sql                           the documented views in Spark SQL (``portable_sql``)

(JSON columns are plain UTF-8 strings in the files. A store that offers ``arrow_batches`` (the
DuckDB store) is read as Arrow batches; any other ``LogStore`` through its record iterators.)

Partition value encoding (``encode_group``): the standard Hive escaping that DuckDB, pyarrow,
Polars, Spark and Trino decode when they read the ``group`` partition column: every byte of the
Group ID's UTF-8 outside ``[a-z0-9._~-]`` becomes ``%`` and two upper-case hex digits, so
``urn:mwp-local:group:billing`` → ``urn%3Amwp-local%3Agroup%3Abilling``, as DuckDB's own
``PARTITION_BY`` writes it. Upper-case letters are escaped too (``G`` → ``%47``), so that a
case-insensitive file system cannot merge two Groups; every reader decodes them all the same.
``decode_group`` reverses it. Organization-scoped rows (no Group) go to
``group=__HIVE_DEFAULT_PARTITION__``, which those readers read as ``NULL``. The exact Group ID
is also a column (``group_id``) inside every file. Within a partition, rows keep log order
(commit order for receipts and rejections); readers only promise an order under ``ORDER BY
position``.

Reading it back, e.g. ``SELECT * FROM read_parquet('out/events/*/*.parquet',
hive_partitioning = true) WHERE "group" = 'urn:mwp-local:group:billing' ORDER BY position``
(quote the ``"group"`` column: it is an SQL keyword), or
``pyarrow.dataset.dataset('out/events', partitioning='hive')``; docs/sql.md shows Polars and
Spark too.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..authority.records import ReceiptRecord, RejectionRecord
from .base import LogEntry, LogStore
from .duckdb_schema import log_table_schema

__all__ = [
    "DATASETS",
    "ORG_PARTITION",
    "ExportSummary",
    "decode_group",
    "encode_group",
    "export_parquet",
]

#: The partition value of rows without a Group (read as NULL by Hive readers).
ORG_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: The documented views in Spark SQL, written beside the datasets (``store/sql/spark.sql``).
SPARK_VIEWS = "views.spark.sql"
#: The datasets written under ``out_dir``.
DATASETS = ("events", "receipts", "rejections")

_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyz0123456789._~-")
_HEX = frozenset("0123456789ABCDEFabcdef")
#: The log table each dataset holds.
_TABLES = ("log_events", "log_receipts", "log_rejections")
_NAME_MAX = 255
_ROWS_PER_WRITE = 65_536
_MAX_BUFFERED_ROWS = 262_144


def encode_group(group_id: str | None) -> str:
    """The partition value of a Group (``ORG_PARTITION`` for ``None``); see the module doc."""
    if group_id is None:
        return ORG_PARTITION
    if not group_id:
        raise ValueError("an empty Group ID has no partition value")
    value = "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in group_id.encode("utf-8"))
    if len("group=" + value) > _NAME_MAX:
        raise ValueError(f"Group ID too long for a partition directory name: {group_id!r}")
    return value


def decode_group(value: str | None) -> str | None:
    """The Group ID a partition value encodes (``None`` for the Organization partition)."""
    if value is None or value == ORG_PARTITION:
        return None
    data = bytearray()
    i = 0
    while i < len(value):
        char = value[i]
        if char == "%":
            pair = value[i + 1 : i + 3]
            if len(pair) != 2 or not set(pair) <= _HEX:
                raise ValueError(f"bad escape at {i} in partition value {value!r}")
            data.append(int(pair, 16))
            i += 3
        elif ord(char) < 128 and ord(char) in _SAFE:
            data.append(ord(char))
            i += 1
        else:
            raise ValueError(f"character {char!r} cannot appear in partition value {value!r}")
    return data.decode("utf-8")


def _event_row(entry: LogEntry) -> dict[str, Any]:
    e = entry.event
    return {
        "position": entry.position,
        "group_id": e.group_id,
        "sequence": e.sequence,
        "aggregate_revision": e.aggregate_revision,
        "event_id": e.event_id,
        "kind": e.kind,
        "occurred_at": e.occurred_at,
        "occurred_at_us": e.occurred_at_us,
        "occurred_at_ts": e.occurred_at_us,
        "actor_type": e.actor_type,
        "actor_id": e.actor_id,
        "cause_type": e.cause_type,
        "cause_id": e.cause_id,
        "correlation_id": e.correlation_id,
        "work_item_id": e.work_item_id,
        "mission_id": e.mission_id,
        "from_state": e.from_state,
        "to_state": e.to_state,
        "payload": e.payload_json,
        "document": e.document,
        "chain": entry.chain,
    }


def _record_row(position: int, record: ReceiptRecord | RejectionRecord) -> dict[str, Any]:
    row: dict[str, Any] = {"position": position}
    for name in dataclasses.fields(record):
        value = getattr(record, name.name)
        row[_RENAMED.get(name.name, name.name)] = list(value) if isinstance(value, tuple) else value
    return row


_RENAMED = {"receipt_json": "receipt", "details_json": "details"}


@runtime_checkable
class ArrowLogSource(Protocol):
    """A store that hands out its log tables as Arrow batches (``DuckDBLogStore`` does)."""

    def arrow_batches(
        self, table: str, *, upto_position: int | None = None, batch_rows: int = ...
    ) -> Iterator[pa.RecordBatch]: ...


def _chunks(rows: Iterable[dict[str, Any]], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    chunk: list[dict[str, Any]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) == _ROWS_PER_WRITE:
            yield pa.RecordBatch.from_pylist(chunk, schema=schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=schema)


def _event_rows(store: LogStore, last: int) -> Iterator[dict[str, Any]]:
    entries = store.entries()
    try:
        for entry in entries:
            if entry.position > last:
                return
            yield _event_row(entry)
    finally:
        close = getattr(entries, "close", None)
        if close is not None:
            close()  # release the store's cursor now, not when garbage-collected


def _source(store: LogStore, table: str, last_event: int) -> Iterator[pa.RecordBatch]:
    """The rows of one log table as Arrow batches, through the fast path when there is one."""
    schema = log_table_schema(table)
    if isinstance(store, ArrowLogSource):
        upto = last_event if table == "log_events" else None
        return store.arrow_batches(table, upto_position=upto)
    if table == "log_events":
        return _chunks(_event_rows(store, last_event), schema)
    records: Iterable[ReceiptRecord | RejectionRecord] = (
        store.receipts() if table == "log_receipts" else store.rejections()
    )
    rows = (_record_row(n, r) for n, r in enumerate(records, start=1))
    return _chunks(rows, schema)


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetSummary:
    """What one dataset of the export holds."""

    rows: int
    #: Rows per Group (``None``: Organization-scoped).
    rows_by_group: Mapping[str | None, int]
    files: tuple[Path, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportSummary:
    """What ``export_parquet`` wrote."""

    out_dir: Path
    events: DatasetSummary
    receipts: DatasetSummary
    rejections: DatasetSummary
    #: ``(position, chain value hex)`` of the last exported Event.
    chain_head: tuple[int, str]
    manifest: Path


class _PartitionedWriter:
    """Splits Arrow batches by Group and appends them to one Parquet file per partition, in
    row groups of about ``_ROWS_PER_WRITE`` rows; rows keep their order within a partition."""

    def __init__(self, root: Path, schema: pa.Schema) -> None:
        self._root = root
        self._schema = schema
        self._writers: dict[str | None, pq.ParquetWriter] = {}
        self._pending: dict[str | None, list[pa.RecordBatch]] = {}
        self._pending_rows: dict[str | None, int] = {}
        self._buffered = 0
        self.counts: dict[str | None, int] = {}
        self.files: list[Path] = []

    def add(self, batch: pa.RecordBatch) -> None:
        """Route each row of ``batch`` to its Group's partition."""
        if batch.num_rows == 0:
            return
        groups = batch.column("group_id")
        distinct = pc.unique(groups)
        if len(distinct) == 1:
            self._buffer(distinct[0].as_py(), batch)
            return
        # Sorting by (group, position) makes each Group one run, rows in log order.
        order = pc.sort_indices(
            batch, sort_keys=[("group_id", "ascending"), ("position", "ascending")]
        )
        ordered = batch.take(order)
        start = 0
        for group_id, run in itertools.groupby(ordered.column("group_id").to_pylist()):
            length = sum(1 for _ in run)
            self._buffer(group_id, ordered.slice(start, length))
            start += length

    def _buffer(self, group_id: str | None, batch: pa.RecordBatch) -> None:
        self._pending.setdefault(group_id, []).append(batch)
        self._pending_rows[group_id] = self._pending_rows.get(group_id, 0) + batch.num_rows
        self.counts[group_id] = self.counts.get(group_id, 0) + batch.num_rows
        self._buffered += batch.num_rows
        if self._pending_rows[group_id] >= _ROWS_PER_WRITE:
            self._flush(group_id)
        elif self._buffered >= _MAX_BUFFERED_ROWS:
            for pending in list(self._pending):
                self._flush(pending)

    def _flush(self, group_id: str | None) -> None:
        batches = self._pending.pop(group_id, [])
        rows = self._pending_rows.pop(group_id, 0)
        if batches:
            self.open(group_id).write_table(pa.Table.from_batches(batches, schema=self._schema))
            self._buffered -= rows

    def open(self, group_id: str | None) -> pq.ParquetWriter:
        """The writer of a Group's partition file, created on first use."""
        writer = self._writers.get(group_id)
        if writer is None:
            directory = self._root / f"group={encode_group(group_id)}"
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / "part-0.parquet"
            writer = pq.ParquetWriter(path, self._schema, compression="zstd")
            self._writers[group_id] = writer
            self.files.append(path)
        return writer

    def close(self) -> None:
        for group_id in list(self._pending):
            self._flush(group_id)
        for writer in self._writers.values():
            writer.close()

    def summary(self) -> DatasetSummary:
        return DatasetSummary(
            rows=sum(self.counts.values()),
            rows_by_group=dict(self.counts),
            files=tuple(self.files),
        )


def _write_dataset(
    root: Path, schema: pa.Schema, batches: Iterable[pa.RecordBatch]
) -> DatasetSummary:
    writer = _PartitionedWriter(root, schema)
    try:
        for batch in batches:
            writer.add(batch)
        if not writer.counts:
            # An empty dataset still gets one row-less file, so that readers find its schema.
            writer.open(None)
    finally:
        writer.close()
    return writer.summary()


def export_parquet(
    store: LogStore, out_dir: Path | str, *, overwrite: bool = False
) -> ExportSummary:
    """Write the store's Events, receipts and rejections as Parquet (zstd) under ``out_dir``.

    Events are exported up to the chain head read when the export starts, so a concurrent writer
    cannot make the export end mid-batch. Raises ``FileExistsError`` when a dataset directory
    exists already, unless ``overwrite`` (which deletes the three dataset directories, the
    manifest and ``views.spark.sql`` first, nothing else).
    """
    out = Path(out_dir)
    targets = [out / name for name in DATASETS]
    manifest = out / "manifest.json"
    existing = [p for p in [*targets, manifest, out / SPARK_VIEWS] if p.exists()]
    if existing and not overwrite:
        raise FileExistsError(f"export target exists already: {existing[0]}")
    for path in existing:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()
    out.mkdir(parents=True, exist_ok=True)

    position, chain = store.chain_head()
    written = {
        name: _write_dataset(out / name, log_table_schema(table), _source(store, table, position))
        for name, table in zip(DATASETS, _TABLES, strict=True)
    }
    summary = ExportSummary(
        out_dir=out,
        events=written["events"],
        receipts=written["receipts"],
        rejections=written["rejections"],
        chain_head=(position, chain.hex()),
        manifest=manifest,
    )
    manifest.write_text(_manifest_json(summary), encoding="utf-8")
    (out / SPARK_VIEWS).write_text(_spark_views(), encoding="utf-8")
    return summary


def _spark_views() -> str:
    from importlib import resources

    return resources.files("mwp_local.store").joinpath("sql/spark.sql").read_text("utf-8")


def _manifest_json(summary: ExportSummary) -> str:
    def dataset(d: DatasetSummary) -> dict[str, Any]:
        by_group: Sequence[tuple[str | None, int]] = sorted(
            d.rows_by_group.items(), key=lambda item: (item[0] is not None, item[0] or "")
        )
        return {
            "rows": d.rows,
            "partitions": [
                {"group_id": g, "partition": f"group={encode_group(g)}", "rows": n}
                for g, n in by_group
            ],
        }

    doc = {
        "format": "mwp_local log export",
        "version": 1,
        "chain": "blake3(previous chain || document UTF-8), genesis 32 zero bytes",
        "chain_head": {"position": summary.chain_head[0], "chain": summary.chain_head[1]},
        "datasets": {
            "events": dataset(summary.events),
            "receipts": dataset(summary.receipts),
            "rejections": dataset(summary.rejections),
        },
    }
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"
