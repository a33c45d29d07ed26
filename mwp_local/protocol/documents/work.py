"""``work-contract.schema.json`` and ``work-item.schema.json`` (section 10).

Owns the shapes and typed values of the required Work Contract (goal, deliverables, acceptance
criteria, inputs, resources, capabilities, deadline, urgency, retry policy, budget, risk and
execution approval) and of a WorkItem (state, offers, owner, selection basis, schedule estimate,
progress, submission). The WorkItem *state vocabulary* lives here; the transition table of
section 10.2 does not. It must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

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
    AcceptanceCriterion,
    Actor,
    Budget,
    CapabilityRef,
    Extensions,
    ResourceGrant,
    text,
)
from .shapes import Bool, Enum, Num, Shape, Str
from .structures import FREE_OBJECT, Arr, Has, If, Obj, Where
from .wire import WireObject

__all__ = [
    "WORK_CONTRACT",
    "WORK_ITEM",
    "Backoff",
    "CapacityStatus",
    "DeclineReason",
    "Deliverable",
    "ExecutionApproval",
    "OfferStatus",
    "RetryPolicy",
    "ScheduleEstimate",
    "SelectionBasis",
    "SideEffectRisk",
    "Urgency",
    "WorkContract",
    "WorkItem",
    "WorkItemState",
    "WorkOffer",
    "WorkOwner",
    "WorkProgress",
    "WorkSubmission",
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
    """WorkItem states (section 10.2)."""

    OPEN = "open"
    OFFERED = "offered"
    QUEUED = "queued"
    ACTIVE = "active"
    BLOCKED = "blocked"
    SUBMITTED = "submitted"
    VERIFIED = "verified"
    FAILED = "failed"
    CANCELLED = "cancelled"


class OfferStatus(StrEnum):
    """Status of one offer of a WorkItem to an Agent."""

    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    WITHDRAWN = "withdrawn"
    EXPIRED = "expired"
    LOST_RACE = "lost_race"


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
        "status": Enum.of(OfferStatus),
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
        "state": Enum.of(WorkItemState),
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


# --------------------------------------------------------------------------- typed values


@dataclass(frozen=True, slots=True, kw_only=True)
class Deliverable(WireObject):
    """A required deliverable: identifier, description, media type and schema."""

    __shape__: ClassVar[Shape] = DELIVERABLE
    __what__: ClassVar[str] = "deliverable"

    deliverable_id: str
    description: str
    media_type: str
    schema: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy(WireObject):
    """How often, how late, and for which failures a WorkItem is retried."""

    __shape__: ClassVar[Shape] = RETRY_POLICY
    __what__: ClassVar[str] = "retry policy"

    max_attempts: int
    backoff: Backoff
    max_delay: str
    retryable_failures: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkContract(WireObject):
    """The required Work Contract of a WorkItem (section 10.1)."""

    __shape__: ClassVar[Shape] = WORK_CONTRACT
    __what__: ClassVar[str] = "work-contract"

    contract_version: int
    goal: str
    required_deliverables: tuple[Deliverable, ...]
    acceptance_criteria: tuple[AcceptanceCriterion, ...]
    input_artifacts: tuple[str, ...]
    dependency_work_item_ids: tuple[str, ...]
    allowed_resources: tuple[ResourceGrant, ...]
    required_capabilities: tuple[CapabilityRef, ...]
    deadline: str
    requested_urgency: Urgency
    business_impact: str
    retry_policy: RetryPolicy
    budget: Budget
    side_effect_risk: SideEffectRisk
    execution_approval: ExecutionApproval
    constraints: dict[str, Any] | None = None
    extensions: Extensions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkOffer(WireObject):
    """An offer of the WorkItem to one Agent, and its outcome."""

    __shape__: ClassVar[Shape] = OFFER
    __what__: ClassVar[str] = "offer"

    offer_id: str
    agent_id: str
    agent_card_version: int
    expires_at: str
    status: OfferStatus
    decline_reason: DeclineReason | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkOwner(WireObject):
    """The owning Agent, its pinned capabilities, Ownership Epoch and ownership lease."""

    __shape__: ClassVar[Shape] = OWNER
    __what__: ClassVar[str] = "owner"

    agent_id: str
    agent_card_version: int
    capability_pins: tuple[CapabilityRef, ...]
    ownership_epoch: int
    ownership_lease_id: str
    accepted_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionBasis(WireObject):
    """Why the owner was selected (section 10.3)."""

    __shape__: ClassVar[Shape] = SELECTION_BASIS
    __what__: ClassVar[str] = "selection basis"

    required_capabilities: tuple[CapabilityRef, ...]
    verified_matches: tuple[CapabilityRef, ...]
    authorization_eligible: bool
    availability_estimate: str
    expected_cost: int | float
    reliability_evidence: tuple[str, ...]
    policy_rules_applied: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleEstimate(WireObject):
    """The disclosed schedule estimate (section 11.2)."""

    __shape__: ClassVar[Shape] = SCHEDULE_ESTIMATE
    __what__: ClassVar[str] = "schedule estimate"

    estimated_start: str
    estimated_completion: str
    confidence: int | float
    capacity_status: CapacityStatus
    last_calculated_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkProgress(WireObject):
    """The latest progress report (section 11.4)."""

    __shape__: ClassVar[Shape] = PROGRESS
    __what__: ClassVar[str] = "progress"

    current_phase: str
    completed_milestones: tuple[str, ...]
    next_checkpoint: str
    blockers: tuple[str, ...]
    updated_completion_estimate: str
    evidence_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkSubmission(WireObject):
    """The submitted result: Artifacts and Evidence."""

    __shape__: ClassVar[Shape] = SUBMISSION
    __what__: ClassVar[str] = "submission"

    artifact_hashes: tuple[str, ...]
    evidence_ids: tuple[str, ...]
    submitted_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkItem(WireObject):
    """A unit of work under a Work Contract (section 10)."""

    __shape__: ClassVar[Shape] = WORK_ITEM
    __what__: ClassVar[str] = "work-item"

    work_item_id: str
    mission_id: str
    group_id: str
    conversation_id: str
    revision: int
    state: WorkItemState
    exclusive: bool
    contract: WorkContract
    offers: tuple[WorkOffer, ...] | None = None
    owner: WorkOwner | None = None
    selection_basis: SelectionBasis | None = None
    schedule_estimate: ScheduleEstimate | None = None
    progress: WorkProgress | None = None
    submission: WorkSubmission | None = None
    created_by: Actor
    authorized_by: Actor | None = None
    created_at: str
    updated_at: str | None = None
    extensions: Extensions | None = None
