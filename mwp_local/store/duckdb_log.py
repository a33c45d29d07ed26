"""The Group log in one DuckDB file: Events, receipts, rejections and projection tables.

This adapter owns the file's tables and every statement that writes them. It must not decide
anything about the protocol: it checks only the log rules shared with every store (``base``) and
persists what the Group Authority hands it. Events are append-only: no code path here updates or
deletes a ``log_events``, ``log_receipts`` or ``log_rejections`` row.

Tables (their columns are defined in ``duckdb_schema``, created and checked on open by
``duckdb_open``; the documented, friendlier views on top are in ``views``):

* ``log_events``: one row per Event, ``position`` 1, 2, 3, ... over the whole log, every
  ``EventRecord`` field as a typed column (``payload`` as ``JSON``, ``occurred_at`` as the signed
  text plus ``occurred_at_ts TIMESTAMPTZ``), the exact signed ``document`` and its ``chain``
  value (``chain``);
* ``log_receipts`` (primary key ``(actor_id, action_id)``) and ``log_rejections``, each with its
  own ``position`` in commit order;
* one ``proj_*`` table per ``records.PROJECTIONS`` entry, keyed as declared;
* ``mwp_store_meta``: the file's schema version.

How a commit works: the batch is checked and its log rows assigned first (positions, chain
values and sequences come from the head kept in memory, so a commit's cost does not grow with the
log); then one transaction inserts them (a few rows as parameters, more as Arrow tables:
``duckdb_writes.insert_log_rows``) and commits. The projection rows (§15.1 does
not ask them to be durable with the Events) are merged per key in memory and written in bulk
later, in a transaction of their own (a commit changing ``DEFER_BELOW_ROWS`` keys or more writes
them, with those pending, in its own): when ``max_pending_rows`` keys wait, and before anything
reads a projection table (``cursor``, ``projection_rows``, ``checkpoint``, ``close``,
``replace_projections``). Reads of the log tables alone need no such flush. Before the first
commit that leaves projection rows unwritten, a marker file beside the log
(``<log>.projections-behind``) is made durable; a clean ``close`` removes it. A store that opens
and finds it reports ``projections_behind`` (a writer crashed with rows unwritten) and
``GroupLog`` re-renders every projection from its replay. ``defer_projections=False`` keeps
the plain path: the delta's deletes and inserts in the commit's own transaction. On any failure
the transaction is rolled back and the in-memory head is untouched. Commits are serialized by a
lock (one writer); every read runs on its own ``cursor()``, so reads from other threads see whole
batches only.

``before_write``, when set, runs before every write of log rows (a commit or a flush of staged
batches) and its failure fails that write; the Sandbox syncs deferred Artifact blobs there
(``docs/durability.md``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from .base import (
    IntegrityError,
    LogEntry,
    LogStoreError,
    StoreClosedError,
    TableChange,
    check_batch_types,
    merge_changes,
    normalize_delta,
    normalize_replacement,
    plan_events,
)
from .chain import GENESIS
from .duckdb_open import Config, check_schema_version, connect, create_schema
from .duckdb_schema import (
    EVENT_FIELDS,
    EVENT_SELECT,
    LOG_TABLES,
    RECEIPT_FIELDS,
    RECEIPT_SELECT,
    REJECTION_FIELDS,
    REJECTION_SELECT,
    SCHEMA_VERSION,
    log_table_schema,
    projection_arrow,
    quote,
    select_text,
)
from .duckdb_writes import Staged, apply_change, insert_log_rows, log_rows
from .duckdb_writes import insert_arrow as _insert_arrow
from .records import PROJECTION_BY_NAME, PROJECTIONS, Batch, ProjectionTable
from .sql_access import contain

if TYPE_CHECKING:  # imported by duckdb_open.connect, on first use (figure 7)
    import duckdb
    import pyarrow as pa

__all__ = ["DEFAULT_CHECKPOINT_THRESHOLD", "SCHEMA_VERSION", "DuckDBLogStore"]

#: See ``DuckDBLogStore``.
DEFAULT_CHECKPOINT_THRESHOLD = "256MB"
#: See ``DuckDBLogStore.stage``: at most this many acknowledged Commands wait in memory.
DEFAULT_MAX_STAGED = 256
#: Projection keys merged in memory before they are written (see the module docstring).
DEFAULT_MAX_PENDING_ROWS = 4096
#: A commit changing at least this many projection keys writes them (and whatever is pending)
#: in its own transaction: a group commit's rows are already one bulk write, and a transaction
#: of their own would only add its cost (``benchmarks/NOTES.md``).
DEFER_BELOW_ROWS = 64
#: Suffix of the marker file saying the projection tables may be behind the log.
BEHIND_SUFFIX = ".projections-behind"

_FETCH_ROWS = 4096
#: Most Groups ``arrow_batches(by_group=True)`` reads with one query each.
_GROUP_QUERIES_MAX = 64


class DuckDBLogStore:
    """A ``LogStore`` in one DuckDB file (created with its tables and views when missing).

    ``read_only=True`` opens an existing file for reading (analysis, ``verify-log``); commits
    are then refused. Opening a file left by a crashed writer works: DuckDB rolls back the
    transaction that was open, and the head is recovered from the last committed row.

    Queries reach only files under the log's directory (the sandbox's own files) unless
    ``external_access`` (``store.sql_access``).

    ``checkpoint_threshold`` is the write-ahead-log size at which DuckDB folds it into the file
    during a commit. DuckDB's default (16 MB, about 10k Events) stalls a commit with a checkpoint
    every few thousand Events; 256 MB (about 170k Events) keeps checkpoints rare, at the price of a
    longer log replay when reopening after a crash (``benchmarks/NOTES.md``). Call ``checkpoint()``
    when idle to keep both short. ``None`` keeps DuckDB's default.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        read_only: bool = False,
        checkpoint_threshold: str | None = DEFAULT_CHECKPOINT_THRESHOLD,
        max_staged: int = DEFAULT_MAX_STAGED,
        external_access: bool = False,
        defer_projections: bool = True,
        max_pending_rows: int = DEFAULT_MAX_PENDING_ROWS,
    ) -> None:
        self.path = Path(path)
        #: Whether queries may read files outside the log's directory (``sql_access``).
        self.external_access = external_access
        self.read_only = read_only
        #: Projection tables whose declared shape changed: recreated empty on open, so the
        #: caller must rebuild them by replay.
        self.stale_projections: frozenset[str] = frozenset()
        self._write_lock = threading.Lock()
        #: Re-entrant: ``close`` holds it while a failed final write re-reads the head.
        self._cursor_lock = threading.RLock()
        self._closed = False
        #: At most this many staged Commands wait once ``stage`` returns (see ``stage``).
        self.max_staged = max_staged
        self._staged: list[Staged] = []
        self._staged_commands = 0
        self._staged_receipts: set[tuple[str, str]] = set()
        #: Called (write lock held) before each write of log rows; see the module docstring.
        self.before_write: Callable[[], None] | None = None
        #: Why the store refuses further use (a failed write-behind flush), else None.
        self._failed: str | None = None
        #: Whether projection rows are written after the commit (module docstring).
        self.defer_projections = defer_projections and not read_only
        self.max_pending_rows = max_pending_rows
        #: See ``DEFER_BELOW_ROWS``.
        self.defer_below_rows = DEFER_BELOW_ROWS
        #: Committed projection changes not written yet: per table, each key's last row (None:
        #: deleted). Emptied only once written, like ``_staged`` (see ``_flush``).
        self._pending: dict[str, tuple[ProjectionTable, dict[tuple[Any, ...], Any]]] = {}
        self._pending_rows = 0
        self._behind_path = self.path.with_name(self.path.name + BEHIND_SUFFIX)
        #: Whether the marker file exists (made by this store or found on open).
        self._marked = self._behind_path.exists()
        #: Whether the file's projection tables may lag its log beyond what ``_pending`` holds
        #: (a crash left the marker, or ``abandon`` dropped pending rows); only
        #: ``replace_projections`` clears it.
        self.projections_behind = self._marked
        config: Config = {}
        if checkpoint_threshold is not None and not read_only:
            config["checkpoint_threshold"] = checkpoint_threshold
        self._con = connect(self.path, read_only=read_only, config=config)
        #: Whether file access is confined to the log's directory (see ``contain_queries``).
        self._contained = False
        try:
            if read_only:
                self.contain_queries()
            new = False
            if not read_only:
                new, self.stale_projections = create_schema(self._con)
            if new:
                # A new file: its tables were created empty just now, at this code's version,
                # so there is nothing to check or recover (five queries skipped).
                self._set_head((0, GENESIS), {}, 0, 0)
            else:
                check_schema_version(self._con, self.path)
                self._recover_head()
            self._writer = None if read_only else self._con.cursor()
        except BaseException:
            self._con.close()
            raise

    def contain_queries(self) -> None:
        """Confine DuckDB's file access to the log's directory, for good, unless the store was
        opened with ``external_access`` (``store.sql_access``). A read-only store is confined
        when it opens; a writable one before its first query (``views.sql`` calls this), so
        that a run nobody queries keeps the replacement-scan fast path of its inserts
        (``duckdb_writes.insert_arrow``). The write lock keeps every write on one side of the
        switch."""
        if self.external_access or self._contained:
            return
        with self._write_lock:
            if not self._contained:
                contain(self._con, self.path.parent)
                self._contained = True

    # --- recovery ------------------------------------------------------------------------

    def _recover_head(self) -> None:
        """Load the head (last position, chain value), per-Group last sequences and the receipt
        and rejection counters from the committed rows; refuse a log with gaps. Reads what is
        committed, never flushing first: it runs where a write just failed, under the write
        lock (and, from ``close``, the cursor lock)."""
        with self._plain_cursor() as cur:
            count, last = cur.execute(
                "SELECT count(*), coalesce(max(position), 0) FROM log_events"
            ).fetchall()[0]
            if count != last:
                raise LogStoreError(
                    f"{self.path}: log_events holds {count} rows but its last position is {last}"
                )
            chain = GENESIS
            if last:
                chain = cur.execute(
                    "SELECT chain FROM log_events WHERE position = ?", [last]
                ).fetchall()[0][0]
            groups = cur.execute(
                "SELECT group_id, count(*), min(sequence), max(sequence) FROM log_events "
                "WHERE group_id IS NOT NULL GROUP BY group_id"
            ).fetchall()
            sequences: dict[str, int] = {}
            for group_id, n, first, high in groups:
                if first != 1 or high != n:
                    raise LogStoreError(
                        f"{self.path}: Group {group_id} has {n} Events with sequences "
                        f"{first}..{high}"
                    )
                sequences[group_id] = high
            receipts, rejections = cur.execute(
                "SELECT (SELECT coalesce(max(position), 0) FROM log_receipts), "
                "(SELECT coalesce(max(position), 0) FROM log_rejections)"
            ).fetchall()[0]
        self._set_head((last, bytes(chain)), sequences, receipts, rejections)

    def _set_head(
        self, head: tuple[int, bytes], sequences: dict[str, int], receipts: int, rejections: int
    ) -> None:
        self._head: tuple[int, bytes] = head
        self._sequences = sequences
        self._receipt_position: int = receipts
        self._rejection_position: int = rejections

    # --- writing ---------------------------------------------------------------------------

    def commit(self, batch: Batch) -> None:
        """Commit the batch in one transaction (with whatever ``stage`` queued before it), or
        raise and change nothing.

        Raises ``IntegrityError`` for a batch that breaks a log rule (sequence gap, duplicate
        receipt, malformed JSON text, bad projection row) and ``StoreClosedError`` when closed.
        """
        check_batch_types(batch)
        with self._write_lock:
            self._writable()
            self._stage(batch)
            self._flush()

    def stage(self, batch: Batch) -> None:
        """Write-behind: check the batch exactly as ``commit`` would (a bad batch raises here and
        changes nothing), then queue it instead of writing it now.

        The queue is written in one transaction by ``flush``, the next ``commit``, any read,
        ``close``, and by this call, before it returns, when more than ``max_staged`` Commands
        would wait otherwise. So once ``stage`` returns, at most ``max_staged`` Commands (those
        of receipts and rejections; a batch with neither, timer Events alone, counts as one) wait
        unwritten, whatever the number of batches holding them; a driver that acknowledges a
        batch once it is staged has at most that many acknowledged Commands not yet durable
        (``docs/durability.md``).
        """
        check_batch_types(batch)
        with self._write_lock:
            self._writable()
            self._stage(batch)
            if self._staged_commands > self.max_staged:
                self._flush()

    def flush(self) -> None:
        """Write every staged batch in one transaction (no-op when nothing is staged).

        Returns only once whatever was staged before the call is durable: it waits for a flush
        another thread is in the middle of (a Worker's file must never get ahead of the log)."""
        with self._write_lock:
            self._flush()

    def catch_up(self) -> None:
        """Write what is staged, then the projection rows still pending, now (what any read of
        a projection table does first)."""
        with self._write_lock:
            self._catch_up()

    @property
    def staged(self) -> int:
        """How many batches wait for the next flush."""
        return len(self._staged)

    @property
    def staged_commands(self) -> int:
        """How many Commands the waiting batches hold (what ``max_staged`` bounds)."""
        return self._staged_commands

    def _stage(self, batch: Batch) -> None:
        self._check_healthy()
        plan = plan_events(batch.events, head=self._head, last_sequence=self._last_sequence)
        changes = normalize_delta(batch.projections)
        for receipt in batch.receipts:
            key = (receipt.actor_id, receipt.action_id)
            if key in self._staged_receipts:
                raise IntegrityError(f"a receipt for {key} already exists")
        # Everything is checked; the in-memory head moves past the staged batch.
        self._staged.append(
            Staged(batch, plan, changes, self._receipt_position + 1, self._rejection_position + 1)
        )
        self._staged_receipts.update((r.actor_id, r.action_id) for r in batch.receipts)
        self._staged_commands += max(1, len(batch.receipts) + len(batch.rejections))
        self._head = plan.head
        self._sequences.update(plan.last_sequences)
        self._receipt_position += len(batch.receipts)
        self._rejection_position += len(batch.rejections)

    def _flush(self) -> None:
        """Write the staged batches (caller holds the write lock). On failure the in-memory
        head is re-read from the file; if more than one batch was staged, what was acknowledged
        is lost and the store refuses further use (``LogStoreError``)."""
        staged = self._staged
        if not staged:
            return
        try:
            self._write_staged(staged)
        finally:
            # Emptied only once the transaction is over: a reader that finds nothing staged
            # (``cursor``, which takes no lock to look) must find it all in the file, never
            # read between the two while another thread's flush is under way.
            self._staged, self._staged_receipts, self._staged_commands = [], set(), 0

    def _write_staged(self, staged: Sequence[Staged]) -> None:
        writer = self._writable()
        tables = log_rows(staged)
        changes = merge_changes([s.changes for s in staged])
        if not tables and not changes:
            return
        size = sum(len(c.deletes) + len(c.rows) for c in changes)
        defer = (
            self.defer_projections
            and 0 < size < self.defer_below_rows
            and self._pending_rows + size < self.max_pending_rows
        )
        if defer:
            self._mark_behind()  # durable before any commit that leaves rows unwritten
        elif self._pending and changes:  # written now, after what was pending
            changes = merge_changes([self._pending_changes(), changes])
        merged = not defer and bool(changes) and bool(self._pending)

        def write() -> None:
            for rows in tables:
                insert_log_rows(writer, rows, not self._contained)
            if not defer:
                for change in changes:
                    self._apply_change(writer, change)

        try:
            if self.before_write is not None:
                self.before_write()
            self._transaction(writer, write)
        except BaseException as exc:
            import duckdb  # already loaded by connect(): a dictionary lookup

            with suppress(duckdb.Error, LogStoreError):
                self._recover_head()
            if len(staged) > 1:
                self._failed = (
                    f"writing {len(staged)} staged batches failed ({exc}); the file keeps the "
                    "log before them, but they were already acknowledged: reopen the directory"
                )
            raise
        if defer:
            self._defer(changes)
        elif merged:
            self._pending, self._pending_rows = {}, 0

    def _mark_behind(self) -> None:
        """Make the marker file durable (once per store) before projection rows lag."""
        if self._marked:
            return
        import os

        fd = os.open(self._behind_path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        directory = os.open(self._behind_path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        self._marked = True

    def _defer(self, changes: Sequence[TableChange]) -> None:
        """Merge committed projection changes into ``_pending`` (a key's last write wins); write
        them once ``max_pending_rows`` keys wait."""
        for change in changes:
            final = self._pending.setdefault(change.table.name, (change.table, {}))[1]
            before = len(final)
            for key in change.deletes:
                final[key] = None
            for key, row in zip(change.row_keys(), change.rows, strict=True):
                final[key] = row
            self._pending_rows += len(final) - before
        if self._pending_rows >= self.max_pending_rows:
            self._write_pending()

    def _write_pending(self) -> None:
        """Write the pending projection rows in one transaction (caller holds the write lock);
        on failure they stay pending."""
        if not self._pending:
            return
        writer = self._writable()
        changes = self._pending_changes()

        def write() -> None:
            for change in changes:
                self._apply_change(writer, change)

        self._transaction(writer, write)
        self._pending, self._pending_rows = {}, 0

    def _pending_changes(self) -> list[TableChange]:
        """The pending rows as one ``TableChange`` per table."""
        return [
            TableChange(
                table=table,
                deletes=tuple(k for k, row in final.items() if row is None),
                rows=tuple(row for row in final.values() if row is not None),
            )
            for name in PROJECTION_BY_NAME
            if name in self._pending
            for table, final in (self._pending[name],)
        ]

    def _catch_up(self) -> None:
        """Write what is staged, then the pending projection rows (write lock held)."""
        self._flush()
        self._write_pending()

    def replace_projections(self, rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        """Empty every projection table and write ``rows``, in one transaction."""
        replacement = normalize_replacement(rows)
        with self._write_lock:
            writer = self._writable()
            self._flush()  # batches staged before belong under the rows written now

            def write() -> None:
                for table in PROJECTIONS:
                    writer.execute(f"DELETE FROM {quote(table.name)}")
                    table_rows = replacement[table.name]
                    if table_rows:
                        _insert_arrow(
                            writer,
                            table.name,
                            projection_arrow(table, table_rows),
                            not self._contained,
                        )

            self._transaction(writer, write)
            # The replacement supersedes whatever was pending: the tables are caught up.
            self._pending, self._pending_rows = {}, 0
            self.projections_behind = False

    def checkpoint(self) -> None:
        """Fold the write-ahead log into the database file (slow: call it when idle)."""
        with self._write_lock:
            self._catch_up()
            self._writable().execute("CHECKPOINT")

    def _writable(self) -> duckdb.DuckDBPyConnection:
        self._check_open()
        if self._writer is None:
            raise StoreClosedError(f"{self.path} is open read-only")
        return self._writer

    def _transaction(self, writer: duckdb.DuckDBPyConnection, work: Callable[[], None]) -> None:
        import duckdb  # already loaded by connect(): a dictionary lookup

        writer.begin()
        try:
            work()
        except BaseException as exc:
            with suppress(duckdb.Error):  # keep the original error if rollback fails too
                writer.rollback()
            if isinstance(exc, duckdb.ConstraintException | duckdb.ConversionException):
                raise IntegrityError(str(exc)) from exc
            raise
        try:
            writer.commit()
        except BaseException:
            # A failed COMMIT leaves nothing committed in DuckDB, but re-read the head so the
            # in-memory copy can never run ahead of (or behind) the file.
            with suppress(duckdb.Error):
                writer.rollback()
            self._recover_head()
            raise

    def _apply_change(self, writer: duckdb.DuckDBPyConnection, change: TableChange) -> None:
        apply_change(writer, change, scan=not self._contained)

    # --- reading ---------------------------------------------------------------------------

    @contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor for one reader (closed on exit). Use one per thread and query."""
        # Read your own writes: staged batches, then pending projection rows, go to the file
        # first (each list is emptied only once written, so a reader finding both empty finds
        # everything in the file).
        if self._staged or self._pending:
            with self._write_lock:
                self._catch_up()
        with self._plain_cursor(healthy=True) as cur:
            yield cur

    @contextmanager
    def _log_cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """``cursor`` for queries of the log tables alone: their rows are written by the
        commit itself, so pending projection rows stay pending."""
        if self._staged:
            self.flush()
        with self._plain_cursor(healthy=True) as cur:
            yield cur

    @contextmanager
    def _plain_cursor(self, *, healthy: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A fresh cursor without flushing first; with ``healthy``, refused once a write-behind
        flush failed."""
        with self._cursor_lock:
            self._check_open()
            if healthy:
                self._check_healthy()
            cur = self._con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    def _stream(self, query: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        with self._log_cursor() as cur:
            cur.execute(query, list(params))
            while True:
                rows = cur.fetchmany(_FETCH_ROWS)
                if not rows:
                    return
                yield from rows

    def arrow_batches(
        self,
        table: str,
        *,
        upto_position: int | None = None,
        batch_rows: int = 65_536,
        by_group: bool = False,
    ) -> Iterator[pa.RecordBatch]:
        """The rows of ``log_events``, ``log_receipts`` or ``log_rejections`` as Arrow record
        batches in position order, up to ``upto_position`` if given: the fast path of exports.
        With ``by_group``, ordered by ``(group_id, position)`` instead, Organization rows
        (no Group) last, so each Group arrives as one run: one query per Group when there are
        few (``_group_queries``), read in one snapshot.

        JSON columns come as text and ``occurred_at_ts`` in UTC, whatever the session time zone.
        """
        columns = LOG_TABLES.get(table)
        if columns is None:
            raise ValueError(f"{table!r} is not a log table")
        schema = log_table_schema(table)
        select = ", ".join(f"{select_text(c)} AS {c.name}" for c in columns)
        where = "" if upto_position is None else f" WHERE position <= {int(upto_position)}"
        with self._log_cursor() as cur:
            queries: list[tuple[str, list[Any]]] = [
                (f"SELECT {select} FROM {table}{where} ORDER BY position", [])
            ]
            if by_group:
                cur.begin()  # one snapshot for all the queries below
                queries = self._group_queries(cur, table, select, where)
            for query, params in queries:
                for batch in cur.sql(query, params=params).to_arrow_reader(batch_rows):
                    yield batch.cast(schema)

    @staticmethod
    def _group_queries(
        cur: duckdb.DuckDBPyConnection, table: str, select: str, where: str
    ) -> list[tuple[str, list[Any]]]:
        """The queries giving a log table's rows in ``(group_id, position)`` order: one per
        Group in Group order, Organization rows last, when there are few Groups (DuckDB then
        sorts each Group's rows alone, ~30% faster than sorting the wide rows of the whole
        table, benchmarks/NOTES.md); otherwise one query sorting the whole table."""
        groups = cur.execute(
            f"SELECT DISTINCT group_id FROM {table}{where} ORDER BY group_id ASC NULLS LAST"
        ).fetchall()
        if len(groups) > _GROUP_QUERIES_MAX:
            order = "group_id ASC NULLS LAST, position"
            return [(f"SELECT {select} FROM {table}{where} ORDER BY {order}", [])]
        queries: list[tuple[str, list[Any]]] = []
        for (group_id,) in groups:
            match = "group_id IS NULL" if group_id is None else "group_id = ?"
            clause = f"{where} AND {match}" if where else f" WHERE {match}"
            params = [] if group_id is None else [group_id]
            queries.append((f"SELECT {select} FROM {table}{clause} ORDER BY position", params))
        return queries

    def group_counts(
        self, table: str, *, upto_position: int, batch_rows: int
    ) -> list[tuple[int, str | None, int]]:
        """``(batch, group_id, rows)`` of a log table up to ``upto_position``: how many rows of
        each Group the ``batch``-th of ``arrow_batches``' position-ordered batches holds."""
        if table not in LOG_TABLES:
            raise ValueError(f"{table!r} is not a log table")
        with self._log_cursor() as cur:
            rows = cur.execute(
                f"SELECT (position - 1) // {int(batch_rows)} AS batch, group_id, count(*) "
                f"FROM {table} WHERE position <= {int(upto_position)} GROUP BY ALL"
            ).fetchall()
        return [(int(batch), group, int(n)) for batch, group, n in rows]

    def last_position(self, table: str) -> int:
        """The last ``position`` of a log table (0 when empty)."""
        if table not in LOG_TABLES:
            raise ValueError(f"{table!r} is not a log table")
        with self._log_cursor() as cur:
            (last,) = cur.execute(f"SELECT coalesce(max(position), 0) FROM {table}").fetchall()[0]
        return int(last)

    def events(self, group_id: str | None = None, after_sequence: int = 0) -> Iterator[EventRecord]:
        """A Group's Events after ``after_sequence``, or every Event in log order."""
        self._check_open()
        if group_id is None:
            if after_sequence:
                raise ValueError("after_sequence needs a group_id; use entries() instead")
            query = f"SELECT {EVENT_SELECT} FROM log_events ORDER BY position"
            params: list[Any] = []
        else:
            query = (
                f"SELECT {EVENT_SELECT} FROM log_events "
                "WHERE group_id = ? AND sequence > ? ORDER BY sequence"
            )
            params = [group_id, after_sequence]
        fields = EVENT_FIELDS
        for row in self._stream(query, params):
            yield EventRecord(**dict(zip(fields, row, strict=True)))

    def event_documents(self) -> Iterator[str]:
        """The signed text of every Event in log order: what replay reads, without the typed
        columns ``events()`` would also build."""
        self._check_open()
        for (text,) in self._stream("SELECT document FROM log_events ORDER BY position", []):
            yield text

    def entries(self, after_position: int = 0) -> Iterator[LogEntry]:
        """Every Event after ``after_position`` with its position and chain value."""
        self._check_open()
        query = (
            f"SELECT position, chain, {EVENT_SELECT} FROM log_events "
            "WHERE position > ? ORDER BY position"
        )
        fields = EVENT_FIELDS
        for position, chain, *rest in self._stream(query, [after_position]):
            event = EventRecord(**dict(zip(fields, rest, strict=True)))
            yield LogEntry(position=position, chain=chain, event=event)

    def event_count(self) -> int:
        """How many Events the log holds (kept in memory; no query)."""
        self._check_open()
        return self._head[0]

    def last_sequence(self, group_id: str) -> int:
        """The Group's highest sequence, 0 when it has no Events (kept in memory)."""
        self._check_open()
        return self._last_sequence(group_id)

    def chain_head(self) -> tuple[int, bytes]:
        """``(last position, its chain value)`` (kept in memory)."""
        self._check_open()
        return self._head

    def receipt(self, actor_id: str, action_id: str) -> ReceiptRecord | None:
        """The receipt of ``(actor_id, action_id)``, if any (a primary-key lookup)."""
        with self._log_cursor() as cur:
            rows = cur.execute(
                f"SELECT {RECEIPT_SELECT} FROM log_receipts WHERE actor_id = ? AND action_id = ?",
                [actor_id, action_id],
            ).fetchall()
        return _receipt(rows[0]) if rows else None

    def receipts(self, after_position: int = 0) -> Iterator[ReceiptRecord]:
        """Every receipt in commit order (those after ``after_position`` when given)."""
        self._check_open()
        query = f"SELECT {RECEIPT_SELECT} FROM log_receipts WHERE position > ? ORDER BY position"
        for row in self._stream(query, [after_position]):
            yield _receipt(row)

    def rejections(self) -> list[RejectionRecord]:
        """Every rejection in commit order."""
        with self._log_cursor() as cur:
            rows = cur.execute(
                f"SELECT {REJECTION_SELECT} FROM log_rejections ORDER BY position"
            ).fetchall()
        fields = REJECTION_FIELDS
        return [RejectionRecord(**dict(zip(fields, row, strict=True))) for row in rows]

    def projection_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of a projection table, sorted by key."""
        spec = PROJECTION_BY_NAME.get(table)
        if spec is None:
            raise ValueError(f"{table!r} is not a declared projection table")
        columns = ", ".join(quote(name) for name in spec.column_names)
        order = ", ".join(quote(name) for name in spec.key)
        with self.cursor() as cur:
            rows = cur.execute(
                f"SELECT {columns} FROM {quote(spec.name)} ORDER BY {order}"
            ).fetchall()
        return [dict(zip(spec.column_names, row, strict=True)) for row in rows]

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file (DuckDB checkpoints it). Idempotent."""
        with self._write_lock, self._cursor_lock:
            if self._closed:
                return
            try:
                if self._failed is None:
                    self._catch_up()  # a failure is raised, once the file is closed
                    if self._marked and not self.projections_behind:
                        self._behind_path.unlink(missing_ok=True)
                        self._marked = False
            finally:
                self._closed = True
                if self._writer is not None:
                    self._writer.close()
                self._con.close()

    def abandon(self) -> int:
        """Close the file without writing what is staged, as a crash of this process would
        leave it (the file keeps what was committed); return how many Commands (receipts and
        rejections) the dropped batches held. For crash trials (``campaign.runner``) and tests,
        never for ending a run."""
        with self._write_lock, self._cursor_lock:
            dropped = sum(len(s.batch.receipts) + len(s.batch.rejections) for s in self._staged)
            self._staged, self._staged_receipts, self._staged_commands = [], set(), 0
            if self._pending:  # dropped as a crash would: the marker stays for the next open
                self._pending, self._pending_rows = {}, 0
                self.projections_behind = True
        self.close()  # nothing staged: closing writes nothing of the queue
        return dropped

    def __enter__(self) -> DuckDBLogStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else f"{self._head[0]} events"
        return f"DuckDBLogStore({str(self.path)!r}, {state})"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosedError(f"{self.path} is closed")

    def _check_healthy(self) -> None:
        if self._failed is not None:
            raise LogStoreError(f"{self.path}: {self._failed}")

    def _last_sequence(self, group_id: str) -> int:
        return self._sequences.get(group_id, 0)


def _receipt(row: Sequence[Any]) -> ReceiptRecord:
    values = dict(zip(RECEIPT_FIELDS, row, strict=True))
    values["event_ids"] = tuple(values["event_ids"])
    return ReceiptRecord(**values)
