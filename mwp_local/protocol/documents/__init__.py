"""Protocol documents: strict structural validation and typed builders, in our own code.

Owns the public entry points: :func:`validate` and :func:`errors` check a JSON value against one
of the 21 document schemas by name (the schema file stem, e.g. ``"command"`` or
``"websocket-frame"``), and the typed builders (:class:`Command`, :class:`Event`,
:class:`WorkItem`, ...) turn wire JSON into frozen values and back. The 22 normative schemas
(``common`` holds only shared definitions) are transcribed by hand into shapes, one module per
area; no JSON Schema library is used and no schema file is read. Validation is structural only:
state machines, epochs, signatures and authorization are checked elsewhere. Nothing here
performs I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .agent import (
    AGENT_CARD,
    PRESENCE_RECORD,
    AgentCard,
    AgentStatus,
    CapabilityAvailability,
    CapabilityDescriptor,
    CapabilityStatus,
    Capacity,
    Endpoint,
    PresenceRecord,
    PresenceStatus,
)
from .artifacts import (
    ARTIFACT,
    CONTEXT_PACKAGE,
    EVIDENCE,
    GROUP_SNAPSHOT,
    Artifact,
    ArtifactProducer,
    ContextDecision,
    ContextPackage,
    Evidence,
    EvidenceResult,
    EvidenceSubject,
    EvidenceType,
    GroupSnapshot,
    ModelVersion,
    PolicyLogEntry,
    SourceEventRange,
    SubjectType,
    ToolVersion,
)
from .command import COMMAND, Command
from .common import (
    PROTOCOL_VERSION,
    AcceptanceCriterion,
    Actor,
    ActorType,
    Budget,
    CapabilityRef,
    Classification,
    EvidenceRequirement,
    Extension,
    PublicKey,
    ResourceGrant,
    Signature,
)
from .conversation import (
    CONVERSATION,
    MESSAGE,
    AccessMode,
    ArtifactRefContent,
    Conversation,
    ConversationAccess,
    ConversationState,
    ConversationType,
    DataRefContent,
    Message,
    MessageKind,
    TextContent,
)
from .event import EVENT, Cause, CauseType, Event
from .frame import (
    WEBSOCKET_FRAME,
    AckFrame,
    Acknowledgement,
    Attention,
    CommandFrame,
    ErrorFrame,
    EventFrame,
    Frame,
    FrameType,
    GroupSubscription,
    HelloClientInit,
    HelloClientResponse,
    HelloPhase,
    HelloServerAccept,
    HelloServerChallenge,
    PingFrame,
    SubscribeFrame,
    frame_from_json,
)
from .governance import (
    APPROVAL,
    ERROR,
    EXTENSION_PROFILE,
    FIRST_ADMISSION_RECORD,
    Approval,
    ApprovalDecision,
    ApprovalKind,
    DocumentKind,
    Error,
    ExtensionProfile,
    FirstAdmissionRecord,
)
from .kinds import CommandKind, EventKind
from .lease import LEASE, Lease, LeaseState, LeaseType
from .mission import (
    GROUP,
    MEMBERSHIP,
    MISSION,
    ApprovalPolicy,
    CoordinatorRef,
    DelegationGrant,
    Group,
    GroupState,
    Membership,
    MembershipRole,
    MembershipState,
    Mission,
    MissionParent,
    MissionState,
    PinnedProfile,
)
from .shapes import Problem, Shape
from .wire import WireObject, schema_error
from .work import (
    WORK_CONTRACT,
    WORK_ITEM,
    Backoff,
    CapacityStatus,
    DeclineReason,
    Deliverable,
    ExecutionApproval,
    OfferStatus,
    RetryPolicy,
    ScheduleEstimate,
    SelectionBasis,
    SideEffectRisk,
    Urgency,
    WorkContract,
    WorkItem,
    WorkItemState,
    WorkOffer,
    WorkOwner,
    WorkProgress,
    WorkSubmission,
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

#: The typed builder of each document schema (frames have one class per frame type: see
#: :func:`frame_from_json`).
DOCUMENT_CLASSES: Final[Mapping[str, type[WireObject]]] = {
    "command": Command,
    "event": Event,
    "agent-card": AgentCard,
    "presence-record": PresenceRecord,
    "mission": Mission,
    "group": Group,
    "membership": Membership,
    "conversation": Conversation,
    "message": Message,
    "work-contract": WorkContract,
    "work-item": WorkItem,
    "artifact": Artifact,
    "evidence": Evidence,
    "lease": Lease,
    "approval": Approval,
    "context-package": ContextPackage,
    "group-snapshot": GroupSnapshot,
    "extension-profile": ExtensionProfile,
    "first-admission-record": FirstAdmissionRecord,
    "error": Error,
}


def _shape(schema_name: str) -> Shape:
    try:
        return SCHEMAS[schema_name]
    except KeyError:
        known = ", ".join(SCHEMA_NAMES)
        raise ValueError(
            f"unknown document schema {schema_name!r}; expected one of {known}"
        ) from None


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


def document_from_json(schema_name: str, doc: Any) -> WireObject:
    """Validate ``doc`` against the named schema and build its typed value."""
    validate(schema_name, doc)
    if schema_name == "websocket-frame":
        frame: WireObject = frame_from_json(doc)
        return frame
    return DOCUMENT_CLASSES[schema_name].from_validated_json(doc)


__all__ = [
    "DOCUMENT_CLASSES",
    "PROTOCOL_VERSION",
    "SCHEMAS",
    "SCHEMA_NAMES",
    "AcceptanceCriterion",
    "AccessMode",
    "AckFrame",
    "Acknowledgement",
    "Actor",
    "ActorType",
    "AgentCard",
    "AgentStatus",
    "Approval",
    "ApprovalDecision",
    "ApprovalKind",
    "ApprovalPolicy",
    "Artifact",
    "ArtifactProducer",
    "ArtifactRefContent",
    "Attention",
    "Backoff",
    "Budget",
    "CapabilityAvailability",
    "CapabilityDescriptor",
    "CapabilityRef",
    "CapabilityStatus",
    "Capacity",
    "CapacityStatus",
    "Cause",
    "CauseType",
    "Classification",
    "Command",
    "CommandFrame",
    "CommandKind",
    "ContextDecision",
    "ContextPackage",
    "Conversation",
    "ConversationAccess",
    "ConversationState",
    "ConversationType",
    "CoordinatorRef",
    "DataRefContent",
    "DeclineReason",
    "DelegationGrant",
    "Deliverable",
    "DocumentKind",
    "Endpoint",
    "Error",
    "ErrorFrame",
    "Event",
    "EventFrame",
    "EventKind",
    "Evidence",
    "EvidenceRequirement",
    "EvidenceResult",
    "EvidenceSubject",
    "EvidenceType",
    "ExecutionApproval",
    "Extension",
    "ExtensionProfile",
    "FirstAdmissionRecord",
    "Frame",
    "FrameType",
    "Group",
    "GroupSnapshot",
    "GroupState",
    "GroupSubscription",
    "HelloClientInit",
    "HelloClientResponse",
    "HelloPhase",
    "HelloServerAccept",
    "HelloServerChallenge",
    "Lease",
    "LeaseState",
    "LeaseType",
    "Membership",
    "MembershipRole",
    "MembershipState",
    "Message",
    "MessageKind",
    "Mission",
    "MissionParent",
    "MissionState",
    "ModelVersion",
    "OfferStatus",
    "PingFrame",
    "PinnedProfile",
    "PolicyLogEntry",
    "PresenceRecord",
    "PresenceStatus",
    "Problem",
    "PublicKey",
    "ResourceGrant",
    "RetryPolicy",
    "ScheduleEstimate",
    "SelectionBasis",
    "SideEffectRisk",
    "Signature",
    "SourceEventRange",
    "SubjectType",
    "SubscribeFrame",
    "TextContent",
    "ToolVersion",
    "Urgency",
    "WireObject",
    "WorkContract",
    "WorkItem",
    "WorkItemState",
    "WorkOffer",
    "WorkOwner",
    "WorkProgress",
    "WorkSubmission",
    "document_from_json",
    "errors",
    "frame_from_json",
    "is_valid",
    "validate",
]
