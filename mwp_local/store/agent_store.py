"""A Worker's durable local projections (§11.1, §16; MWP-WRK-008, 029, 030).

Per Group, a Worker keeps a distinct Event inbox, Cursor and work queue. They are projections of
accepted Group Events: the Group log stays authoritative, and everything here can be deleted and
rebuilt by replaying (re-delivering) the log. This module owns the values, the pure derivation
of the work queues from a replica state, and two stores behind one small interface:

* ``MemoryLocalStore``: the reference, for unit tests and agents that keep nothing on disk;
* ``DuckDBLocalStore``: the Worker's own file ``DIR/agents/<name>.duckdb``.

A ``LocalBatch`` holds the Events released since the last commit, the Cursors they moved and
the queue rows they changed, and is committed in ONE transaction: a Cursor is never stored
without what it produced, so a crash between deliveries loses nothing the Group log cannot
re-deliver, and a duplicate delivery is a no-op (STYLE 7). Tables (DuckDB)::

    local_events(position, group_id, sequence, event_id, kind, document)  -- the inboxes
    local_cursors(group_id, sequence)            -- appended per commit; the Cursor is the max
    local_queue(group_id, work_item_id, state, ownership_epoch, contract_version,
                urgency, deadline, lease_id, last_sequence)                -- the work queues

Organization-scoped Events (no Group) live in the pseudo-Group ``__organization__`` with their
arrival index as sequence. Writes are Arrow batches (row ``INSERT`` is slow, see TOOLCHAIN.md).
All SQL of the agents lives here; nothing here decides anything.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..authority.state import AuthorityState
from ..protocol.inbox import ORG
from ..protocol.tables import WorkItemState

#: The WorkItem states in which an owned item sits in its owner's per-Group work queue.
QUEUE_STATES = (WorkItemState.QUEUED, WorkItemState.ACTIVE, WorkItemState.BLOCKED)


@dataclass(frozen=True, slots=True, kw_only=True)
class InboxRow:
    """One released Event in a Worker's inbox."""

    #: Local release order across all Groups (1, 2, ...): replay folds in this order.
    position: int
    #: The Event's Group, or ``__organization__`` for Organization-scoped Events.
    group_id: str
    #: The Group sequence (for Organization Events: their arrival index).
    sequence: int
    event_id: str
    kind: str
    #: The signed Event, as canonical JSON text.
    document: str


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueRow:
    """One WorkItem in its owner's per-Group work queue (scheduling metadata only)."""

    group_id: str
    work_item_id: str
    #: ``queued``, ``active`` or ``blocked`` (authoritative status stays in the Group log).
    state: str
    ownership_epoch: int
    contract_version: int
    urgency: str
    deadline: str
    #: The lease the item currently lives under (execution, ownership or blocked), if any.
    lease_id: str | None
    #: The Group sequence of the Event that last changed the item.
    last_sequence: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalBatch:
    """What one commit writes: new inbox rows, moved Cursors, replaced per-Group queues."""

    events: tuple[InboxRow, ...] = ()
    cursors: Mapping[str, int] = field(default_factory=dict)
    #: Group → its whole queue (an empty tuple empties it).
    queues: Mapping[str, tuple[QueueRow, ...]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether there is nothing to write."""
        return not (self.events or self.cursors or self.queues)


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalSnapshot:
    """Everything a local store holds, in replay order."""

    events: tuple[InboxRow, ...]
    cursors: dict[str, int]
    queues: dict[str, tuple[QueueRow, ...]]


class LocalStore(Protocol):
    """Where a Worker keeps its per-Group inboxes, Cursors and work queues."""

    def load(self) -> LocalSnapshot:
        """Everything committed so far."""
        ...

    def commit(self, batch: LocalBatch) -> None:
        """Write ``batch`` atomically (all of it or nothing)."""
        ...

    def close(self) -> None:
        """Release the store (committed data stays)."""
        ...


def work_queues(state: AuthorityState, agent_id: str) -> dict[str, tuple[QueueRow, ...]]:
    """The per-Group work queues of ``agent_id`` as its replica ``state`` shows them.

    Pure: the same Events folded in the same order give the same rows, which is what makes the
    queues rebuildable by replay. Groups without owned work are absent.
    """
    queues: dict[str, list[QueueRow]] = {}
    for item in state.work_items.values():
        if item.owner is None or item.owner["agentId"] != agent_id:
            continue
        if item.state not in QUEUE_STATES:
            continue
        lease = item.execution_lease_id or item.blocked_lease_id or item.ownership_lease_id
        queues.setdefault(item.group_id, []).append(
            QueueRow(
                group_id=item.group_id,
                work_item_id=item.work_item_id,
                state=str(item.state),
                ownership_epoch=item.ownership_epoch,
                contract_version=item.contract_version,
                urgency=str(item.contract["requestedUrgency"]),
                deadline=str(item.contract["deadline"]),
                lease_id=lease,
                last_sequence=item.last_sequence,
            )
        )
    return {g: tuple(sorted(rows, key=lambda r: r.work_item_id)) for g, rows in queues.items()}


class MemoryLocalStore:
    """The in-memory reference store (lost with the process, like a deleted file)."""

    def __init__(self) -> None:
        self._events: list[InboxRow] = []
        self._cursors: dict[str, int] = {}
        self._queues: dict[str, tuple[QueueRow, ...]] = {}
        self.commits = 0

    def load(self) -> LocalSnapshot:
        """Everything committed so far."""
        return LocalSnapshot(
            events=tuple(self._events), cursors=dict(self._cursors), queues=dict(self._queues)
        )

    def commit(self, batch: LocalBatch) -> None:
        """Apply ``batch`` (nothing here can fail halfway)."""
        _check(batch, self._events[-1].position if self._events else 0)
        self._events.extend(batch.events)
        self._cursors.update(batch.cursors)
        for group, rows in batch.queues.items():
            if rows:
                self._queues[group] = tuple(rows)
            else:
                self._queues.pop(group, None)
        self.commits += 1

    def close(self) -> None:
        """Nothing to release."""


def _check(batch: LocalBatch, last_position: int) -> None:
    """Inbox rows are appended in release order, with no gap (a bug, never data)."""
    for offset, row in enumerate(batch.events, start=1):
        if row.position != last_position + offset:
            raise ValueError(
                f"inbox row {row.event_id} has position {row.position}, expected "
                f"{last_position + offset}"
            )


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS local_events (position BIGINT NOT NULL, group_id VARCHAR NOT "
    "NULL, sequence BIGINT NOT NULL, event_id VARCHAR NOT NULL, kind VARCHAR NOT NULL, "
    "document VARCHAR NOT NULL)",
    "CREATE TABLE IF NOT EXISTS local_cursors (group_id VARCHAR NOT NULL, sequence BIGINT NOT "
    "NULL)",
    "CREATE TABLE IF NOT EXISTS local_queue (group_id VARCHAR NOT NULL, work_item_id VARCHAR NOT "
    "NULL, state VARCHAR NOT NULL, ownership_epoch BIGINT NOT NULL, contract_version BIGINT NOT "
    "NULL, urgency VARCHAR NOT NULL, deadline VARCHAR NOT NULL, lease_id VARCHAR, "
    "last_sequence BIGINT NOT NULL)",
)
_QUEUE_COLUMNS = (
    "group_id",
    "work_item_id",
    "state",
    "ownership_epoch",
    "contract_version",
    "urgency",
    "deadline",
    "lease_id",
    "last_sequence",
)


class DuckDBLocalStore:
    """A Worker's local projections in its own DuckDB file (created when missing).

    One connection, used by one thread at a time (the agent's driver); a lock keeps a stray
    second caller from interleaving with a commit.
    """

    def __init__(self, path: Path | str) -> None:
        import duckdb

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._con: Any = duckdb.connect(str(self.path), config={"threads": 1})
        self._lock = threading.Lock()
        self.commits = 0
        try:
            for statement in _SCHEMA:
                self._con.execute(statement)
            last = self._con.execute("SELECT coalesce(max(position), 0) FROM local_events")
            self._last_position = int(last.fetchall()[0][0])
        except BaseException:
            self._con.close()
            raise

    def load(self) -> LocalSnapshot:
        """Everything committed so far, inbox rows in release order."""
        with self._lock:
            events = tuple(
                InboxRow(position=p, group_id=g, sequence=s, event_id=e, kind=k, document=d)
                for p, g, s, e, k, d in self._con.execute(
                    "SELECT position, group_id, sequence, event_id, kind, document "
                    "FROM local_events ORDER BY position"
                ).fetchall()
            )
            # Cursors only move forward; each commit appends the positions it moved to.
            cursors = dict(
                self._con.execute(
                    "SELECT group_id, max(sequence) FROM local_cursors GROUP BY group_id"
                ).fetchall()
            )
            queues: dict[str, list[QueueRow]] = {}
            rows = self._con.execute(
                f"SELECT {', '.join(_QUEUE_COLUMNS)} FROM local_queue "
                "ORDER BY group_id, work_item_id"
            ).fetchall()
            for row in rows:
                record = QueueRow(**dict(zip(_QUEUE_COLUMNS, row, strict=True)))
                queues.setdefault(record.group_id, []).append(record)
        return LocalSnapshot(
            events=events,
            cursors={str(g): int(s) for g, s in cursors.items()},
            queues={g: tuple(r) for g, r in queues.items()},
        )

    def commit(self, batch: LocalBatch) -> None:
        """Append the inbox rows, move the Cursors and replace the queues: one transaction."""
        if batch.empty:
            return
        with self._lock:
            con = self._con
            _check(batch, self._last_position)
            con.begin()
            try:
                _insert(
                    con,
                    "local_events",
                    [
                        (r.position, r.group_id, r.sequence, r.event_id, r.kind, r.document)
                        for r in batch.events
                    ],
                )
                _insert(con, "local_cursors", sorted(batch.cursors.items()))
                if batch.queues:
                    groups = sorted(batch.queues)
                    con.execute(
                        "DELETE FROM local_queue WHERE list_contains(?, group_id)", [groups]
                    )
                    _insert(
                        con,
                        "local_queue",
                        [
                            tuple(getattr(r, c) for c in _QUEUE_COLUMNS)
                            for g in groups
                            for r in batch.queues[g]
                        ],
                    )
                con.commit()
            except BaseException:
                con.rollback()
                raise
            if batch.events:
                self._last_position = batch.events[-1].position
            self.commits += 1

    def close(self) -> None:
        """Close the file (committed data stays)."""
        with self._lock:
            self._con.close()


#: Up to this many rows go in as one parameterised ``VALUES`` statement (cheaper than building
#: an Arrow relation for a few rows); more go in as one Arrow batch.
_PARAMETER_ROWS = 32


def _insert(con: Any, table: str, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert ``rows`` (tuples in column order) into ``table`` in one statement."""
    if not rows:
        return
    if len(rows) <= _PARAMETER_ROWS:
        marks = "(" + ", ".join("?" * len(rows[0])) + ")"
        con.execute(
            f"INSERT INTO {table} VALUES {', '.join([marks] * len(rows))}",
            [value for row in rows for value in row],
        )
        return
    import pyarrow as pa

    from .duckdb_writes import insert_arrow

    columns = list(zip(*rows, strict=True))
    insert_arrow(con, table, pa.table({f"c{n}": list(c) for n, c in enumerate(columns)}))


def agent_file(directory: Path, name: str) -> Path:
    """Where the Worker ``name`` of a sandbox directory keeps its local projections."""
    return directory / "agents" / f"{name}.duckdb"


__all__ = [
    "ORG",
    "QUEUE_STATES",
    "DuckDBLocalStore",
    "InboxRow",
    "LocalBatch",
    "LocalSnapshot",
    "LocalStore",
    "MemoryLocalStore",
    "QueueRow",
    "agent_file",
    "work_queues",
]
