"""The typed values of the mission, group and membership schemas (sections 7, 8).

Holds :class:`Mission` (with :class:`CoordinatorRef`, :class:`ApprovalPolicy`,
:class:`MissionParent`, :class:`PinnedProfile`), :class:`Group` and :class:`Membership` (with
:class:`DelegationGrant`); their shapes and state vocabularies live in ``documents.mission``. It
must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..mission import (
    APPROVAL_POLICY,
    COORDINATOR_REF,
    DELEGATION_GRANT,
    GROUP,
    MEMBERSHIP,
    MISSION,
    MISSION_PARENT,
    PINNED_PROFILE,
    GroupState,
    MembershipRole,
    MembershipState,
    MissionState,
)
from ..shapes import Shape
from ..wire import WireObject
from .common import AcceptanceCriterion, Actor, Budget, CapabilityRef, Extensions

__all__ = [
    "ApprovalPolicy",
    "CoordinatorRef",
    "DelegationGrant",
    "Group",
    "Membership",
    "Mission",
    "MissionParent",
    "PinnedProfile",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorRef(WireObject):
    """The Mission's Coordinator: Agent, card version, Coordinator Epoch and lease."""

    __shape__: ClassVar[Shape] = COORDINATOR_REF
    __what__: ClassVar[str] = "coordinator"

    agent_id: str
    agent_card_version: int
    coordinator_epoch: int
    lease_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalPolicy(WireObject):
    """Which Approvals a Mission needs."""

    __shape__: ClassVar[Shape] = APPROVAL_POLICY
    __what__: ClassVar[str] = "approval policy"

    final_human_approval: bool
    high_risk_execution_approval: bool
    policy_version: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionParent(WireObject):
    """A child Mission's link to the parent Mission and WorkItem, and its depth."""

    __shape__: ClassVar[Shape] = MISSION_PARENT
    __what__: ClassVar[str] = "parent"

    mission_id: str
    work_item_id: str
    depth: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PinnedProfile(WireObject):
    """An Extension Profile pinned by major version for the Mission's lifetime."""

    __shape__: ClassVar[Shape] = PINNED_PROFILE
    __what__: ClassVar[str] = "pinned profile"

    profile_uri: str
    major_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Mission(WireObject):
    """A Mission: an objective with a definition of done, owned and coordinated (section 7)."""

    __shape__: ClassVar[Shape] = MISSION
    __what__: ClassVar[str] = "mission"

    mission_id: str
    group_id: str
    revision: int
    objective: str
    definition_of_done: tuple[AcceptanceCriterion, ...]
    mission_owner: Actor
    coordinator: CoordinatorRef
    state: MissionState
    budget: Budget
    deadline: str
    approval_policy: ApprovalPolicy
    parent: MissionParent | None = None
    follow_up_to_mission_id: str | None = None
    pinned_profiles: tuple[PinnedProfile, ...] | None = None
    created_at: str
    extensions: Extensions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Group(WireObject):
    """The Mission Group: the unit of ordering, membership and archival (section 7)."""

    __shape__: ClassVar[Shape] = GROUP
    __what__: ClassVar[str] = "group"

    group_id: str
    mission_id: str
    state: GroupState
    main_conversation_id: str
    created_at: str
    archived_at: str | None = None
    archive_snapshot_id: str | None = None
    extensions: Extensions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class DelegationGrant(WireObject):
    """Delegated work authority for one target WorkItem (section 9.1)."""

    __shape__: ClassVar[Shape] = DELEGATION_GRANT
    __what__: ClassVar[str] = "delegation grant"

    grant_id: str
    grantee_agent_id: str
    mission_id: str
    group_id: str
    target_work_item_id: str
    allowed_capabilities: tuple[CapabilityRef, ...]
    budget: Budget
    max_descendant_depth: int
    grantee_membership_epoch: int
    coordinator_epoch: int
    granted_by: Actor
    granted_at: str
    expires_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Membership(WireObject):
    """A member's role, state, epoch and scopes in one Group (section 8)."""

    __shape__: ClassVar[Shape] = MEMBERSHIP
    __what__: ClassVar[str] = "membership"

    membership_id: str
    mission_id: str
    group_id: str
    member: Actor
    role: MembershipRole
    state: MembershipState
    membership_epoch: int
    scopes: tuple[str, ...]
    delegation_grants: tuple[DelegationGrant, ...] | None = None
    visibility_start_sequence: int
    context_package_id: str | None = None
    provisional_expires_at: str | None = None
    granted_at: str
    activated_at: str | None = None
    ended_at: str | None = None
    extensions: Extensions | None = None
