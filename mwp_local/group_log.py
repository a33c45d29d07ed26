"""The Group Authority bound to a log store: decide, then commit, then acknowledge.

``GroupLog`` is the one adapter between the pure ``Authority`` and a ``LogStore``. It commits
each outcome (Events, receipt, rejection, projection rows) in one store transaction, either one
Command per transaction (``submit``, durable before it returns) or many Commands per transaction
(``submit_many``, group commit: every outcome is acknowledged only after the shared commit). If a
commit fails, the in-memory state is rolled back to what the log holds. Opening a GroupLog
rebuilds the Authority's state by replaying the log through ``evolve`` (which re-checks the
state tables), so the log is the only truth. Replay trusts the log's signatures unless asked to
verify them (``verify-log`` always does; ``replay(..., verify_signatures=True)`` and
``rebuild_projections(verify_signatures=True)`` do it on request).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .authority import Accepted, Authority, AuthorityConfig, AuthorityState, Rejected
from .authority.evolve import evolve
from .authority.pipeline import Outcome
from .authority.tokens import AuthorizationService, CapabilityToken
from .organization import Organization
from .protocol.ed25519 import derive_seed
from .protocol.jsontext import parse_strict
from .protocol.signing import profile_for, verify_parsed
from .protocol.timestamps import Timestamp
from .store.base import LogStore
from .store.records import Batch, EventRecord, ProjectionDelta, ReceiptRecord, RejectionRecord


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
    org: Organization, store: LogStore, *, verify_signatures: bool = False
) -> AuthorityState:
    """A fresh state folded from every Event in the log, in log order.

    With ``verify_signatures`` every Event's signature is first checked (the six stages of §6.4)
    against the Registry as it stands at that point of the log; the first failure raises its
    ``ProtocolError``.
    """
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    profile = profile_for("event")
    for text in _documents(store):
        document = parse_strict(text)
        if verify_signatures:
            verify_parsed(profile, document, state.registry)
        evolve(state, document)
    for receipt in store.receipts():
        state.receipts[(receipt.actor_id, receipt.action_id)] = receipt
    state.take_touched()
    return state


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
        self, org: Organization, store: LogStore, config: AuthorityConfig | None = None
    ) -> None:
        self.org = org
        self.store = store
        self.authority = Authority(
            state=replay(org, store),
            identity=org.identity(),
            key_pair=org.authority.key_pair,
            config=config or AuthorityConfig(),
        )
        self._lock = threading.Lock()
        self.authorization = AuthorizationService(derive_seed(org.seed, "authorization-service"))

    @property
    def state(self) -> AuthorityState:
        """The Authority's current state (read it, never change it)."""
        return self.authority.state

    def submit(self, data: bytes | str, now: Timestamp) -> Outcome:
        """Decide one Command and commit it durably (one transaction) before returning."""
        return self.submit_many([data], now)[0]

    def submit_many(self, commands: Sequence[bytes | str], now: Timestamp) -> list[Outcome]:
        """Group commit: decide each Command in order, commit all outcomes in one transaction,
        and only then return (acknowledge) them. If the commit fails, nothing was accepted."""
        with self._lock:
            state = self.authority.state
            state.begin_batch()
            outcomes = [self.authority.handle(data, now) for data in commands]
            try:
                self.store.commit(self._batch(outcomes))
            except BaseException:
                state.rollback_batch()
                state.take_touched()
                raise
            state.commit_batch()
            return outcomes

    def tick(self, now: Timestamp) -> list[Accepted]:
        """Let timers fire (lease expiry) and commit their Events; returns what was appended."""
        with self._lock:
            state = self.authority.state
            state.begin_batch()
            outcomes = self.authority.expire(now)
            try:
                if outcomes:
                    self.store.commit(self._batch(outcomes))
            except BaseException:
                state.rollback_batch()
                state.take_touched()
                raise
            state.commit_batch()
            return outcomes

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
            projections=delta_from_rows(self.authority.state.projection_rows(touched)),
        )

    def import_events(self, documents: Sequence[bytes | str]) -> int:
        """Ingest signed Events from elsewhere: verify each signature against the Registry as it
        stands, require acceptance by a trusted Organization service, replay each through
        ``evolve`` (auditing it against the state tables), then commit them all in one
        transaction. Any failure rejects the whole import and changes nothing."""
        from .authority.pipeline import event_record
        from .protocol.signing import profile_for, verify_parsed

        trusted = self.authority.identity.control_services
        with self._lock:
            state = self.authority.state
            state.begin_batch()
            records = []
            try:
                for index, data in enumerate(documents, start=1):
                    doc = parse_strict(data)
                    verified = verify_parsed(profile_for("event"), doc, state.registry)
                    if verified.principal.id not in trusted:
                        raise ValueError(
                            f"line {index}: accepted by {verified.principal.id}, which this "
                            "Organization does not trust as a Group Authority"
                        )
                    wid = doc.get("workItemId")
                    before = state.work_items.get(wid) if wid else None
                    try:
                        evolve(state, doc)
                    except Exception as exc:
                        raise ValueError(
                            f"line {index}: the state tables refuse it: {exc}"
                        ) from exc
                    after = state.work_items.get(wid) if wid else None
                    moved = after is not None and (before is None or before.state != after.state)
                    records.append(
                        event_record(
                            doc,
                            str(before.state) if moved and before is not None else None,
                            str(after.state) if moved and after is not None else None,
                        )
                    )
                touched = state.take_touched()
                self.store.commit(
                    Batch(
                        events=tuple(records),
                        projections=delta_from_rows(state.projection_rows(touched)),
                    )
                )
            except BaseException:
                state.rollback_batch()
                state.take_touched()
                raise
            state.commit_batch()
            return len(records)

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
        every Event's signature first when asked; see ``replay``)."""
        with self._lock:
            state = replay(self.org, self.store, verify_signatures=verify_signatures)
            rows = state.projection_rows()
            self.store.replace_projections(
                {t: [r for r in items if not isinstance(r, tuple)] for t, items in rows.items()}
            )
