"""The typed values of Artifact manifests, Evidence, Context Packages and Group snapshots.

Holds :class:`Artifact` (with :class:`ArtifactProducer`, :class:`ToolVersion`,
:class:`ModelVersion`), :class:`Evidence` (with :class:`EvidenceSubject`), :class:`ContextPackage`
(with :class:`SourceEventRange`, :class:`ContextDecision`) and :class:`GroupSnapshot` (with
:class:`PolicyLogEntry`); their shapes and vocabularies live in ``documents.artifacts``. It must not
fetch content, compute hashes or perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..artifacts import (
    ARTIFACT,
    CONTEXT_PACKAGE,
    DECISION,
    EVIDENCE,
    GROUP_SNAPSHOT,
    MODEL_VERSION,
    POLICY_LOG_ENTRY,
    PRODUCER,
    SOURCE_EVENT_RANGE,
    SUBJECT,
    TOOL_VERSION,
    EvidenceResult,
    EvidenceType,
    SubjectType,
)
from ..common import Classification
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, CapabilityRef, Extensions, Signature

__all__ = [
    "Artifact",
    "ArtifactProducer",
    "ContextDecision",
    "ContextPackage",
    "Evidence",
    "EvidenceSubject",
    "GroupSnapshot",
    "ModelVersion",
    "PolicyLogEntry",
    "SourceEventRange",
    "ToolVersion",
]


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
