"""Approvals, Extension Profiles, First-Admission Records and wire Errors (6.4, 12, 18, 19).

Owns the shapes and vocabularies of ``approval.schema.json`` (a signed decision bound to a
Mission revision and Artifacts; final Mission Approval is human), ``extension-profile.schema.json``
(a governed profile that can never override core invariants), ``first-admission-record.schema.json``
(durable admission metadata, unsigned by design) and ``error.schema.json`` (the wire form of a
section 19 error). It must not decide policy, verify signatures or perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .command import EXTENSION_KIND
from .common import (
    ACTOR,
    CAPABILITY_REF,
    HUMAN_ACTOR,
    ID,
    PROTOCOL_VERSION_SHAPE,
    SAFE_INTEGER,
    SEMVER,
    SHA256,
    SIGNATURE,
    TIMESTAMP,
    URI_STRING,
    text,
)
from .shapes import Bool, Const, Enum
from .structures import FREE_OBJECT, AllOf, Arr, Has, If, MinItems, Obj, Where

__all__ = [
    "APPROVAL",
    "ERROR",
    "EXTENSION_PROFILE",
    "FIRST_ADMISSION_RECORD",
    "WIRE_ERROR_CODES",
    "ApprovalDecision",
    "ApprovalKind",
    "DocumentKind",
]


class ApprovalKind(StrEnum):
    """What an Approval decides on."""

    MISSION_FINAL = "mission_final"
    CHILD_MISSION = "child_mission"
    WORK_EXECUTION = "work_execution"


class ApprovalDecision(StrEnum):
    """The decision recorded."""

    APPROVED = "approved"
    CHANGES_REQUESTED = "changes_requested"
    DENIED = "denied"
    REVOKED = "revoked"


class DocumentKind(StrEnum):
    """Signed Document kinds a First-Admission Record can admit (section 6.4)."""

    AGENT_CARD = "agent-card"
    APPROVAL = "approval"
    ARTIFACT = "artifact"
    COMMAND = "command"
    CONTEXT_PACKAGE = "context-package"
    EVENT = "event"
    EVIDENCE = "evidence"
    EXTENSION_PROFILE = "extension-profile"
    GROUP_SNAPSHOT = "group-snapshot"


# --------------------------------------------------------------------------- Approval

APPROVAL: Final = Obj(
    {
        "approvalId": ID,
        "kind": Enum.of(ApprovalKind),
        "decision": Enum.of(ApprovalDecision),
        "missionId": ID,
        "groupId": ID,
        "missionRevision": SAFE_INTEGER,
        "artifactHashes": Arr(SHA256, unique=True),
        "acceptancePolicyVersion": SEMVER,
        "approver": ACTOR,
        "comments": text(None, 10000),
        "conditions": Arr(text(1, 2000)),
        "occurredAt": TIMESTAMP,
        "signature": SIGNATURE,
    },
    {"workItemId": ID, "revokesApprovalId": ID},
    rules=[
        If(
            Has(
                kind=Enum(ApprovalKind.MISSION_FINAL, ApprovalKind.CHILD_MISSION),
                decision=Const(ApprovalDecision.APPROVED),
            ),
            then=Where({"artifactHashes": MinItems(1)}),
            then_why="approving a Mission result names the approved Artifacts",
        ),
        If(
            Has(kind=Const(ApprovalKind.MISSION_FINAL)),
            then=Where({"approver": HUMAN_ACTOR}),
            then_why="final Mission Approval is given by a human",
        ),
        If(
            Has(kind=Const(ApprovalKind.WORK_EXECUTION)),
            then=Where(required=["workItemId"]),
            then_why="an execution Approval names its WorkItem",
        ),
        If(
            Has(decision=Const(ApprovalDecision.REVOKED)),
            then=Where(required=["revokesApprovalId"]),
            then_why="a revocation names the Approval it revokes",
        ),
    ],
)

# --------------------------------------------------------------------------- Extension Profile

EXTENSION_PROFILE: Final = Obj(
    {
        "profileUri": ID,
        "name": text(1, 200),
        "version": SEMVER,
        "schemaUri": URI_STRING,
        "schemaHash": SHA256,
        "requiredCapabilities": Arr(CAPABILITY_REF),
        "critical": Bool(),
        "commandKinds": Arr(EXTENSION_KIND, unique=True),
        "eventKinds": Arr(EXTENSION_KIND, unique=True),
        "overridesCoreInvariants": Const(
            False, why="an Extension Profile can never override core invariants"
        ),
        "approvedBy": ACTOR,
        "approvedAt": TIMESTAMP,
        "signature": SIGNATURE,
    }
)

# --------------------------------------------------------------------------- First-Admission

FIRST_ADMISSION_RECORD: Final = Obj(
    {
        "protocolVersion": PROTOCOL_VERSION_SHAPE,
        "admissionRecordId": ID,
        "organizationId": ID,
        "documentKind": Enum.of(DocumentKind),
        "signingHash": SHA256,
        "keyId": ID,
        "principal": ACTOR,
        "trustedAcceptedAt": TIMESTAMP,
        "acceptedBy": AllOf(ACTOR, Where({"type": Const("service")})),
    }
)

# --------------------------------------------------------------------------- Error

#: The wire error codes of ``error.schema.json`` (section 19), transcribed in schema order.
WIRE_ERROR_CODES: Final = (
    "UNSUPPORTED_VERSION",
    "AUTH_REQUIRED",
    "AUTH_INVALID_SIGNATURE",
    "AUTH_STALE_SESSION",
    "AUTH_STALE_COORDINATOR",
    "AUTH_FORBIDDEN",
    "GROUP_NOT_FOUND",
    "MEMBERSHIP_REQUIRED",
    "MEMBERSHIP_STALE",
    "SCHEMA_VALIDATION_FAILED",
    "INVALID_COMMAND",
    "INVALID_STATE_TRANSITION",
    "REVISION_CONFLICT",
    "ACTION_ID_COLLISION",
    "UNKNOWN_CRITICAL_EXTENSION",
    "WORK_CONTRACT_INCOMPLETE",
    "WORK_OFFER_EXPIRED",
    "WORK_ALREADY_OWNED",
    "WORK_LEASE_EXPIRED",
    "WORK_STALE_OWNERSHIP",
    "APPROVAL_REQUIRED",
    "BUDGET_EXCEEDED",
    "RATE_LIMITED",
    "BACKPRESSURE",
    "CURSOR_TOO_OLD",
    "PROTOCOL_VIOLATION",
    "INTERNAL_ERROR",
)

ERROR: Final = Obj(
    {
        "code": Enum(*WIRE_ERROR_CODES, what="section 19 error codes"),
        "message": text(1, 2000),
        "retryable": Bool(),
        "occurredAt": TIMESTAMP,
    },
    {
        "fatal": Bool(),
        "relatedFrameId": ID,
        "relatedActionId": ID,
        "groupId": ID,
        "expectedRevision": SAFE_INTEGER,
        "currentRevision": SAFE_INTEGER,
        "retryAfterMs": SAFE_INTEGER,
        "snapshotArtifactHash": SHA256,
        "details": FREE_OBJECT,
    },
)
