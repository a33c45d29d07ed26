"""``mission.schema.json``, ``group.schema.json`` and ``membership.schema.json`` (sections 7, 8).

Owns the shapes of a Mission (objective, definition of done, owner, Coordinator lease reference,
state, budget, approval policy, parent link), its Group (active or archived with a signed snapshot),
and a Group Membership (role, state, epoch, scopes, delegation grants). The state *vocabularies*
live here; the lifecycle tables that move between them do not. It must not perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .common import (
    ACCEPTANCE_CRITERION,
    ACTOR,
    AGENT_ACTOR,
    BUDGET,
    CAPABILITY_REF,
    EXTENSIONS,
    HUMAN_ACTOR,
    ID,
    POSITIVE_INTEGER,
    SAFE_INTEGER,
    SEMVER,
    TIMESTAMP,
    text,
)
from .shapes import Bool, Const, Enum, Str
from .structures import AllOf, Arr, Forbids, Has, If, Not, Obj, Where

__all__ = [
    "GROUP",
    "MEMBERSHIP",
    "MEMBERSHIP_WIRE_STATES",
    "MISSION",
    "MISSION_WIRE_STATES",
    "GroupState",
    "MembershipRole",
    "MembershipState",
    "MissionState",
]


class MissionState(StrEnum):
    """Mission states (section 7): the wire values of ``state``, and ``NONE``, the pre-state of
    the section-7.1 table (no Mission yet), which no Mission document carries
    (``MISSION_WIRE_STATES``)."""

    NONE = "none"
    ACTIVE = "active"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: The states a Mission document carries.
MISSION_WIRE_STATES: Final = tuple(s for s in MissionState if s is not MissionState.NONE)


class GroupState(StrEnum):
    """A Group is active until archived with a signed snapshot (section 7.4)."""

    ACTIVE = "active"
    ARCHIVED = "archived"


class MembershipRole(StrEnum):
    """Roles a member holds in a Group (section 8)."""

    MISSION_OWNER = "mission_owner"
    COORDINATOR = "coordinator"
    WORKER = "worker"
    REVIEWER = "reviewer"
    OBSERVER = "observer"
    WORK_DELEGATE = "work_delegate"


class MembershipState(StrEnum):
    """Membership lifecycle: provisional (with a Context Package), active, ended; ``NONE`` is
    the membership table's pre-state (no Membership yet), never a wire value
    (``MEMBERSHIP_WIRE_STATES``)."""

    NONE = "none"
    PROVISIONAL = "provisional"
    ACTIVE = "active"
    ENDED = "ended"


#: The states a Membership document carries.
MEMBERSHIP_WIRE_STATES: Final = tuple(s for s in MembershipState if s is not MembershipState.NONE)


# --------------------------------------------------------------------------- Mission

COORDINATOR_REF: Final = Obj(
    {
        "agentId": ID,
        "agentCardVersion": POSITIVE_INTEGER,
        "coordinatorEpoch": POSITIVE_INTEGER,
        "leaseId": ID,
    }
)
APPROVAL_POLICY: Final = Obj(
    {"finalHumanApproval": Bool(), "highRiskExecutionApproval": Bool()},
    {"policyVersion": SEMVER},
)
MISSION_PARENT: Final = Obj({"missionId": ID, "workItemId": ID, "depth": POSITIVE_INTEGER})
PINNED_PROFILE: Final = Obj({"profileUri": ID, "majorVersion": SAFE_INTEGER})

MISSION: Final = Obj(
    {
        "missionId": ID,
        "groupId": ID,
        "revision": SAFE_INTEGER,
        "objective": text(1, 10000),
        "definitionOfDone": Arr(ACCEPTANCE_CRITERION, min_items=1),
        "missionOwner": ACTOR,
        "coordinator": COORDINATOR_REF,
        "state": Enum.of(MISSION_WIRE_STATES),
        "budget": BUDGET,
        "deadline": TIMESTAMP,
        "approvalPolicy": APPROVAL_POLICY,
        "createdAt": TIMESTAMP,
    },
    {
        "parent": MISSION_PARENT,
        "followUpToMissionId": ID,
        "pinnedProfiles": Arr(PINNED_PROFILE, unique=True),
        "extensions": EXTENSIONS,
    },
    rules=[
        If(
            Not(Where(required=["parent"]), message="has a parent"),
            then=Where(
                {
                    "missionOwner": HUMAN_ACTOR,
                    "approvalPolicy": Where({"finalHumanApproval": Const(True)}),
                }
            ),
            then_why="a root Mission is owned by a human and ends with final human Approval",
            otherwise=Where({"missionOwner": AGENT_ACTOR}),
            else_why="a child Mission is owned by the Parent Coordinator Agent",
        )
    ],
)

# --------------------------------------------------------------------------- Group

GROUP: Final = Obj(
    {
        "groupId": ID,
        "missionId": ID,
        "state": Enum.of(GroupState),
        "mainConversationId": ID,
        "createdAt": TIMESTAMP,
    },
    {"archivedAt": TIMESTAMP, "archiveSnapshotId": ID, "extensions": EXTENSIONS},
    rules=[
        If(
            Has(state=Const(GroupState.ARCHIVED)),
            then=Where(required=["archivedAt", "archiveSnapshotId"]),
            then_why="an archived Group names its archival time and signed snapshot",
        ),
        If(
            Has(state=Const(GroupState.ACTIVE)),
            then=Forbids("archivedAt", "archiveSnapshotId"),
            then_why="an active Group is not archived",
        ),
    ],
)

# --------------------------------------------------------------------------- Membership

_ALL_LIMITS: Final = (
    "currency",
    "financialLimit",
    "modelTokenLimit",
    "toolCallLimit",
    "computeSecondsLimit",
    "wallClockSecondsLimit",
    "externalSideEffectLimit",
)
DELEGATION_GRANT: Final = Obj(
    {
        "grantId": ID,
        "granteeAgentId": ID,
        "missionId": ID,
        "groupId": ID,
        "targetWorkItemId": ID,
        "allowedCapabilities": Arr(CAPABILITY_REF, min_items=1, unique=True),
        "budget": AllOf(
            BUDGET,
            Where(required=_ALL_LIMITS, why="a delegation grant states every budget limit"),
        ),
        "maxDescendantDepth": SAFE_INTEGER,
        "granteeMembershipEpoch": POSITIVE_INTEGER,
        "coordinatorEpoch": POSITIVE_INTEGER,
        "grantedBy": AGENT_ACTOR,
        "grantedAt": TIMESTAMP,
        "expiresAt": TIMESTAMP,
    }
)
MEMBERSHIP: Final = Obj(
    {
        "membershipId": ID,
        "missionId": ID,
        "groupId": ID,
        "member": ACTOR,
        "role": Enum.of(MembershipRole),
        "state": Enum.of(MEMBERSHIP_WIRE_STATES),
        "membershipEpoch": POSITIVE_INTEGER,
        "scopes": Arr(
            Str(pattern="^[a-z][a-z0-9._:-]*$", max_len=160, hint="a lower-case scope name"),
            min_items=1,
            unique=True,
        ),
        "visibilityStartSequence": SAFE_INTEGER,
        "grantedAt": TIMESTAMP,
    },
    {
        "delegationGrants": Arr(DELEGATION_GRANT, unique=True),
        "contextPackageId": ID,
        "provisionalExpiresAt": TIMESTAMP,
        "activatedAt": TIMESTAMP,
        "endedAt": TIMESTAMP,
        "extensions": EXTENSIONS,
    },
    rules=[
        If(
            Has(state=Const(MembershipState.PROVISIONAL)),
            then=Where(required=["provisionalExpiresAt", "contextPackageId"]),
            then_why="a provisional Membership expires and comes with its Context Package",
        ),
        If(
            Has(state=Const(MembershipState.ACTIVE)),
            then=Where(required=["activatedAt"]),
            then_why="an active Membership records when it was activated",
        ),
        If(
            Has(state=Const(MembershipState.ENDED)),
            then=Where(required=["endedAt"]),
            then_why="an ended Membership records when it ended",
        ),
    ],
)
