"""The typed values of ``work-contract.schema.json`` and ``work-item.schema.json``.

Holds :class:`WorkContract` (with :class:`Deliverable`, :class:`RetryPolicy`) and :class:`WorkItem`
(with :class:`WorkOffer`, :class:`WorkOwner`, :class:`SelectionBasis`, :class:`ScheduleEstimate`,
:class:`WorkProgress`, :class:`WorkSubmission`); their shapes and vocabularies live in
``documents.work``. It must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..shapes import Shape
from ..wire import WireObject
from ..work import (
    DELIVERABLE,
    OFFER,
    OWNER,
    PROGRESS,
    RETRY_POLICY,
    SCHEDULE_ESTIMATE,
    SELECTION_BASIS,
    SUBMISSION,
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
from .common import AcceptanceCriterion, Actor, Budget, CapabilityRef, Extensions, ResourceGrant

__all__ = [
    "Deliverable",
    "RetryPolicy",
    "ScheduleEstimate",
    "SelectionBasis",
    "WorkContract",
    "WorkItem",
    "WorkOffer",
    "WorkOwner",
    "WorkProgress",
    "WorkSubmission",
]


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
