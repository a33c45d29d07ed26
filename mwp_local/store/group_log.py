"""The Group Authority bound to a log store: decide, then commit, then acknowledge.

``GroupLog`` is the one adapter between the pure ``Authority`` and a ``LogStore``: it decides each
Command and has the store commit its outcome (Events, receipt or rejection, projection rows) in
one transaction, grouping commits across threads, or, inside ``write_behind()``, stage it. What
is durable when, and what a failed commit rolls back: ``docs/durability.md``.

Opening a GroupLog rebuilds the Authority's state by replaying the log through ``evolve`` (which
re-checks the state tables), so the log is the only truth: from a state snapshot bound to the
log's position and chain value plus the Events after it when one fits (``state_snapshot``;
``close`` writes it), else from the whole log. Replay trusts the log's signatures
unless asked to verify them (``verify-log`` always does; ``replay(..., verify_signatures=True)``
and ``rebuild_projections(verify_signatures=True)`` do it on request; the rebuild takes the
faster ``verified_replay`` and falls back to the plain verified replay for any failure; without
verification it decodes the texts this store wrote with ``trusted_replay``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..authority import Accepted, Authority, AuthorityConfig, AuthorityState, Rejected
from ..authority.evolve import evolve
from ..authority.organization import Organization
from ..authority.pipeline import Outcome
from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord
from ..authority.tokens import AuthorizationService, CapabilityToken
from ..protocol.ed25519 import derive_seed
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for, verify_parsed
from ..protocol.tables import PROTOCOL_TABLES, StateTables
from ..protocol.timestamps import Timestamp
from . import state_snapshot
from .base import LogStore, LogStoreError
from .log_import import Admitted, admit_lines
from .projection_rows import projection_rows
from .records import Batch, ProjectionDelta
from .trusted_replay import trusted_documents
from .verified_replay import replay_verified

T = TypeVar("T")


def delta_from_rows(rows: dict[str, list[Any]]) -> ProjectionDelta:
    """Turn ``AuthorityState.projection_rows`` output into a store delta."""
    upserts: dict[str, list[dict[str, Any]]] = {}
    deletes: dict[str, list[tuple[Any, ...]]] = {}
    for table, items in rows.items():
        for item in items:
            if isinstance(item, tuple):
                deletes.setdefault(table, []).append(item[1])
            else:
                upserts.setdefault(table, []).append(item)
    return ProjectionDelta(
        upserts={t: tuple(r) for t, r in upserts.items()},
        deletes={t: tuple(k) for t, k in deletes.items()},
    )


def _documents(store: LogStore) -> Iterator[str]:
    """The signed text of every Event in log order (only that column, where the store can)."""
    texts = getattr(store, "event_documents", None)
    if callable(texts):
        yield from texts()
        return
    for record in store.events():
        yield record.document


def replay(
    org: Organization,
    store: LogStore,
    *,
    verify_signatures: bool = False,
    tables: StateTables = PROTOCOL_TABLES,
) -> AuthorityState:
    """A fresh state folded from every Event in the log, in log order, following ``tables``.

    With ``verify_signatures`` every Event's signature is first checked (the six stages of §6.4)
    against the Registry as it stands at that point of the log; the first failure raises its
    ``ProtocolError``.
    """
    documents = (parse_strict(text) for text in _documents(store))
    return fold(
        org, documents, store.receipts(), verify_signatures=verify_signatures, tables=tables
    )


def fold(
    org: Organization,
    documents: Iterable[dict[str, Any]],
    receipts: Iterable[ReceiptRecord],
    *,
    verify_signatures: bool = False,
    tables: StateTables = PROTOCOL_TABLES,
) -> AuthorityState:
    """A fresh state folded from parsed Event documents in log order, then the receipts (what
    ``replay`` does once it has read the log; a caller that parsed the log already uses this);
    ``tables`` is the rule set the fold follows and audits the log against."""
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    profile = profile_for("event")
    for document in documents:
        if verify_signatures:
            verify_parsed(profile, document, state.registry)
        evolve(state, document, tables)
    for receipt in receipts:
        state.receipts[(receipt.actor_id, receipt.action_id)] = receipt
    state.take_touched()
    return state


@dataclass(slots=True)
class _Group:
    """Outcomes decided since the last group commit began, committed together."""

    outcomes: list[Outcome] = field(default_factory=list)
    done: bool = False
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class Submitted:
    """What the caller gets back for one Command: the outcome, acknowledged after commit."""

    outcome: Outcome

    @property
    def ok(self) -> bool:
        """Whether the Command was accepted."""
        return isinstance(self.outcome, Accepted)


class GroupLog:
    """An Authority whose every decision is committed to ``store`` before it is acknowledged."""

    def __init__(
        self,
        org: Organization,
        store: LogStore,
        config: AuthorityConfig | None = None,
        tables: StateTables = PROTOCOL_TABLES,
        *,
        snapshot: bool = True,
    ) -> None:
        self.org = org
        self.store = store
        self._tables = tables
        # From the state snapshot beside the log plus its tail when it fits this log and this
        # code (``state_snapshot``), else the plain full replay; ``snapshot=False`` always
        # replays (import judges the log itself).
        loaded = state_snapshot.load(org, store, tables) if snapshot else None
        #: Why the snapshot was not used to open the log (None when it was).
        self.snapshot_reason = "not asked for" if loaded is None else loaded.reason
        state = None if loaded is None else loaded.state
        self.authority = Authority(
            state=state if state is not None else replay(org, store, tables=tables),
            identity=org.identity(),
            key_pair=org.authority.key_pair,
            config=config or AuthorityConfig(),
            tables=tables,
        )
        if getattr(store, "projections_behind", False) and not getattr(store, "read_only", False):
            # A writer crashed with projection rows not yet written (the store's marker):
            # render every table again from the state just replayed.
            self._replace_projections(self.authority.state)
        #: The decide lock (the Authority's in-memory state) ...
        self._lock = threading.Lock()
        #: ... and the commit lock: one group commit at a time (see ``_make_durable``).
        self._commit_lock = threading.Lock()
        self._open: _Group | None = None
        self._write_behind = 0
        #: Whether ``write_behind`` may defer durability (``campaign.acks`` turns it off).
        self.allow_write_behind = True
        self.authorization = AuthorizationService(derive_seed(org.seed, "authorization-service"))

    def close(self) -> None:
        """Write what is staged, then a new state snapshot when one is due
        (``state_snapshot``: a cache, so failing to write it does not fail the close, it is
        kept in ``snapshot_reason``), then close the store."""
        try:
            if state_snapshot.due(self.store):
                self.flush()
                with self._commit_lock, self._lock:
                    state_snapshot.write(self.store, self.state, self._tables)
        except (OSError, ValueError, TypeError, LogStoreError) as exc:  # closed twice, too
            self.snapshot_reason = f"the snapshot was not written: {exc}"
        finally:
            self.store.close()

    @property
    def state(self) -> AuthorityState:
        """The Authority's current state (read it, never change it)."""
        return self.authority.state

    @contextmanager
    def write_behind(self) -> Iterator[None]:
        """Inside the block, acknowledge outcomes before they are durable (``docs/durability.md``);
        on leaving it, write everything staged. Nests. A no-op when ``allow_write_behind`` is
        False (someone promised durability at acknowledgement)."""
        if not self.allow_write_behind:
            yield
            return
        self._write_behind += 1
        try:
            yield
        finally:
            self._write_behind -= 1
            if not self._write_behind:
                self.flush()

    def flush(self) -> None:
        """Write every staged outcome to the log file now."""
        self.store.flush()

    def _commit(self, batch: Batch) -> None:
        if self._write_behind:
            self.store.stage(batch)
        else:
            self.store.commit(batch)

    def submit(self, data: bytes | str, now: Timestamp) -> Outcome:
        """Decide one Command and return its outcome once it is durable (inside
        ``write_behind``, once it is staged)."""
        return self.submit_many([data], now)[0]

    def submit_many(self, commands: Sequence[bytes | str], now: Timestamp) -> list[Outcome]:
        """Decide each Command in order and return the outcomes once they are durable. If the
        commit fails, nothing of it was accepted (the state is rolled back) and this raises."""
        with self._lock:
            group = self._join()
            outcomes = [self.authority.handle(data, now) for data in commands]
            group.outcomes.extend(outcomes)
        self._make_durable(group)
        return outcomes

    def tick(self, now: Timestamp) -> list[Accepted]:
        """Let timers fire (lease expiry) and commit their Events; returns what was appended."""
        with self._lock:
            group = self._join()
            outcomes = self.authority.expire(now)
            group.outcomes.extend(outcomes)
        self._make_durable(group)
        return outcomes

    def _join(self) -> _Group:
        """The open group the next decision belongs to (caller holds the decide lock)."""
        self.authority.state.extend_batch()  # every decision until its commit can be undone
        if self._open is None:
            self._open = _Group()
        return self._open

    def _make_durable(self, group: _Group) -> None:
        """Return once ``group`` is committed; raise if its commit failed.

        One thread at a time commits, sealing the open group under the decide lock with the
        projection rows of exactly its decisions; whoever finds their group already committed
        returns at once. On failure the failed group and the one decided on top of it are
        refused (``docs/durability.md``).
        """
        with self._commit_lock:
            if group.error is not None:
                raise group.error
            if group.done:
                return
            state = self.authority.state
            with self._lock:
                assert group is self._open, "a group is sealed only by its own commit"
                self._open = None
                batch = self._batch(group.outcomes)
                decided = state.undo_mark()
            try:
                if (
                    batch.events
                    or batch.receipts
                    or batch.rejections
                    or not batch.projections.is_empty()
                ):
                    self._commit(batch)
            except BaseException as exc:
                with self._lock:
                    state.rollback_batch()
                    state.take_touched()
                    later, self._open = self._open, None
                group.error = exc
                if later is not None:
                    later.error = LogStoreError(
                        f"refused: an earlier group commit failed ({exc}) and this Command "
                        "was decided on top of it"
                    )
                raise
            with self._lock:
                state.forget_undo(decided)
            group.done = True

    def _batch(self, outcomes: Sequence[Outcome]) -> Batch:
        events: list[EventRecord] = []
        receipts: list[ReceiptRecord] = []
        rejections: list[RejectionRecord] = []
        for outcome in outcomes:
            if isinstance(outcome, Rejected):
                rejections.append(outcome.record)
            elif not outcome.duplicate:
                events.extend(outcome.events)
                if outcome.receipt is not None:
                    receipts.append(outcome.receipt)
        touched = self.authority.state.take_touched()
        return Batch(
            events=tuple(events),
            receipts=tuple(receipts),
            rejections=tuple(rejections),
            projections=delta_from_rows(projection_rows(self.authority.state, touched)),
        )

    def import_events(self, documents: Sequence[bytes | str]) -> Admitted:
        """Ingest signed Events from elsewhere, one per line, with every check the live
        Authority applies to an Event it appends (``log_import``: duplicates, the Event's
        signature and trusted acceptance, its kind and critical extensions, its sequence, then
        ``Authority.admit``), then commit them all in one transaction; return how many were
        appended (a leading copy of the log's own Events is skipped, see ``log_import``). Any
        failure raises ``ImportRefused`` and changes nothing: not the log, not the projections,
        not the Authority's state."""

        with self._commit_lock, self._lock:
            if self._open is not None:
                raise RuntimeError("import_events needs an idle log (Commands are in flight)")
            state = self.authority.state
            held = [(record.event_id, record.document) for record in self.store.events()]
            state.begin_batch()
            try:
                admitted = admit_lines(self.authority, held, documents)
                touched = state.take_touched()
                if admitted.records:
                    self.store.commit(
                        Batch(
                            events=admitted.records,
                            projections=delta_from_rows(projection_rows(state, touched)),
                        )
                    )
            except BaseException:
                state.rollback_batch()
                state.take_touched()
                raise
            state.commit_batch()
            return admitted

    def read(self, reader: Callable[[AuthorityState], T]) -> T:
        """``reader(state)`` under the decide lock: a consistent read of the Authority's state
        while other threads submit (threads mode)."""
        with self._lock:
            return reader(self.state)

    def capability_token(
        self, agent_id: str, lease_id: str, now: Timestamp, operations: list[str] | None = None
    ) -> CapabilityToken:
        """A capability token for the holder of a live Execution Lease (never logged)."""
        with self._lock:
            return self.authorization.issue(
                self.state,
                agent_id=agent_id,
                lease_id=lease_id,
                now_us=now.epoch_micros,
                operations=operations,
            )

    def check_token(self, token: CapabilityToken, operation: str, now: Timestamp) -> None:
        """Raise unless ``token`` currently permits ``operation``."""
        with self._lock:
            self.authorization.check(
                self.state, token, now_us=now.epoch_micros, operation=operation
            )

    def rebuild_projections(self, *, verify_signatures: bool = False) -> None:
        """Drop every projection row and write them again from a replay of the log (verifying
        every Event's signature first when asked; see ``replay``). Without verification the
        log's texts are decoded as this store's own canonical text (``trusted_replay`` says
        what that no longer checks)."""
        with self._lock:
            if verify_signatures:  # the fast path, or None and the plain path says what failed
                state = replay_verified(self.org, self.store, _documents(self.store))
                if state is None:
                    state = replay(self.org, self.store, verify_signatures=True)
            else:  # the texts this store wrote, decoded without the strict parser
                texts = trusted_documents(_documents(self.store))
                state = fold(self.org, texts, self.store.receipts())
            self._replace_projections(state)

    def _replace_projections(self, state: AuthorityState) -> None:
        rows = projection_rows(state)
        self.store.replace_projections(
            {t: [r for r in items if not isinstance(r, tuple)] for t, items in rows.items()}
        )
