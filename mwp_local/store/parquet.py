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

Row groups: a partition's rows are written in row groups planned from the rows in log order, cut
into batches of exactly ``_READ_ROWS`` (``_RowGroups``), so the files' bytes depend on the log
alone. The DuckDB store takes a faster path with the same bytes (``_write_group_sorted``, checked
against the plain one in tests/test_fast_paths.py): DuckDB hands each table in ``(group,
position)`` order and the planned pieces are sliced from its batches without copying; the three
datasets are written side by side on threads, each reading its next batches ahead
(``read_ahead``), since DuckDB and pyarrow both release the GIL.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..authority.records import ReceiptRecord, RejectionRecord
from .base import LogEntry, LogStore
from .duckdb_schema import log_table_schema
from .read_ahead import ReadAhead

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
#: Rows per batch read from a store (the plain path's batches: the row groups depend on them).
_READ_ROWS = 65_536
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


def _exact(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The same rows in batches of exactly ``_READ_ROWS`` (the last one shorter): DuckDB's own
    batches vary in size (65,536, 57,344, ...), and the files' row groups must not depend on
    that (``_write_group_sorted`` plans them from the positions)."""
    runs = _Runs(batches)
    while True:
        try:
            yield runs.take(_READ_ROWS)
        except StopIteration:
            return


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
        return _exact(store.arrow_batches(table, upto_position=upto, batch_rows=_READ_ROWS))
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


_Group = str | None
_T = TypeVar("_T")


def _group_order(group_id: _Group) -> tuple[bool, str]:
    """Groups in ascending order, the Organization's rows (``None``) last: Arrow's and DuckDB's
    order of UTF-8 text is Python's order of ``str``."""
    return (group_id is None, group_id or "")


class _RowGroups(Generic[_T]):
    """Which rows make up each row group of each partition file. Rows arrive in log order, in
    pieces (one per Group per input batch); a Group's pieces wait until they hold
    ``_ROWS_PER_WRITE`` rows, or until all Groups' together hold ``_MAX_BUFFERED_ROWS``, and then
    make one row group. The pieces are the rows themselves or, to plan an export, their counts:
    both give the same row groups, which is what keeps the files byte for byte the same."""

    def __init__(self) -> None:
        self._pending: dict[_Group, list[_T]] = {}
        self._pending_rows: dict[_Group, int] = {}
        self._buffered = 0
        self.counts: dict[_Group, int] = {}

    def add(self, group_id: _Group, rows: int, piece: _T) -> list[tuple[_Group, list[_T]]]:
        """Buffer a piece of ``rows`` rows; return the row groups it completes."""
        self._pending.setdefault(group_id, []).append(piece)
        self._pending_rows[group_id] = self._pending_rows.get(group_id, 0) + rows
        self.counts[group_id] = self.counts.get(group_id, 0) + rows
        self._buffered += rows
        if self._pending_rows[group_id] >= _ROWS_PER_WRITE:
            return self._take([group_id])
        if self._buffered >= _MAX_BUFFERED_ROWS:
            return self._take(list(self._pending))
        return []

    def rest(self) -> list[tuple[_Group, list[_T]]]:
        """The row groups of whatever is still buffered."""
        return self._take(list(self._pending))

    def _take(self, groups: list[_Group]) -> list[tuple[_Group, list[_T]]]:
        out = []
        for group_id in groups:
            pieces = self._pending.pop(group_id, [])
            self._buffered -= self._pending_rows.pop(group_id, 0)
            if pieces:
                out.append((group_id, pieces))
        return out


class _PartitionedWriter:
    """Splits Arrow batches by Group and appends them to one Parquet file per partition, in
    row groups of about ``_ROWS_PER_WRITE`` rows (``_RowGroups``); rows keep their order within
    a partition."""

    def __init__(self, root: Path, schema: pa.Schema) -> None:
        self._root = root
        self._schema = schema
        self._writers: dict[_Group, pq.ParquetWriter] = {}
        self._row_groups: _RowGroups[pa.RecordBatch] = _RowGroups()
        self.counts = self._row_groups.counts
        self.files: list[Path] = []

    def add(self, batch: pa.RecordBatch) -> None:
        """Route each row of ``batch`` (rows in log order) to its Group's partition."""
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

    def _buffer(self, group_id: _Group, batch: pa.RecordBatch) -> None:
        for group, pieces in self._row_groups.add(group_id, batch.num_rows, batch):
            self.write(group, pieces)

    def write(self, group_id: _Group, pieces: list[pa.RecordBatch]) -> None:
        """Append one row group to a Group's partition file."""
        self.open(group_id).write_table(pa.Table.from_batches(pieces, schema=self._schema))

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
        for group_id, pieces in self._row_groups.rest():
            self.write(group_id, pieces)
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


@runtime_checkable
class GroupSortedSource(ArrowLogSource, Protocol):
    """A store that also sorts a log table by Group itself and counts its rows per Group per
    batch (``DuckDBLogStore`` does): the fast path of the export."""

    def arrow_batches(
        self,
        table: str,
        *,
        upto_position: int | None = None,
        batch_rows: int = ...,
        by_group: bool = ...,
    ) -> Iterator[pa.RecordBatch]: ...

    def group_counts(
        self, table: str, *, upto_position: int, batch_rows: int
    ) -> list[tuple[int, str | None, int]]: ...

    def last_position(self, table: str) -> int: ...


def _plan(
    counts: list[tuple[int, _Group, int]],
) -> tuple[list[tuple[_Group, list[int]]], dict[_Group, int]]:
    """The row groups ``_write_dataset`` makes of position-ordered batches holding ``counts``
    (``(batch, group, rows)``), as lists of piece lengths in the order it writes them, and the
    rows per Group in the order it first meets them."""
    row_groups: _RowGroups[int] = _RowGroups()
    planned: list[tuple[_Group, list[int]]] = []
    for _batch, group_id, rows in sorted(counts, key=lambda c: (c[0], _group_order(c[1]))):
        planned += row_groups.add(group_id, rows, rows)
    return planned + row_groups.rest(), row_groups.counts


class _Runs:
    """Consecutive rows of a group-sorted stream of batches, cut without copying unless a
    piece spans two batches."""

    def __init__(self, batches: Iterator[pa.RecordBatch]) -> None:
        self._batches = batches
        self._current: pa.RecordBatch | None = None
        self._offset = 0

    def take(self, rows: int) -> pa.RecordBatch:
        """The next ``rows`` rows (fewer only at the end of the stream)."""
        parts = []
        while rows:
            if self._current is None or self._offset == self._current.num_rows:
                following = next(self._batches, None)
                if following is None:
                    break
                self._current, self._offset = following, 0
            part = self._current.slice(self._offset, rows)
            self._offset += part.num_rows
            rows -= part.num_rows
            parts.append(part)
        if not parts:
            raise StopIteration
        return parts[0] if len(parts) == 1 else pa.concat_batches(parts)

    def exhausted(self) -> bool:
        if self._current is not None and self._offset < self._current.num_rows:
            return False
        return all(b.num_rows == 0 for b in self._batches)


def _write_group_sorted(
    root: Path, schema: pa.Schema, store: GroupSortedSource, table: str, upto: int
) -> DatasetSummary | None:
    """``_write_dataset`` of a log table, byte for byte, from batches DuckDB sorted by
    ``(group, position)``: no per-batch sort and take in Python, pieces sliced without copying.
    The row groups are planned from the rows per Group per batch (``_plan``); ``None`` when
    the table's positions are not ``1..upto`` (the plan would not hold)."""
    counts = store.group_counts(table, upto_position=upto, batch_rows=_READ_ROWS)
    planned, rows_by_group = _plan(counts)
    if sum(rows_by_group.values()) != upto:
        return None
    by_group: dict[_Group, list[list[int]]] = {}
    for group_id, pieces in planned:
        by_group.setdefault(group_id, []).append(pieces)
    writer = _PartitionedWriter(root, schema)
    # DuckDB sorts and hands out the next batches while pyarrow encodes these (see read_ahead).
    ahead = ReadAhead(
        store.arrow_batches(table, upto_position=upto, batch_rows=_READ_ROWS, by_group=True)
    )
    runs = _Runs(ahead)
    try:
        # Files are opened in the order the plain path opens them (the summary lists them so).
        for group_id, _pieces in planned:
            writer.open(group_id)
        for group_id in sorted(by_group, key=_group_order):
            for pieces in by_group[group_id]:
                try:
                    batches = [runs.take(n) for n in pieces]
                except StopIteration:
                    batches = []
                if (
                    sum(b.num_rows for b in batches) != sum(pieces)
                    or batches[0].column("group_id")[0].as_py() != group_id
                    or batches[-1].column("group_id")[-1].as_py() != group_id
                ):
                    raise RuntimeError(f"{table} changed during the export")
                writer.write(group_id, batches)
        if not runs.exhausted():
            raise RuntimeError(f"{table} changed during the export")
        if not planned:
            writer.open(None)
    finally:
        ahead.close()
        writer.close()
    writer.counts.update(rows_by_group)
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
    if isinstance(store, GroupSortedSource):
        # Each dataset on its own thread: DuckDB and pyarrow release the GIL, and one table's
        # encoding overlaps another's reading. The ends are read first, all at one moment.
        ends = {t: position if t == "log_events" else store.last_position(t) for t in _TABLES}
        sorted_store = store

        def dataset(name: str, table: str) -> DatasetSummary:
            schema = log_table_schema(table)
            summary = _write_group_sorted(out / name, schema, sorted_store, table, ends[table])
            if summary is None:  # positions with gaps: the plain path
                summary = _write_dataset(out / name, schema, _source(store, table, position))
            return summary

        with ThreadPoolExecutor(max_workers=len(DATASETS)) as pool:
            futures = {
                n: pool.submit(dataset, n, t) for n, t in zip(DATASETS, _TABLES, strict=True)
            }
            written = {name: future.result() for name, future in futures.items()}
    else:  # the plain path: any LogStore, one dataset after the other
        written = {
            name: _write_dataset(
                out / name, log_table_schema(table), _source(store, table, position)
            )
            for name, table in zip(DATASETS, _TABLES, strict=True)
        }
    result = ExportSummary(
        out_dir=out,
        events=written["events"],
        receipts=written["receipts"],
        rejections=written["rejections"],
        chain_head=(position, chain.hex()),
        manifest=manifest,
    )
    manifest.write_text(_manifest_json(result), encoding="utf-8")
    (out / SPARK_VIEWS).write_text(_spark_views(), encoding="utf-8")
    return result


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
