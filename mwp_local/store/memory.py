"""The in-memory reference ``LogStore``: plain lists and dicts, nothing persisted.

It owns the reference behaviour the shared contract tests pin down, and is the store of choice
for unit tests and step-mode demos that need no files. It must stay obviously correct rather than
fast: a commit checks the whole batch and builds every new structure first, then swaps them in,
so a failure leaves the store untouched. It does no I/O and holds no SQL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from .base import (
    IntegrityError,
    LogEntry,
    StoreClosedError,
    check_batch_types,
    check_json_text,
    check_required,
    normalize_delta,
    normalize_replacement,
    plan_events,
)
from .chain import GENESIS
from .records import PROJECTION_BY_NAME, Batch

__all__ = ["MemoryLogStore"]


class MemoryLogStore:
    """A ``LogStore`` held in memory. Thread-safe: one lock serializes commits and reads."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._closed = False
        self._entries: list[LogEntry] = []
        self._by_group: dict[str, list[EventRecord]] = {}
        self._receipts: dict[tuple[str, str], ReceiptRecord] = {}
        self._rejections: list[RejectionRecord] = []
        self._projections: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {
            name: {} for name in PROJECTION_BY_NAME
        }
        self._head: tuple[int, bytes] = (0, GENESIS)

    # --- writing ---------------------------------------------------------------------------

    def commit(self, batch: Batch) -> None:
        """Commit the batch whole, or raise and change nothing."""
        check_batch_types(batch)
        with self._lock:
            self._check_open()
            plan = plan_events(batch.events, head=self._head, last_sequence=self._last_sequence)
            for records in (batch.events, batch.receipts, batch.rejections):
                check_required(records)
            for event in batch.events:
                check_json_text(event.payload_json, f"payload of Event {event.event_id}")
            new_receipts: dict[tuple[str, str], ReceiptRecord] = {}
            for receipt in batch.receipts:
                key = (receipt.actor_id, receipt.action_id)
                if key in self._receipts or key in new_receipts:
                    raise IntegrityError(f"a receipt for {key} already exists")
                check_json_text(receipt.receipt_json, f"receipt JSON of {key}")
                new_receipts[key] = receipt
            for rejection in batch.rejections:
                check_json_text(rejection.details_json, "rejection details")
            changes = normalize_delta(batch.projections)

            # Everything is checked; from here on nothing can fail.
            for offset, (event, chain) in enumerate(zip(batch.events, plan.chains, strict=True)):
                self._entries.append(
                    LogEntry(position=plan.first_position + offset, chain=chain, event=event)
                )
                if event.group_id is not None:
                    self._by_group.setdefault(event.group_id, []).append(event)
            self._head = plan.head
            self._receipts.update(new_receipts)
            self._rejections.extend(batch.rejections)
            for change in changes:
                rows = self._projections[change.table.name]
                for key in change.deletes:
                    rows.pop(key, None)
                for key, row in zip(change.row_keys(), change.rows, strict=True):
                    rows[key] = dict(row)

    def stage(self, batch: Batch) -> None:
        """Memory has no slower path to defer: the same as ``commit``."""
        self.commit(batch)

    def flush(self) -> None:
        """Nothing is ever staged here."""
        self._check_open()

    def replace_projections(self, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Empty every projection table and write ``rows``, all at once."""
        with self._lock:
            self._check_open()
            replacement = normalize_replacement(rows)
            self._projections = {
                name: {
                    tuple(row[k] for k in PROJECTION_BY_NAME[name].key): row for row in table_rows
                }
                for name, table_rows in replacement.items()
            }

    # --- reading ---------------------------------------------------------------------------

    def events(self, group_id: str | None = None, after_sequence: int = 0) -> Iterator[EventRecord]:
        """A Group's Events after ``after_sequence``, or every Event in log order."""
        with self._lock:
            self._check_open()
            if group_id is None:
                if after_sequence:
                    raise ValueError("after_sequence needs a group_id; use entries() instead")
                snapshot = [entry.event for entry in self._entries]
            else:
                # Sequences are 1, 2, 3, ... so sequence s sits at index s - 1.
                snapshot = self._by_group.get(group_id, [])[max(after_sequence, 0) :]
        return iter(snapshot)

    def entries(self, after_position: int = 0) -> Iterator[LogEntry]:
        """Every Event after ``after_position`` with its position and chain value."""
        with self._lock:
            self._check_open()
            snapshot = self._entries[max(after_position, 0) :]
        return iter(snapshot)

    def event_count(self) -> int:
        """How many Events the log holds."""
        with self._lock:
            self._check_open()
            return self._head[0]

    def last_sequence(self, group_id: str) -> int:
        """The Group's highest sequence, 0 when it has no Events."""
        with self._lock:
            self._check_open()
            return self._last_sequence(group_id)

    def chain_head(self) -> tuple[int, bytes]:
        """``(last position, its chain value)``."""
        with self._lock:
            self._check_open()
            return self._head

    def receipt(self, actor_id: str, action_id: str) -> ReceiptRecord | None:
        """The receipt of ``(actor_id, action_id)``, if any."""
        with self._lock:
            self._check_open()
            return self._receipts.get((actor_id, action_id))

    def receipts(self) -> Iterator[ReceiptRecord]:
        """Every receipt in commit order."""
        with self._lock:
            self._check_open()
            return iter(list(self._receipts.values()))

    def rejections(self) -> list[RejectionRecord]:
        """Every rejection in commit order."""
        with self._lock:
            self._check_open()
            return list(self._rejections)

    def projection_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of a projection table, sorted by key."""
        if table not in PROJECTION_BY_NAME:
            raise ValueError(f"{table!r} is not a declared projection table")
        with self._lock:
            self._check_open()
            rows = self._projections[table]
            return [dict(rows[key]) for key in sorted(rows)]

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Forget nothing, but refuse further calls."""
        with self._lock:
            self._closed = True

    def __enter__(self) -> MemoryLogStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed")

    def _last_sequence(self, group_id: str) -> int:
        return len(self._by_group.get(group_id, ()))
