"""Protocol documents: strict structural validation and typed builders, in our own code.

Owns the public entry points: :func:`validate` and :func:`errors` check a JSON value against one
of the 21 document schemas by name (the schema file stem, e.g. ``"command"`` or
``"websocket-frame"``), and the typed builders (:class:`Command`, :class:`Event`,
:class:`WorkItem`, ...) turn wire JSON into frozen values and back. The 22 normative schemas
(``common`` holds only shared definitions) are transcribed by hand into shapes, one module per
area; no JSON Schema library is used and no schema file is read. Validation is structural only:
state machines, epochs, signatures and authorization are checked elsewhere. Nothing here
performs I/O.

The shapes, string enumerations and functions are imported with this package. The typed
builders live in :mod:`.values` (one module per schema module) and are imported only when one of
their names is first read from this package (``__getattr__``, PEP 562), because building some
seventy dataclasses is a noticeable part of start-up and the runtime path only validates.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

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
from .wire import WireObject, schema_error
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

if TYPE_CHECKING:
    from .values.agent import (
        AgentCard,
        CapabilityAvailability,
        CapabilityDescriptor,
        Capacity,
        Endpoint,
        PresenceRecord,
    )
    from .values.artifacts import (
        Artifact,
        ArtifactProducer,
        ContextDecision,
        ContextPackage,
        Evidence,
        EvidenceSubject,
        GroupSnapshot,
        ModelVersion,
        PolicyLogEntry,
        SourceEventRange,
        ToolVersion,
    )
    from .values.command import Command
    from .values.common import (
        AcceptanceCriterion,
        Actor,
        Budget,
        CapabilityRef,
        Extension,
        PublicKey,
        ResourceGrant,
        Signature,
    )
    from .values.conversation import (
        ArtifactRefContent,
        Conversation,
        ConversationAccess,
        DataRefContent,
        Message,
        TextContent,
    )
    from .values.event import Cause, Event
    from .values.frame import (
        AckFrame,
        Acknowledgement,
        Attention,
        CommandFrame,
        ErrorFrame,
        EventFrame,
        Frame,
        GroupSubscription,
        HelloClientInit,
        HelloClientResponse,
        HelloServerAccept,
        HelloServerChallenge,
        PingFrame,
        SubscribeFrame,
        frame_from_json,
    )
    from .values.governance import Approval, Error, ExtensionProfile, FirstAdmissionRecord
    from .values.lease import Lease
    from .values.mission import (
        ApprovalPolicy,
        CoordinatorRef,
        DelegationGrant,
        Group,
        Membership,
        Mission,
        MissionParent,
        PinnedProfile,
    )
    from .values.work import (
        Deliverable,
        RetryPolicy,
        ScheduleEstimate,
        SelectionBasis,
        WorkContract,
        WorkItem,
        WorkOffer,
        WorkOwner,
        WorkProgress,
        WorkSubmission,
    )

    #: The typed builder of each document schema (frames have one class per frame type: see
    #: :func:`frame_from_json`).
    DOCUMENT_CLASSES: Mapping[str, type[WireObject]]

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

#: The module of :mod:`.values` that defines each typed name this package exports lazily.
_VALUES: Final[Mapping[str, str]] = {
    "AcceptanceCriterion": "common",
    "AckFrame": "frame",
    "Acknowledgement": "frame",
    "Actor": "common",
    "AgentCard": "agent",
    "Approval": "governance",
    "ApprovalPolicy": "mission",
    "Artifact": "artifacts",
    "ArtifactProducer": "artifacts",
    "ArtifactRefContent": "conversation",
    "Attention": "frame",
    "Budget": "common",
    "CapabilityAvailability": "agent",
    "CapabilityDescriptor": "agent",
    "CapabilityRef": "common",
    "Capacity": "agent",
    "Cause": "event",
    "Command": "command",
    "CommandFrame": "frame",
    "ContextDecision": "artifacts",
    "ContextPackage": "artifacts",
    "Conversation": "conversation",
    "ConversationAccess": "conversation",
    "CoordinatorRef": "mission",
    "DataRefContent": "conversation",
    "DelegationGrant": "mission",
    "Deliverable": "work",
    "Endpoint": "agent",
    "Error": "governance",
    "ErrorFrame": "frame",
    "Event": "event",
    "EventFrame": "frame",
    "Evidence": "artifacts",
    "EvidenceSubject": "artifacts",
    "Extension": "common",
    "ExtensionProfile": "governance",
    "FirstAdmissionRecord": "governance",
    "Frame": "frame",
    "Group": "mission",
    "GroupSnapshot": "artifacts",
    "GroupSubscription": "frame",
    "HelloClientInit": "frame",
    "HelloClientResponse": "frame",
    "HelloServerAccept": "frame",
    "HelloServerChallenge": "frame",
    "Lease": "lease",
    "Membership": "mission",
    "Message": "conversation",
    "Mission": "mission",
    "MissionParent": "mission",
    "ModelVersion": "artifacts",
    "PingFrame": "frame",
    "PinnedProfile": "mission",
    "PolicyLogEntry": "artifacts",
    "PresenceRecord": "agent",
    "PublicKey": "common",
    "ResourceGrant": "common",
    "RetryPolicy": "work",
    "ScheduleEstimate": "work",
    "SelectionBasis": "work",
    "Signature": "common",
    "SourceEventRange": "artifacts",
    "SubscribeFrame": "frame",
    "TextContent": "conversation",
    "ToolVersion": "artifacts",
    "WorkContract": "work",
    "WorkItem": "work",
    "WorkOffer": "work",
    "WorkOwner": "work",
    "WorkProgress": "work",
    "WorkSubmission": "work",
    "frame_from_json": "frame",
}

#: The class name of the typed builder of each document schema, in the order of
#: ``DOCUMENT_CLASSES`` (frames have one class per frame type: see :func:`frame_from_json`).
_DOCUMENT_CLASS_NAMES: Final[Mapping[str, str]] = {
    "command": "Command",
    "event": "Event",
    "agent-card": "AgentCard",
    "presence-record": "PresenceRecord",
    "mission": "Mission",
    "group": "Group",
    "membership": "Membership",
    "conversation": "Conversation",
    "message": "Message",
    "work-contract": "WorkContract",
    "work-item": "WorkItem",
    "artifact": "Artifact",
    "evidence": "Evidence",
    "lease": "Lease",
    "approval": "Approval",
    "context-package": "ContextPackage",
    "group-snapshot": "GroupSnapshot",
    "extension-profile": "ExtensionProfile",
    "first-admission-record": "FirstAdmissionRecord",
    "error": "Error",
}


def _typed(name: str) -> Any:
    """The typed value ``name``, importing its module of :mod:`.values` on first use."""
    try:
        return globals()[name]
    except KeyError:
        pass
    value = getattr(importlib.import_module(f".values.{_VALUES[name]}", __name__), name)
    globals()[name] = value  # later reads skip __getattr__
    return value


if not TYPE_CHECKING:  # type checkers see the imports above, and no catch-all for typos

    def __getattr__(name: str) -> Any:
        """The typed builders and ``DOCUMENT_CLASSES``, imported on first access (PEP 562)."""
        if name in _VALUES:
            return _typed(name)
        if name == "DOCUMENT_CLASSES":
            classes = {schema: _typed(cls) for schema, cls in _DOCUMENT_CLASS_NAMES.items()}
            globals()[name] = classes
            return classes
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """Every name of the package, the typed builders included before they are imported."""
    return sorted({*globals(), *_VALUES, "DOCUMENT_CLASSES"})


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
        from .values.frame import frame_from_json

        frame: WireObject = frame_from_json(doc)
        return frame
    cls: type[WireObject] = _typed(_DOCUMENT_CLASS_NAMES[schema_name])
    return cls.from_validated_json(doc)


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
