"""Artifact manifests, Evidence, Context Packages and Group snapshots (sections 7.4, 13).

Owns the shapes and typed values of ``artifact.schema.json`` (a signed manifest: content is
referenced by URI and hash, never inlined), ``evidence.schema.json`` (a signed check mapped to
acceptance criteria), ``context-package.schema.json`` (a signed summary with Event provenance)
and ``group-snapshot.schema.json`` (the signed archival snapshot with its policy log). It must
not fetch content, compute hashes or perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

from .common import (
    ACTOR,
    AGENT_ACTOR,
    CAPABILITY_REF,
    CLASSIFICATION,
    EXTENSIONS,
    ID,
    LOCAL_ID,
    MEDIA_TYPE,
    POSITIVE_INTEGER,
    SAFE_INTEGER,
    SHA256,
    SIGNATURE,
    TIMESTAMP,
    URI_STRING,
    Actor,
    CapabilityRef,
    Classification,
    Extensions,
    Signature,
    text,
)
from .shapes import Const, Enum, Shape
from .structures import FREE_OBJECT, AnyOf, Arr, Obj
from .wire import WireObject

__all__ = [
    "ARTIFACT",
    "CONTEXT_PACKAGE",
    "EVIDENCE",
    "GROUP_SNAPSHOT",
    "Artifact",
    "ArtifactProducer",
    "ContextDecision",
    "ContextPackage",
    "Evidence",
    "EvidenceResult",
    "EvidenceSubject",
    "EvidenceType",
    "GroupSnapshot",
    "ModelVersion",
    "PolicyLogEntry",
    "SourceEventRange",
    "SubjectType",
    "ToolVersion",
]


class EvidenceType(StrEnum):
    """What kind of check an Evidence record reports (section 13.2)."""

    ARTIFACT_INTEGRITY = "artifact_integrity"
    SCHEMA_VALIDATION = "schema_validation"
    DETERMINISTIC_TEST = "deterministic_test"
    BUSINESS_RULE = "business_rule"
    REVIEWER_ASSESSMENT = "reviewer_assessment"
    HUMAN_REVIEW = "human_review"
    POLICY_CHECK = "policy_check"
    FAILURE_REPORT = "failure_report"


class SubjectType(StrEnum):
    """What an Evidence record is about."""

    WORK_ITEM = "work_item"
    ARTIFACT = "artifact"
    MISSION = "mission"


class EvidenceResult(StrEnum):
    """Outcome of the check."""

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


# --------------------------------------------------------------------------- Artifact

PRODUCER: Final = Obj(
    {
        "agentId": ID,
        "agentCardVersion": POSITIVE_INTEGER,
        "capabilities": Arr(CAPABILITY_REF, min_items=1),
    }
)
TOOL_VERSION: Final = Obj({"name": text(1, 200), "version": text(1, 200)})
MODEL_VERSION: Final = Obj(
    {"provider": text(1, 200), "model": text(1, 200), "version": text(1, 200)}
)
ARTIFACT: Final = Obj(
    {
        "artifactId": ID,
        "contentHash": SHA256,
        "uri": URI_STRING,
        "sizeBytes": SAFE_INTEGER,
        "mediaType": MEDIA_TYPE,
        "schemaUri": URI_STRING,
        "producer": PRODUCER,
        "missionId": ID,
        "groupId": ID,
        "workItemId": ID,
        "sourceArtifactHashes": Arr(SHA256, unique=True),
        "toolVersions": Arr(TOOL_VERSION),
        "modelVersions": Arr(MODEL_VERSION),
        "classification": CLASSIFICATION,
        "createdAt": TIMESTAMP,
        "signature": SIGNATURE,
    },
    {"extensions": EXTENSIONS},
)

# --------------------------------------------------------------------------- Evidence

SUBJECT: Final = Obj(
    {
        "type": Enum.of(SubjectType),
        "id": AnyOf(ID, SHA256, expect="an identifier or a content hash 'sha256:<64 hex>'"),
    }
)
EVIDENCE: Final = Obj(
    {
        "evidenceId": ID,
        "missionId": ID,
        "groupId": ID,
        "workItemId": ID,
        "type": Enum.of(EvidenceType),
        "subject": SUBJECT,
        "criterionIds": Arr(LOCAL_ID, min_items=1, unique=True),
        "method": text(1, 4000),
        "result": Enum.of(EvidenceResult),
        "artifactHashes": Arr(SHA256, unique=True),
        "generatedBy": ACTOR,
        "createdAt": TIMESTAMP,
        "signature": SIGNATURE,
    },
    {
        "details": FREE_OBJECT,
        "toolVersion": text(None, 500),
        "modelVersion": text(None, 500),
    },
)

# --------------------------------------------------------------------------- Context Package

SOURCE_EVENT_RANGE: Final = Obj(
    {
        "fromSequence": POSITIVE_INTEGER,
        "toSequence": POSITIVE_INTEGER,
        "eventIds": Arr(ID, min_items=1, unique=True),
    }
)
DECISION: Final = Obj(
    {"description": text(1, 4000), "sourceEventIds": Arr(ID, min_items=1, unique=True)}
)
CONTEXT_PACKAGE: Final = Obj(
    {
        "contextPackageId": ID,
        "version": POSITIVE_INTEGER,
        "missionId": ID,
        "groupId": ID,
        "sourceEventRange": SOURCE_EVENT_RANGE,
        "artifactHashes": Arr(SHA256, unique=True),
        "summary": text(1, 50000),
        "decisions": Arr(DECISION),
        "constraints": Arr(text(1, 4000)),
        "unresolvedQuestions": Arr(text(1, 4000)),
        "generatedBy": AGENT_ACTOR,
        "generatedAt": TIMESTAMP,
        "signature": SIGNATURE,
    },
    {"previousContextPackageId": ID, "workItemId": ID, "extensions": EXTENSIONS},
)

# --------------------------------------------------------------------------- Group snapshot

POLICY_LOG_ENTRY: Final = Obj(
    {
        "entryId": ID,
        "decision": text(1, 4000),
        "actor": ACTOR,
        "occurredAt": TIMESTAMP,
        "details": FREE_OBJECT,
    }
)
SERVICE_ACTOR: Final = Obj({"type": Const("service"), "id": ID})
GROUP_SNAPSHOT: Final = Obj(
    {
        "snapshotId": ID,
        "groupId": ID,
        "throughSequence": POSITIVE_INTEGER,
        "eventIds": Arr(ID, min_items=1, unique=True),
        "stateHash": SHA256,
        "policyLog": Arr(POLICY_LOG_ENTRY, min_items=1),
        "createdBy": SERVICE_ACTOR,
        "createdAt": TIMESTAMP,
        "signature": SIGNATURE,
    }
)


# --------------------------------------------------------------------------- typed values


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactProducer(WireObject):
    """The Agent, card version and capabilities that produced an Artifact."""

    __shape__: ClassVar[Shape] = PRODUCER
    __what__: ClassVar[str] = "producer"

    agent_id: str
    agent_card_version: int
    capabilities: tuple[CapabilityRef, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolVersion(WireObject):
    """A tool and version used to produce an Artifact."""

    __shape__: ClassVar[Shape] = TOOL_VERSION
    __what__: ClassVar[str] = "tool version"

    name: str
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelVersion(WireObject):
    """A model (provider, name, version) used to produce an Artifact."""

    __shape__: ClassVar[Shape] = MODEL_VERSION
    __what__: ClassVar[str] = "model version"

    provider: str
    model: str
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact(WireObject):
    """A signed Artifact manifest: content by URI and hash, with provenance (section 13.1)."""

    __shape__: ClassVar[Shape] = ARTIFACT
    __what__: ClassVar[str] = "artifact"

    artifact_id: str
    content_hash: str
    uri: str
    size_bytes: int
    media_type: str
    schema_uri: str
    producer: ArtifactProducer
    mission_id: str
    group_id: str
    work_item_id: str
    source_artifact_hashes: tuple[str, ...]
    tool_versions: tuple[ToolVersion, ...]
    model_versions: tuple[ModelVersion, ...]
    classification: Classification
    created_at: str
    extensions: Extensions | None = None
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceSubject(WireObject):
    """What the Evidence is about: a WorkItem, an Artifact (by hash or ID) or a Mission."""

    __shape__: ClassVar[Shape] = SUBJECT
    __what__: ClassVar[str] = "subject"

    type: SubjectType
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence(WireObject):
    """A signed check result mapped to acceptance criteria (section 13.2)."""

    __shape__: ClassVar[Shape] = EVIDENCE
    __what__: ClassVar[str] = "evidence"

    evidence_id: str
    mission_id: str
    group_id: str
    work_item_id: str
    type: EvidenceType
    subject: EvidenceSubject
    criterion_ids: tuple[str, ...]
    method: str
    result: EvidenceResult
    details: dict[str, Any] | None = None
    artifact_hashes: tuple[str, ...]
    generated_by: Actor
    tool_version: str | None = None
    model_version: str | None = None
    created_at: str
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceEventRange(WireObject):
    """The Group Events a Context Package summarizes."""

    __shape__: ClassVar[Shape] = SOURCE_EVENT_RANGE
    __what__: ClassVar[str] = "source event range"

    from_sequence: int
    to_sequence: int
    event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextDecision(WireObject):
    """A decision recorded in a Context Package, with the Events it came from."""

    __shape__: ClassVar[Shape] = DECISION
    __what__: ClassVar[str] = "decision"

    description: str
    source_event_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextPackage(WireObject):
    """A signed, provenance-bearing summary handed to a joining member (section 13.3)."""

    __shape__: ClassVar[Shape] = CONTEXT_PACKAGE
    __what__: ClassVar[str] = "context-package"

    context_package_id: str
    version: int
    previous_context_package_id: str | None = None
    mission_id: str
    group_id: str
    work_item_id: str | None = None
    source_event_range: SourceEventRange
    artifact_hashes: tuple[str, ...]
    summary: str
    decisions: tuple[ContextDecision, ...]
    constraints: tuple[str, ...]
    unresolved_questions: tuple[str, ...]
    generated_by: Actor
    generated_at: str
    extensions: Extensions | None = None
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class PolicyLogEntry(WireObject):
    """One policy decision linked into a Group snapshot."""

    __shape__: ClassVar[Shape] = POLICY_LOG_ENTRY
    __what__: ClassVar[str] = "policy log entry"

    entry_id: str
    decision: str
    actor: Actor
    occurred_at: str
    details: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSnapshot(WireObject):
    """The signed snapshot that archives a Group (section 7.4)."""

    __shape__: ClassVar[Shape] = GROUP_SNAPSHOT
    __what__: ClassVar[str] = "group-snapshot"

    snapshot_id: str
    group_id: str
    through_sequence: int
    event_ids: tuple[str, ...]
    state_hash: str
    policy_log: tuple[PolicyLogEntry, ...]
    created_by: Actor
    created_at: str
    signature: Signature
