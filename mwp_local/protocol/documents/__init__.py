"""Protocol documents: strict structural validation, in our own code.

Owns the public entry points: :func:`validate` and :func:`errors` check a JSON value against one
of the 21 document schemas by name (the schema file stem, e.g. ``"command"`` or
``"websocket-frame"``). The 22 normative schemas (``common`` holds only shared definitions) are
transcribed by hand into shapes, one module per area; no JSON Schema library is used and no
schema file is read. Validation is structural only: state machines, epochs, signatures and
authorization are checked elsewhere. It also owns :func:`validate_shape`, the single place a
shape failure becomes a ``ProtocolError(SCHEMA_VALIDATION_FAILED)``. Nothing here performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..errors import ErrorCode, ProtocolError
from .agent import AGENT_CARD, PRESENCE_RECORD, AgentStatus, CapabilityStatus, PresenceStatus
from .artifacts import (
    ARTIFACT,
    CONTEXT_PACKAGE,
    EVIDENCE,
    GROUP_SNAPSHOT,
    EvidenceResult,
    EvidenceType,
    SubjectType,
)
from .command import COMMAND
from .common import PROTOCOL_VERSION, ActorType, Classification, EvidenceRequirement
from .conversation import (
    CONVERSATION,
    MESSAGE,
    AccessMode,
    ConversationState,
    ConversationType,
    MessageKind,
)
from .event import EVENT, CauseType
from .frame import WEBSOCKET_FRAME, FrameType, HelloPhase
from .governance import (
    APPROVAL,
    ERROR,
    EXTENSION_PROFILE,
    FIRST_ADMISSION_RECORD,
    ApprovalDecision,
    ApprovalKind,
    DocumentKind,
)
from .kinds import CommandKind, EventKind
from .lease import LEASE, LeaseState, LeaseType
from .mission import (
    GROUP,
    MEMBERSHIP,
    MISSION,
    GroupState,
    MembershipRole,
    MembershipState,
    MissionState,
)
from .shapes import Problem, Shape
from .work import (
    WORK_CONTRACT,
    WORK_ITEM,
    Backoff,
    CapacityStatus,
    DeclineReason,
    ExecutionApproval,
    OfferStatus,
    SideEffectRisk,
    Urgency,
    WorkItemState,
)

#: Every document schema by name (the schema file stem), in the order of section 21.
SCHEMAS: Final[Mapping[str, Shape]] = {
    "websocket-frame": WEBSOCKET_FRAME,
    "command": COMMAND,
    "event": EVENT,
    "agent-card": AGENT_CARD,
    "presence-record": PRESENCE_RECORD,
    "mission": MISSION,
    "group": GROUP,
    "membership": MEMBERSHIP,
    "conversation": CONVERSATION,
    "message": MESSAGE,
    "work-contract": WORK_CONTRACT,
    "work-item": WORK_ITEM,
    "artifact": ARTIFACT,
    "evidence": EVIDENCE,
    "lease": LEASE,
    "approval": APPROVAL,
    "context-package": CONTEXT_PACKAGE,
    "group-snapshot": GROUP_SNAPSHOT,
    "extension-profile": EXTENSION_PROFILE,
    "first-admission-record": FIRST_ADMISSION_RECORD,
    "error": ERROR,
}

#: The 21 document schema names (``common`` defines no document).
SCHEMA_NAMES: Final[tuple[str, ...]] = tuple(SCHEMAS)


def _shape(schema_name: str) -> Shape:
    try:
        return SCHEMAS[schema_name]
    except KeyError:
        known = ", ".join(SCHEMA_NAMES)
        raise ValueError(
            f"unknown document schema {schema_name!r}; expected one of {known}"
        ) from None


def schema_error(what: str, found: list[Problem]) -> ProtocolError:
    """The ``SCHEMA_VALIDATION_FAILED`` error for ``found`` (non-empty) problems in ``what``."""
    first = found[0]
    more = f" (and {len(found) - 1} more problem{'s' if len(found) > 2 else ''})"
    explanation = f"The {what} does not conform to its schema: {first}"
    if len(found) > 1:
        explanation += more
    return ProtocolError(
        ErrorCode.SCHEMA_VALIDATION_FAILED,
        explanation,
        details={"schema": what, "path": first.where, "problems": [p.to_json() for p in found]},
        stage="schema",
    )


def validate_shape(shape: Shape, doc: object, what: str) -> None:
    """Raise ``SCHEMA_VALIDATION_FAILED`` naming every problem of ``doc`` against ``shape``."""
    found = shape.problems(doc)
    if found:
        raise schema_error(what, found)


def errors(schema_name: str, doc: Any) -> list[Problem]:
    """Every structural problem of ``doc`` against the named schema; empty when it conforms."""
    return _shape(schema_name).problems(doc)


def is_valid(schema_name: str, doc: Any) -> bool:
    """Whether ``doc`` conforms to the named schema."""
    return _shape(schema_name).accepts(doc)


def validate(schema_name: str, doc: Any) -> None:
    """Raise ``ProtocolError(SCHEMA_VALIDATION_FAILED)`` unless ``doc`` conforms.

    The error's ``details`` carry ``path`` (of the first problem) and ``problems`` (every
    problem as ``{"path", "message"}``); its ``stage`` is ``"schema"``.
    """
    found = errors(schema_name, doc)
    if found:
        raise schema_error(schema_name, found)


__all__ = [
    "AGENT_CARD",
    "APPROVAL",
    "ARTIFACT",
    "COMMAND",
    "CONTEXT_PACKAGE",
    "CONVERSATION",
    "ERROR",
    "EVENT",
    "EVIDENCE",
    "EXTENSION_PROFILE",
    "FIRST_ADMISSION_RECORD",
    "GROUP",
    "GROUP_SNAPSHOT",
    "LEASE",
    "MEMBERSHIP",
    "MESSAGE",
    "MISSION",
    "PRESENCE_RECORD",
    "PROTOCOL_VERSION",
    "SCHEMAS",
    "SCHEMA_NAMES",
    "WEBSOCKET_FRAME",
    "WORK_CONTRACT",
    "WORK_ITEM",
    "AccessMode",
    "ActorType",
    "AgentStatus",
    "ApprovalDecision",
    "ApprovalKind",
    "Backoff",
    "CapabilityStatus",
    "CapacityStatus",
    "CauseType",
    "Classification",
    "CommandKind",
    "ConversationState",
    "ConversationType",
    "DeclineReason",
    "DocumentKind",
    "EventKind",
    "EvidenceRequirement",
    "EvidenceResult",
    "EvidenceType",
    "ExecutionApproval",
    "FrameType",
    "GroupState",
    "HelloPhase",
    "LeaseState",
    "LeaseType",
    "MembershipRole",
    "MembershipState",
    "MessageKind",
    "MissionState",
    "OfferStatus",
    "PresenceStatus",
    "Problem",
    "Shape",
    "SideEffectRisk",
    "SubjectType",
    "Urgency",
    "WorkItemState",
    "errors",
    "is_valid",
    "schema_error",
    "validate",
    "validate_shape",
]
