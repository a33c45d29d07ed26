"""The Group log's storage interface and the rules every log store enforces the same way.

This module owns the ``LogStore`` protocol (what the Group Authority, replay, exports and
``verify-log`` may ask of a log), the errors a store raises, and the pure checks shared by every
implementation: log positions and the hash chain of a batch, per-Group sequence continuity, and
the validation of projection deltas. It holds no SQL and does no I/O; adapters (``memory``,
``duckdb_log``) call these checks before they change anything, so every store accepts and
refuses exactly the same batches. (Three rules the DuckDB store gets from its column types
instead: ``NOT NULL``, ``JSON`` and the receipt primary key; the in-memory store applies
``check_required``, ``check_json_text`` and a dict lookup for them.)

Rules enforced here (a batch that breaks one is refused whole with ``IntegrityError``):

* log positions start at 1 and have no gaps; each Event's chain value is
  ``blake3(previous chain || document)`` (see ``chain``);
* a Group's Events carry ``sequence`` 1, 2, 3, ... with no gap or repeat (section 2: Group Event
  sequences start at 1; a Cursor is the highest *contiguous* sequence); an Organization-scoped
  Event has neither ``sequence`` nor ``aggregate_revision``;
* a receipt's ``(actor_id, action_id)`` is unique in the whole log;
* record fields not typed ``... | None`` are not ``None``; ``payload_json``, ``receipt_json`` and
  ``details_json`` hold one JSON value each;
* a projection row names only declared columns, has a non-null key and values of the declared
  SQL type; within one delta, a key is either upserted or deleted, never both (the order would be
  ambiguous); when one key is upserted several times, the last row wins.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, runtime_checkable

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from .chain import link
from .records import PROJECTION_BY_NAME, Batch, ProjectionDelta, ProjectionTable

__all__ = [
    "REQUIRED_FIELDS",
    "IntegrityError",
    "LogEntry",
    "LogStore",
    "LogStoreError",
    "PlannedEvents",
    "StoreClosedError",
    "StoreLockedError",
    "TableChange",
    "check_json_text",
    "check_required",
    "coerce_row",
    "normalize_delta",
    "normalize_replacement",
    "plan_events",
    "projection_key",
]

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


class LogStoreError(Exception):
    """A log store could not do what was asked; the store is unchanged."""


class IntegrityError(LogStoreError):
    """A batch breaks a rule of the log (see the module docstring); nothing of it was written."""


class StoreClosedError(LogStoreError):
    """The store was closed, or opened read-only and asked to write."""


class StoreLockedError(OSError):
    """Another process holds the log file open for writing: an ``OSError`` with ``EBUSY`` (the
    file is there but cannot be used now; ``filename`` is the file, ``strerror`` says who holds
    it and what to do), not a ``LogStoreError``, since it says nothing about the log."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LogEntry:
    """One Event as the log holds it: its log position, its chain value and the record."""

    #: 1-based place in the whole log (all Groups and Organization-scoped Events together).
    position: int
    #: ``blake3(chain of position - 1 || document as UTF-8)``; 32 bytes.
    chain: bytes
    event: EventRecord


@runtime_checkable
class LogStore(Protocol):
    """An append-only Group log with receipts, rejections and rebuildable projections.

    Implementations are safe to share between threads: commits are serialized (one writer) and
    reads may run concurrently with them. A read sees whole batches only.
    """

    def commit(self, batch: Batch) -> None:
        """Append the batch's Events, receipts and rejections and apply its projection delta,
        atomically. On any failure raise, and leave the store exactly as it was."""
        ...

    def stage(self, batch: Batch) -> None:
        """Check the batch as ``commit`` would, then write it at the latest on the next
        ``flush``, ``commit``, read or ``close`` (write-behind; a store may write it at once)."""
        ...

    def flush(self) -> None:
        """Write whatever ``stage`` queued (no-op when nothing waits)."""
        ...

    def events(self, group_id: str | None = None, after_sequence: int = 0) -> Iterator[EventRecord]:
        """One Group's Events with ``sequence > after_sequence`` in sequence order; with
        ``group_id=None`` every Event of the log (Organization-scoped ones included) in log
        position order, and ``after_sequence`` must then be 0."""
        ...

    def entries(self, after_position: int = 0) -> Iterator[LogEntry]:
        """Every Event with ``position > after_position`` with its position and chain value, in
        log position order (what replay, exports and ``verify-log`` read)."""
        ...

    def event_count(self) -> int:
        """How many Events the log holds (equal to the last position)."""
        ...

    def last_sequence(self, group_id: str) -> int:
        """The highest sequence of the Group's Events, 0 for a Group without Events."""
        ...

    def chain_head(self) -> tuple[int, bytes]:
        """``(last position, chain value at it)``; ``(0, 32 zero bytes)`` for an empty log."""
        ...

    def receipt(self, actor_id: str, action_id: str) -> ReceiptRecord | None:
        """The receipt of the accepted Command ``(actor_id, action_id)``, if any."""
        ...

    def receipts(self) -> Iterator[ReceiptRecord]:
        """Every receipt in the order committed."""
        ...

    def rejections(self) -> list[RejectionRecord]:
        """Every rejection in the order committed."""
        ...

    def projection_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of a declared projection table, each with every declared column, sorted by
        the table's key."""
        ...

    def replace_projections(self, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Empty every projection table and write ``rows`` (table name → rows), in one
        transaction; tables not named end up empty. Used by rebuild-by-replay."""
        ...

    def close(self) -> None:
        """Release the store; further calls raise ``StoreClosedError``. Idempotent."""
        ...

    def __enter__(self) -> LogStore: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


# --- Events: positions, chain, sequences ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class PlannedEvents:
    """Where a batch's Events go: computed before anything is written."""

    #: Position of the batch's first Event (the last position + 1).
    first_position: int
    #: Chain value of each Event, in batch order.
    chains: tuple[bytes, ...]
    #: The new last sequence of each Group the batch touches.
    last_sequences: Mapping[str, int]
    #: ``(position, chain)`` after the batch.
    head: tuple[int, bytes]


def plan_events(
    events: Sequence[EventRecord],
    *,
    head: tuple[int, bytes],
    last_sequence: Callable[[str], int],
) -> PlannedEvents:
    """Check a batch's Events against the log's head and Group sequences, and chain them.

    ``last_sequence(group_id)`` answers the Group's last committed sequence (0 when none).
    Raises ``IntegrityError`` for a sequence gap or repeat, or an Organization-scoped Event with
    a sequence.
    """
    position, chain = head
    chains: list[bytes] = []
    touched: dict[str, int] = {}
    for event in events:
        group_id = event.group_id
        if group_id is None:
            if event.sequence is not None or event.aggregate_revision is not None:
                raise IntegrityError(
                    f"Organization-scoped Event {event.event_id} must not carry a Group "
                    "sequence or aggregate revision"
                )
        else:
            previous = touched.get(group_id)
            if previous is None:
                previous = last_sequence(group_id)
            if event.sequence != previous + 1:
                raise IntegrityError(
                    f"Event {event.event_id} of Group {group_id} has sequence {event.sequence}; "
                    f"the next sequence is {previous + 1}"
                )
            touched[group_id] = previous + 1
        if not isinstance(event.document, str):
            raise IntegrityError(f"Event {event.event_id} has no document text")
        chain = link(chain, event.document)
        chains.append(chain)
    return PlannedEvents(
        first_position=head[0] + 1,
        chains=tuple(chains),
        last_sequences=touched,
        head=(position + len(chains), chain),
    )


def _required_fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if "None" not in str(f.type))


#: The fields of each record that must not be ``None`` (those not typed ``... | None``); the
#: DuckDB store declares the same columns ``NOT NULL``.
REQUIRED_FIELDS: Mapping[type, tuple[str, ...]] = {
    cls: _required_fields(cls) for cls in (EventRecord, ReceiptRecord, RejectionRecord)
}


def check_required(records: Sequence[Any]) -> None:
    """Raise ``IntegrityError`` if a record leaves a required field ``None`` (the in-memory
    store's counterpart of the DuckDB store's ``NOT NULL`` columns)."""
    for record in records:
        for name in REQUIRED_FIELDS[type(record)]:
            if getattr(record, name) is None:
                raise IntegrityError(f"{type(record).__name__}.{name} must not be None")


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def check_json_text(text: str, what: str) -> None:
    """Raise ``IntegrityError`` unless ``text`` is one JSON value (``NaN``/``Infinity`` refused).

    The DuckDB store gets the same check from its ``JSON`` column type; the in-memory store calls
    this so both refuse the same batches.
    """
    try:
        json.loads(text, parse_constant=_refuse_constant)
    except (TypeError, ValueError) as exc:
        raise IntegrityError(f"{what} is not JSON text: {exc}") from None


# --- Projections ---------------------------------------------------------------------------


def _check_varchar(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected str")
    return value


def _check_bigint(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("expected int")
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise TypeError("int outside BIGINT range")
    return value


def _check_double(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError("expected float")
    result = float(value)
    if math.isnan(result):
        raise TypeError("NaN is not a value")
    return result


def _check_boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError("expected bool")
    return value


#: Python checker per declared SQL type; each returns the value as the stores keep it.
_CHECKERS: Mapping[str, Callable[[Any], Any]] = {
    "VARCHAR": _check_varchar,
    "BIGINT": _check_bigint,
    "DOUBLE": _check_double,
    "BOOLEAN": _check_boolean,
}


def _table(name: str) -> ProjectionTable:
    try:
        return PROJECTION_BY_NAME[name]
    except KeyError:
        raise IntegrityError(f"{name!r} is not a declared projection table") from None


def coerce_row(table: ProjectionTable, row: Mapping[str, Any]) -> dict[str, Any]:
    """Validate one row against the table's declared columns and return it complete.

    Missing columns become ``None``; unknown columns, a null key column or a value of the wrong
    type raise ``IntegrityError``. ``DOUBLE`` values are returned as ``float``.
    """
    unknown = row.keys() - table.column_set
    if unknown:
        raise IntegrityError(f"{table.name}: unknown column(s) {sorted(unknown)}")
    out: dict[str, Any] = {}
    for name, sql_type in table.columns:
        value = row.get(name)
        if value is None:
            if name in table.key:
                raise IntegrityError(f"{table.name}: key column {name} is null")
            out[name] = None
            continue
        checker = _CHECKERS.get(sql_type)
        if checker is None:
            raise IntegrityError(f"{table.name}.{name}: unsupported column type {sql_type}")
        try:
            out[name] = checker(value)
        except TypeError as exc:
            raise IntegrityError(
                f"{table.name}.{name} ({sql_type}): {exc}, got {value!r}"
            ) from None
    return out


def projection_key(table: ProjectionTable, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of a (coerced) row, as a tuple in the table's key order."""
    return tuple(row[name] for name in table.key)


def _coerce_key(table: ProjectionTable, key: Sequence[Any]) -> tuple[Any, ...]:
    if isinstance(key, str | bytes) or len(key) != len(table.key):
        raise IntegrityError(
            f"{table.name}: a key is a tuple of {len(table.key)} value(s) {table.key}, got {key!r}"
        )
    row = coerce_row(table, dict(zip(table.key, key, strict=True)))
    return projection_key(table, row)


@dataclass(frozen=True, slots=True)
class TableChange:
    """What a delta does to one projection table, validated: keys to delete, rows to write.

    No key appears in both; every row's key is distinct. A store deletes ``deletes`` and the
    keys of ``rows``, then writes ``rows``.
    """

    table: ProjectionTable
    deletes: tuple[tuple[Any, ...], ...]
    rows: tuple[dict[str, Any], ...]

    def row_keys(self) -> list[tuple[Any, ...]]:
        """The keys of ``rows``, in order."""
        return [projection_key(self.table, row) for row in self.rows]


def normalize_delta(delta: ProjectionDelta) -> list[TableChange]:
    """Validate a projection delta; return one ``TableChange`` per table it changes.

    Raises ``IntegrityError`` for an undeclared table, a bad row or key, or a key that is both
    upserted and deleted. Several upserts of one key collapse to the last.
    """
    names = [
        name for name in PROJECTION_BY_NAME if delta.upserts.get(name) or delta.deletes.get(name)
    ]
    for name in (*delta.upserts, *delta.deletes):
        _table(name)
    changes: list[TableChange] = []
    for name in names:
        table = PROJECTION_BY_NAME[name]
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        for raw in delta.upserts.get(name, ()):
            row = coerce_row(table, raw)
            rows[projection_key(table, row)] = row
        deletes = dict.fromkeys(_coerce_key(table, key) for key in delta.deletes.get(name, ()))
        both = [key for key in deletes if key in rows]
        if both:
            raise IntegrityError(
                f"{name}: key {both[0]!r} is both upserted and deleted in one delta"
            )
        changes.append(TableChange(table=table, deletes=tuple(deletes), rows=tuple(rows.values())))
    return changes


def normalize_replacement(
    rows: Mapping[str, Sequence[Mapping[str, Any]]],
) -> dict[str, list[dict[str, Any]]]:
    """Validate a full set of projection rows (``replace_projections``); every declared table
    appears in the result, sorted by key. A repeated key raises ``IntegrityError``."""
    for name in rows:
        _table(name)
    out: dict[str, list[dict[str, Any]]] = {}
    for name, table in PROJECTION_BY_NAME.items():
        by_key: dict[tuple[Any, ...], dict[str, Any]] = {}
        for raw in rows.get(name, ()):
            row = coerce_row(table, raw)
            key = projection_key(table, row)
            if key in by_key:
                raise IntegrityError(f"{name}: key {key!r} appears twice")
            by_key[key] = row
        out[name] = [by_key[key] for key in sorted(by_key)]
    return out


def batches_of(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """Split ``items`` into lists of at most ``size``."""
    chunk: list[Any] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def check_batch_types(batch: Batch) -> None:
    """Raise ``TypeError`` unless ``batch`` is a ``Batch`` of the record types (cheap guard
    against handing a store something else)."""
    if not isinstance(batch, Batch):
        raise TypeError(f"expected a Batch, got {type(batch).__name__}")
    for records, kind in (
        (batch.events, EventRecord),
        (batch.receipts, ReceiptRecord),
        (batch.rejections, RejectionRecord),
    ):
        for record in records:
            if not isinstance(record, kind):
                raise TypeError(f"expected {kind.__name__}, got {type(record).__name__}")


def merge_changes(batches: Iterable[Sequence[TableChange]]) -> list[TableChange]:
    """Several batches' projection changes, applied in order, as one ``TableChange`` per table:
    a key's last write wins (a row, or its deletion). Writing the result equals writing the
    batches one after another."""
    merged: dict[str, tuple[ProjectionTable, dict[tuple[Any, ...], dict[str, Any] | None]]] = {}
    for changes in batches:
        for change in changes:
            final = merged.setdefault(change.table.name, (change.table, {}))[1]
            for key in change.deletes:
                final[key] = None
            for key, row in zip(change.row_keys(), change.rows, strict=True):
                final[key] = row
    out: list[TableChange] = []
    for name in PROJECTION_BY_NAME:
        if name not in merged:
            continue
        table, final = merged[name]
        out.append(
            TableChange(
                table=table,
                deletes=tuple(key for key, row in final.items() if row is None),
                rows=tuple(row for row in final.values() if row is not None),
            )
        )
    return out
