"""The Authority's aggregates: immutable records folded from accepted Events.

Each record holds what the Authority needs to decide the next Command about one aggregate
(Agent, Group, Mission, Membership, WorkItem, offer, lease, budget ledger). Records are frozen;
``evolve`` replaces them. Where the specification defines a wire document for the aggregate
(WorkItem, Lease, Mission, Membership), the record can render it with ``to_document``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from ..protocol.documents.mission import GroupState
from ..protocol.tables import LeaseState, MissionState, OfferStatus, WorkItemState

#: The wire value of an active lease (plain text: leases are compared on every timer check).
_ACTIVE = LeaseState.ACTIVE.value

BUDGET_DIMENSIONS: tuple[str, ...] = (
    "financial",
    "modelTokens",
    "toolCalls",
    "computeSeconds",
    "wallClockSeconds",
    "externalSideEffects",
)
#: Budget document member that limits each dimension (common.schema.json ``budget``).
LIMIT_MEMBER: dict[str, str] = {
    "financial": "financialLimit",
    "modelTokens": "modelTokenLimit",
    "toolCalls": "toolCallLimit",
    "computeSeconds": "computeSecondsLimit",
    "wallClockSeconds": "wallClockSecondsLimit",
    "externalSideEffects": "externalSideEffectLimit",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentRecord:
    """A registered Agent: its Agent Card version, capabilities, concurrency and Session Epoch."""

    agent_id: str
    card_version: int
    capabilities: tuple[tuple[str, str], ...]
    max_concurrency: int
    session_epoch: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupRecord:
    """A Mission Group: its Mission, last sequence, Conversation and lifecycle state.

    ``event_ids_digest`` chains the IDs of the Group's Events in sequence order
    (``event_ids_digest``): what a Group Snapshot's ``eventIds`` must reproduce to archive it.
    """

    group_id: str
    mission_id: str
    main_conversation_id: str
    last_sequence: int = 0
    state: str = GroupState.ACTIVE.value
    event_ids_digest: str = ""
    archived_at: str | None = None
    archive_snapshot_id: str | None = None


def event_ids_digest(previous: str, event_id: str) -> str:
    """The digest of a Group's Event IDs after ``event_id``: SHA-256 over the previous digest
    and the ID, so the digest after sequence n names the IDs of sequences 1..n in order."""
    return hashlib.sha256(f"{previous}\x1f{event_id}".encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionRecord:
    """A Mission's authoritative state (§7)."""

    mission_id: str
    group_id: str
    state: MissionState
    revision: int
    objective: str
    owner_type: str
    owner_id: str
    coordinator_agent_id: str | None
    coordinator_epoch: int
    coordinator_lease_id: str | None
    deadline: str
    document: dict[str, Any]
    parent_mission_id: str | None = None
    parent_work_item_id: str | None = None
    depth: int = 0
    child_failure_policy: str = "block"
    submitted_revision: int | None = None
    submitted_artifacts: tuple[str, ...] = ()
    follow_up_to: str | None = None
    last_sequence: int = 0
    #: The MissionOwner's signed Approval, once the Mission is approved (§7.3).
    approval: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MembershipRecord:
    """A Membership of one Principal in one Group, with its epoch (§8)."""

    group_id: str
    principal_type: str
    principal_id: str
    role: str
    epoch: int
    state: str
    document: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class OfferRecord:
    """A durable offer of a WorkItem to one Agent (§10.3)."""

    offer_id: str
    work_item_id: str
    group_id: str
    agent_id: str
    agent_card_version: int
    contract_version: int
    expires_at: str
    expires_us: int
    status: str = OfferStatus.PENDING.value
    decline_reason: str | None = None

    def to_document(self) -> dict[str, Any]:
        """The ``offers[]`` entry of a WorkItem document."""
        doc: dict[str, Any] = {
            "offerId": self.offer_id,
            "agentId": self.agent_id,
            "agentCardVersion": self.agent_card_version,
            "expiresAt": self.expires_at,
            "status": self.status,
        }
        if self.decline_reason is not None:
            doc["declineReason"] = self.decline_reason
        return doc


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseRecord:
    """A fenced lease (§7.2, §11.3): Coordinator, ownership, execution or blocked.

    ``expires_us`` and ``start_by_us`` are the instants of ``expires_at`` / ``start_by`` in
    microseconds, for timer checks.
    """

    lease_id: str
    lease_type: str
    mission_id: str
    group_id: str
    holder_agent_id: str
    session_epoch: int
    issued_at: str
    starts_at: str
    expires_at: str
    expires_us: int
    work_item_id: str | None = None
    ownership_epoch: int | None = None
    coordinator_epoch: int | None = None
    start_by: str | None = None
    start_by_us: int | None = None
    state: str = _ACTIVE
    renewal_count: int = 0
    last_renewed_at: str | None = None
    closed_at: str | None = None
    closure_reason: str | None = None

    @property
    def is_active(self) -> bool:
        """Whether the lease has not been closed (it may still have run out of time)."""
        return self.state == _ACTIVE

    def live_at(self, now_us: int) -> bool:
        """Active and not past its expiry at ``now_us``."""
        return self.state == _ACTIVE and now_us < self.expires_us

    def to_document(self) -> dict[str, Any]:
        """The wire Lease document (``lease.schema.json``)."""
        doc: dict[str, Any] = {
            "leaseId": self.lease_id,
            "leaseType": self.lease_type,
            "missionId": self.mission_id,
            "groupId": self.group_id,
            "holderAgentId": self.holder_agent_id,
            "sessionEpoch": self.session_epoch,
            "issuedAt": self.issued_at,
            "startsAt": self.starts_at,
            "expiresAt": self.expires_at,
            "state": self.state,
            "renewalCount": self.renewal_count,
        }
        optional = {
            "workItemId": self.work_item_id,
            "ownershipEpoch": self.ownership_epoch,
            "coordinatorEpoch": self.coordinator_epoch,
            "startBy": self.start_by,
            "lastRenewedAt": self.last_renewed_at,
            "closedAt": self.closed_at,
            "closureReason": self.closure_reason,
        }
        doc.update({k: v for k, v in optional.items() if v is not None})
        return doc


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetLedger:
    """Six-dimensional budget of one scope (a Mission or a WorkItem), §12.

    ``limits`` maps a dimension to its hard limit (absent: no limit of its own at this scope);
    ``used`` is consumption charged to this scope (including its descendants); ``allocated`` is
    what this scope has granted to its children (WorkItems or child Missions).
    """

    scope_type: str
    scope_id: str
    parent: tuple[str, str] | None
    currency: str | None
    limits: dict[str, float]
    used: dict[str, float] = field(default_factory=dict)
    allocated: dict[str, float] = field(default_factory=dict)

    def remaining(self, dimension: str) -> float | None:
        """What may still be consumed in ``dimension`` at this scope (None: unlimited here)."""
        limit = self.limits.get(dimension)
        if limit is None:
            return None
        return limit - self.used.get(dimension, 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkItemRecord:
    """A WorkItem's authoritative state (§10)."""

    work_item_id: str
    mission_id: str
    group_id: str
    conversation_id: str
    state: WorkItemState
    revision: int
    exclusive: bool
    contract: dict[str, Any]
    created_by: dict[str, str]
    created_at: str
    parent_work_item_id: str | None = None
    owner: dict[str, Any] | None = None
    ownership_epoch: int = 0
    ownership_lease_id: str | None = None
    execution_lease_id: str | None = None
    blocked_lease_id: str | None = None
    offer_ids: tuple[str, ...] = ()
    execution_approved: bool = False
    attempts: int = 0
    #: The Ownership Epoch of the current attempt: resuming after a checkpoint or a Session
    #: replacement continues an attempt; a new Ownership Epoch starts the next one (§11.4).
    attempt_epoch: int = 0
    #: Its ``work.failed`` Events and the time of the last: what the contract's retry policy
    #: (attempts, backoff) is checked against (``authority.retries``).
    failures: int = 0
    failed_at_us: int | None = None
    artifact_hashes: tuple[str, ...] = ()
    submitted_artifacts: tuple[str, ...] = ()
    submitted_evidence: tuple[dict[str, Any], ...] = ()
    child_mission_id: str | None = None
    selection_basis: dict[str, Any] | None = None
    schedule_estimate: dict[str, Any] | None = None
    progress: dict[str, Any] | None = None
    last_checkpoint: dict[str, Any] | None = None
    submission: dict[str, Any] | None = None
    authorized_by: dict[str, str] | None = None
    updated_at: str | None = None
    last_sequence: int = 0

    @property
    def contract_version(self) -> int:
        """The Work Contract's ``contractVersion``."""
        return int(self.contract["contractVersion"])

    @property
    def dependencies(self) -> tuple[str, ...]:
        """IDs of the WorkItems this one depends on."""
        return tuple(self.contract.get("dependencyWorkItemIds", ()))
