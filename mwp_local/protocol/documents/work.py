"""``work-contract.schema.json`` and ``work-item.schema.json`` (section 10).

Owns the shapes and vocabularies of the required Work Contract (goal, deliverables, acceptance
criteria, inputs, resources, capabilities, deadline, urgency, retry policy, budget, risk and
execution approval) and of a WorkItem (state, offers, owner, selection basis, schedule estimate,
progress, submission). The WorkItem *state vocabulary* lives here; the transition table of
section 10.2 does not. It must not perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .common import (
    ACCEPTANCE_CRITERION,
    ACTOR,
    BUDGET,
    CAPABILITY_REF,
    DURATION,
    EXTENSIONS,
    ID,
    LOCAL_ID,
    MEDIA_TYPE,
    POSITIVE_INTEGER,
    RESOURCE_GRANT,
    SAFE_INTEGER,
    SHA256,
    TIMESTAMP,
    URI_STRING,
    text,
)
from .shapes import Bool, Enum, Num, Str
from .structures import FREE_OBJECT, Arr, Has, If, Obj, Where

__all__ = [
    "OFFER_WIRE_STATUSES",
    "WORK_CONTRACT",
    "WORK_ITEM",
    "WORK_ITEM_WIRE_STATES",
    "Backoff",
    "CapacityStatus",
    "DeclineReason",
    "ExecutionApproval",
    "OfferStatus",
    "SideEffectRisk",
    "Urgency",
    "WorkItemState",
]


class Urgency(StrEnum):
    """Requested urgency of a WorkItem."""

    ROUTINE = "routine"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


class Backoff(StrEnum):
    """Retry backoff strategy."""

    NONE = "none"
    FIXED = "fixed"
    EXPONENTIAL = "exponential"


class SideEffectRisk(StrEnum):
    """How far a WorkItem's side effects reach (section 12)."""

    NONE = "none"
    REVERSIBLE = "reversible"
    EXTERNAL = "external"
    HIGH_RISK = "high_risk"
    DESTRUCTIVE = "destructive"


class ExecutionApproval(StrEnum):
    """Whether execution needs an Approval first."""

    NOT_REQUIRED = "not_required"
    POLICY_REQUIRED = "policy_required"
    HUMAN_REQUIRED = "human_required"


class WorkItemState(StrEnum):
    """WorkItem states (section 10.2): the wire values of ``state``, and the two pre-states of
    the section-10.2 table (``NONE``: no WorkItem or proposal yet; ``OPEN_WORK_PROPOSAL``: an
    open Work Proposal), which no WorkItem document ever carries (``WORK_ITEM_WIRE_STATES``)."""

    NONE = "none"
    OPEN_WORK_PROPOSAL = "open_work_proposal"
    OPEN = "open"
    OFFERED = "offered"
    QUEUED = "queued"
    ACTIVE = "active"
    BLOCKED = "blocked"
    SUBMITTED = "submitted"
    VERIFIED = "verified"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The states a WorkItem document carries (every state but the table's two pre-states).
WORK_ITEM_WIRE_STATES: Final = tuple(
    s for s in WorkItemState if s not in (WorkItemState.NONE, WorkItemState.OPEN_WORK_PROPOSAL)
)


class OfferStatus(StrEnum):
    """Status of one offer of a WorkItem to an Agent; ``NONE`` is the offer table's pre-state
    (no offer yet), never a wire value (``OFFER_WIRE_STATUSES``)."""

    NONE = "none"
    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    LOST_RACE = "lost_race"


#: The statuses an offer entry carries.
OFFER_WIRE_STATUSES: Final = tuple(s for s in OfferStatus if s is not OfferStatus.NONE)


class DeclineReason(StrEnum):
    """Why an Agent declined an offer."""

    CAPACITY = "capacity"
    DEADLINE = "deadline"
    CAPABILITY = "capability"
    AUTHORIZATION = "authorization"
    DEPENDENCY = "dependency"
    BUDGET = "budget"
    OTHER = "other"


class CapacityStatus(StrEnum):
    """Scheduling disclosure: the capacity situation behind an estimate (section 11.2)."""

    AVAILABLE = "available"
    QUEUED = "queued"
    CONSTRAINED = "constrained"
    BLOCKED = "blocked"


# --------------------------------------------------------------------------- Work Contract

DELIVERABLE: Final = Obj(
    {
        "deliverableId": LOCAL_ID,
        "description": text(1, 4000),
        "mediaType": MEDIA_TYPE,
        "schema": URI_STRING,
    }
)
RETRY_POLICY: Final = Obj(
    {
        "maxAttempts": POSITIVE_INTEGER,
        "backoff": Enum.of(Backoff),
        "maxDelay": DURATION,
        "retryableFailures": Arr(
            Str(pattern="^[A-Z][A-Z0-9_]{1,127}$", hint="an upper-case failure code"),
            unique=True,
        ),
    }
)
WORK_CONTRACT: Final = Obj(
    {
        "contractVersion": POSITIVE_INTEGER,
        "goal": text(1, 10000),
        "requiredDeliverables": Arr(DELIVERABLE, min_items=1),
        "acceptanceCriteria": Arr(ACCEPTANCE_CRITERION, min_items=1),
        "inputArtifacts": Arr(SHA256, unique=True),
        "dependencyWorkItemIds": Arr(ID, unique=True),
        "allowedResources": Arr(RESOURCE_GRANT),
        "requiredCapabilities": Arr(CAPABILITY_REF, min_items=1),
        "deadline": TIMESTAMP,
        "requestedUrgency": Enum.of(Urgency),
        "businessImpact": text(1, 4000),
        "retryPolicy": RETRY_POLICY,
        "budget": BUDGET,
        "sideEffectRisk": Enum.of(SideEffectRisk),
        "executionApproval": Enum.of(ExecutionApproval),
    },
    {"constraints": FREE_OBJECT, "extensions": EXTENSIONS},
)

# --------------------------------------------------------------------------- WorkItem

OFFER: Final = Obj(
    {
        "offerId": ID,
        "agentId": ID,
        "agentCardVersion": POSITIVE_INTEGER,
        "expiresAt": TIMESTAMP,
        "status": Enum.of(OFFER_WIRE_STATUSES),
    },
    {"declineReason": Enum.of(DeclineReason)},
)
OWNER: Final = Obj(
    {
        "agentId": ID,
        "agentCardVersion": POSITIVE_INTEGER,
        "capabilityPins": Arr(CAPABILITY_REF, min_items=1),
        "ownershipEpoch": POSITIVE_INTEGER,
        "ownershipLeaseId": ID,
        "acceptedAt": TIMESTAMP,
    }
)
SELECTION_BASIS: Final = Obj(
    {
        "requiredCapabilities": Arr(CAPABILITY_REF, min_items=1),
        "verifiedMatches": Arr(CAPABILITY_REF, min_items=1),
        "authorizationEligible": Bool(),
        "availabilityEstimate": TIMESTAMP,
        "expectedCost": Num(minimum=0),
        "reliabilityEvidence": Arr(ID),
        "policyRulesApplied": Arr(text(1, 200), min_items=1),
    }
)
SCHEDULE_ESTIMATE: Final = Obj(
    {
        "estimatedStart": TIMESTAMP,
        "estimatedCompletion": TIMESTAMP,
        "confidence": Num(minimum=0, maximum=1),
        "capacityStatus": Enum.of(CapacityStatus),
        "lastCalculatedAt": TIMESTAMP,
    }
)
PROGRESS: Final = Obj(
    {
        "currentPhase": text(1, 500),
        "completedMilestones": Arr(text(1, 500)),
        "nextCheckpoint": text(1, 500),
        "blockers": Arr(text(1, 2000)),
        "updatedCompletionEstimate": TIMESTAMP,
        "evidenceIds": Arr(ID, unique=True),
    }
)
SUBMISSION: Final = Obj(
    {
        "artifactHashes": Arr(SHA256, min_items=1, unique=True),
        "evidenceIds": Arr(ID, min_items=1, unique=True),
        "submittedAt": TIMESTAMP,
    }
)
_OWNED_STATES: Final = (
    WorkItemState.QUEUED,
    WorkItemState.ACTIVE,
    WorkItemState.BLOCKED,
    WorkItemState.SUBMITTED,
    WorkItemState.VERIFIED,
)
WORK_ITEM: Final = Obj(
    {
        "workItemId": ID,
        "missionId": ID,
        "groupId": ID,
        "conversationId": ID,
        "revision": SAFE_INTEGER,
        "state": Enum.of(WORK_ITEM_WIRE_STATES),
        "exclusive": Bool(),
        "contract": WORK_CONTRACT,
        "createdBy": ACTOR,
        "createdAt": TIMESTAMP,
    },
    {
        "offers": Arr(OFFER),
        "owner": OWNER,
        "selectionBasis": SELECTION_BASIS,
        "scheduleEstimate": SCHEDULE_ESTIMATE,
        "progress": PROGRESS,
        "submission": SUBMISSION,
        "authorizedBy": ACTOR,
        "updatedAt": TIMESTAMP,
        "extensions": EXTENSIONS,
    },
    rules=[
        If(
            Has(state=Enum(*_OWNED_STATES)),
            then=Where(required=["owner", "selectionBasis"]),
            then_why="a WorkItem past first acceptance has an owner and a selection basis",
        ),
        If(
            Has(state=Enum(WorkItemState.SUBMITTED, WorkItemState.VERIFIED)),
            then=Where(required=["submission"]),
            then_why="a submitted or verified WorkItem carries its submission",
        ),
    ],
)
