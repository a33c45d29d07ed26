"""Protocol errors: one exception type carrying a section-19 code.

Owns the closed set of section-19 error codes, whether each is safe to retry by default, and the
conversion to an Error document (``error.schema.json``). Every rejection in the sandbox is a
``ProtocolError``: it names the code, says in plain words what was wrong, and carries structured
details. It must not perform I/O or look at clocks: the caller supplies ``occurredAt``.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """The core error codes of section 19; each member's value is its wire spelling."""

    UNSUPPORTED_VERSION = "UNSUPPORTED_VERSION"
    AUTH_REQUIRED = "AUTH_REQUIRED"
    AUTH_INVALID_SIGNATURE = "AUTH_INVALID_SIGNATURE"
    AUTH_STALE_SESSION = "AUTH_STALE_SESSION"
    AUTH_STALE_COORDINATOR = "AUTH_STALE_COORDINATOR"
    AUTH_FORBIDDEN = "AUTH_FORBIDDEN"
    GROUP_NOT_FOUND = "GROUP_NOT_FOUND"
    MEMBERSHIP_REQUIRED = "MEMBERSHIP_REQUIRED"
    MEMBERSHIP_STALE = "MEMBERSHIP_STALE"
    SCHEMA_VALIDATION_FAILED = "SCHEMA_VALIDATION_FAILED"
    INVALID_COMMAND = "INVALID_COMMAND"
    INVALID_STATE_TRANSITION = "INVALID_STATE_TRANSITION"
    REVISION_CONFLICT = "REVISION_CONFLICT"
    ACTION_ID_COLLISION = "ACTION_ID_COLLISION"
    UNKNOWN_CRITICAL_EXTENSION = "UNKNOWN_CRITICAL_EXTENSION"
    WORK_CONTRACT_INCOMPLETE = "WORK_CONTRACT_INCOMPLETE"
    WORK_OFFER_EXPIRED = "WORK_OFFER_EXPIRED"
    WORK_ALREADY_OWNED = "WORK_ALREADY_OWNED"
    WORK_LEASE_EXPIRED = "WORK_LEASE_EXPIRED"
    WORK_STALE_OWNERSHIP = "WORK_STALE_OWNERSHIP"
    APPROVAL_REQUIRED = "APPROVAL_REQUIRED"
    BUDGET_EXCEEDED = "BUDGET_EXCEEDED"
    RATE_LIMITED = "RATE_LIMITED"
    BACKPRESSURE = "BACKPRESSURE"
    CURSOR_TOO_OLD = "CURSOR_TOO_OLD"
    PROTOCOL_VIOLATION = "PROTOCOL_VIOLATION"
    INTERNAL_ERROR = "INTERNAL_ERROR"


#: What each code means, in the words of section 19 (used when no explanation is given).
MEANING: Mapping[ErrorCode, str] = {
    ErrorCode.UNSUPPORTED_VERSION: "No compatible protocol version",
    ErrorCode.AUTH_REQUIRED: "Authentication is absent",
    ErrorCode.AUTH_INVALID_SIGNATURE: (
        "Signed-document signature, key validity, admission proof, or freshness check failed"
    ),
    ErrorCode.AUTH_STALE_SESSION: "Session Epoch is fenced",
    ErrorCode.AUTH_STALE_COORDINATOR: "Coordinator Epoch is fenced",
    ErrorCode.AUTH_FORBIDDEN: "Actor lacks permission or policy eligibility",
    ErrorCode.GROUP_NOT_FOUND: "Group is absent or intentionally undisclosed",
    ErrorCode.MEMBERSHIP_REQUIRED: "No applicable Membership",
    ErrorCode.MEMBERSHIP_STALE: "Membership Epoch is fenced",
    ErrorCode.SCHEMA_VALIDATION_FAILED: "Object does not conform to its schema",
    ErrorCode.INVALID_COMMAND: "Command is well-formed but semantically invalid",
    ErrorCode.INVALID_STATE_TRANSITION: "Aggregate state forbids the transition",
    ErrorCode.REVISION_CONFLICT: "Expected revision does not match",
    ErrorCode.ACTION_ID_COLLISION: "Stable Action ID was reused with different content",
    ErrorCode.UNKNOWN_CRITICAL_EXTENSION: "Required extension cannot be interpreted",
    ErrorCode.WORK_CONTRACT_INCOMPLETE: "Required Work Contract information is missing",
    ErrorCode.WORK_OFFER_EXPIRED: "Offer is no longer valid",
    ErrorCode.WORK_ALREADY_OWNED: "Another candidate won exclusive ownership",
    ErrorCode.WORK_LEASE_EXPIRED: "Required lease is no longer valid",
    ErrorCode.WORK_STALE_OWNERSHIP: "Ownership Epoch is fenced",
    ErrorCode.APPROVAL_REQUIRED: "Policy gate has not been satisfied",
    ErrorCode.BUDGET_EXCEEDED: "A hard Mission or WorkItem budget is exhausted",
    ErrorCode.RATE_LIMITED: "Policy rate or recursion threshold was reached",
    ErrorCode.BACKPRESSURE: "Receiver cannot currently accept more traffic",
    ErrorCode.CURSOR_TOO_OLD: "Online replay no longer contains the requested position",
    ErrorCode.PROTOCOL_VIOLATION: "Peer violated framing or a core invariant",
    ErrorCode.INTERNAL_ERROR: "Authority failed without accepting the transition",
}

#: Codes where resending (after waiting, or with the same content) can succeed by itself.
#: Everything else needs the sender to change something first (section 19).
RETRYABLE_BY_DEFAULT: frozenset[ErrorCode] = frozenset(
    {
        ErrorCode.RATE_LIMITED,
        ErrorCode.BACKPRESSURE,
        ErrorCode.INTERNAL_ERROR,
    }
)


class ProtocolError(Exception):
    """A rejection with a section-19 code.

    ``explanation`` is written for a learner ("the Command cites lease X but the current Execution
    Lease of this WorkItem is Y"); ``details`` holds the structured facts behind it; ``rule``
    names the specification rule that refused it (for example ``"§11.3 lease fencing"``).
    ``stage`` and ``reason`` keep the protected diagnostic of signed-document verification
    (section 6.4): they are for audit and never appear in the wire Error document.
    """

    def __init__(
        self,
        code: ErrorCode,
        explanation: str | None = None,
        *,
        retryable: bool | None = None,
        details: Mapping[str, Any] | None = None,
        rule: str | None = None,
        stage: str | None = None,
        reason: str | None = None,
    ) -> None:
        self.code = ErrorCode(code)
        self.explanation = explanation or MEANING[self.code]
        self.retryable = self.code in RETRYABLE_BY_DEFAULT if retryable is None else bool(retryable)
        self.details: dict[str, Any] = dict(details or {})
        self.rule = rule
        self.stage = stage
        self.reason = reason
        super().__init__(f"{self.code.value}: {self.explanation}")

    def wire_message(self) -> str:
        """The message that may go on the wire.

        Signature and admission failures must not reveal which check failed (section 6.4), so
        they carry only the generic meaning of their code; everything else carries the
        explanation.
        """
        if self.code is ErrorCode.AUTH_INVALID_SIGNATURE:
            return MEANING[self.code]
        return self.explanation[:2000]

    def to_document(
        self,
        occurred_at: str,
        *,
        related_action_id: str | None = None,
        group_id: str | None = None,
        expected_revision: int | None = None,
        current_revision: int | None = None,
    ) -> dict[str, Any]:
        """Build the wire Error document (``error.schema.json``)."""
        doc: dict[str, Any] = {
            "code": self.code.value,
            "message": self.wire_message(),
            "retryable": self.retryable,
            "occurredAt": occurred_at,
        }
        if related_action_id is not None:
            doc["relatedActionId"] = related_action_id
        if group_id is not None:
            doc["groupId"] = group_id
        if expected_revision is not None:
            doc["expectedRevision"] = expected_revision
        if current_revision is not None:
            doc["currentRevision"] = current_revision
        if self.details and self.code is not ErrorCode.AUTH_INVALID_SIGNATURE:
            doc["details"] = dict(self.details)
        return doc

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value!r}, {self.explanation!r})"
