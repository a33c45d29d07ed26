"""What the Group Authority's decisions leave in the log: the records of accepted Events, receipts
and rejections.

The Authority produces these immutable records; the storage adapters (DuckDB, in-memory) persist
them as they are. Data definitions only: no SQL, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class EventRecord:
    """One accepted, signed Event and the typed columns queried often.

    ``document`` is the exact signed Event as RFC 8785 canonical JSON text; every other field is
    derived from it (kept typed so that SQL never has to parse JSON for common questions).
    Organization-scoped Events (Agent Card registration, Session opening) have no ``group_id``,
    ``sequence`` or ``aggregate_revision``.
    """

    event_id: str
    group_id: str | None
    sequence: int | None
    aggregate_revision: int | None
    kind: str
    occurred_at: str
    occurred_at_us: int
    actor_type: str
    actor_id: str
    cause_type: str
    cause_id: str
    correlation_id: str
    work_item_id: str | None
    mission_id: str | None
    payload_json: str
    document: str
    #: For Events that move a WorkItem between states of §10.2: the states before and after.
    from_state: str | None = None
    to_state: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiptRecord:
    """The receipt of an accepted Command: what it was and which Events it produced.

    Idempotent retries are answered from this record (same ``(actor_id, action_id)`` and the same
    ``command_hash``) without appending anything.
    """

    actor_id: str
    action_id: str
    command_hash: str
    command_document: str
    kind: str
    group_id: str | None
    accepted_at: str
    event_ids: tuple[str, ...]
    receipt_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectionRecord:
    """A refused Command: kept apart from the Event log so a learner can ask why it was refused.

    ``command_text`` is the Command exactly as received (decoded leniently for display when it
    is not valid UTF-8); ``code`` is the section-19 code.
    """

    received_at: str
    actor_id: str | None
    action_id: str | None
    kind: str | None
    group_id: str | None
    work_item_id: str | None
    code: str
    explanation: str
    rule: str | None
    stage: str | None
    reason: str | None
    details_json: str
    command_text: str
