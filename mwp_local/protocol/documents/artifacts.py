"""Artifact manifests, Evidence, Context Packages and Group snapshots (sections 7.4, 13).

Owns the shapes and vocabularies of ``artifact.schema.json`` (a signed manifest: content is
referenced by URI and hash, never inlined), ``evidence.schema.json`` (a signed check mapped to
acceptance criteria), ``context-package.schema.json`` (a signed summary with Event provenance)
and ``group-snapshot.schema.json`` (the signed archival snapshot with its policy log). It must
not fetch content, compute hashes or perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

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
    text,
)
from .shapes import Const, Enum
from .structures import FREE_OBJECT, AnyOf, Arr, Obj

__all__ = [
    "ARTIFACT",
    "CONTEXT_PACKAGE",
    "EVIDENCE",
    "GROUP_SNAPSHOT",
    "EvidenceResult",
    "EvidenceType",
    "SubjectType",
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
