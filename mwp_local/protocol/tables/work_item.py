"""The WorkItem state machine of §10.2, as data.

``NONE`` and ``PROPOSAL`` are the two pre-states of the table ("none" and "open Work Proposal");
they are not wire states (a WorkItem document never carries them). Rows are transcribed in the
order of the specification, with the notes it gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from ..documents.work import WorkItemState
from .core import Row, TransitionTable


class WorkTransition(StrEnum):
    """The transitions of §10.2: Command kinds, and the causes that are not Commands."""

    PROPOSE = "work.propose"
    AUTHORIZE = "work.authorize"
    OFFER = "work.offer"
    ACCEPT_OFFER = "work.accept_offer"
    OFFER_EXPIRY = "offer_expiry"
    GRANT_EXECUTION = "approval.grant_execution"
    START = "work.start"
    CHECKPOINT = "work.checkpoint"
    BLOCK = "work.block"
    UNBLOCK = "work.unblock"
    SUBMIT = "work.submit"
    ACCEPT_RESULT = "work.accept_result"
    FAIL = "work.fail"
    CANCEL = "work.cancel"
    CREATE_CHILD = "mission.create_child"
    CHILD_APPROVED = "child_mission_approved"
    CHILD_FAILED = "child_mission_failed"
    PARENT_TERMINAL = "parent_mission_terminal"
    SESSION_REPLACED = "session_replacement"


W = WorkItemState
_NOT_FINISHED = frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.SUBMITTED})

WORK_ITEM_TABLE: TransitionTable[WorkItemState, WorkTransition] = TransitionTable(
    "WorkItem",
    (
        Row(
            sources=frozenset({W.NONE}),
            transition=WorkTransition.PROPOSE,
            targets=(W.PROPOSAL,),
            guards=("group_member",),
            note="Any Group member may propose; no WorkItem exists yet",
        ),
        Row(
            sources=frozenset({W.NONE, W.PROPOSAL}),
            transition=WorkTransition.AUTHORIZE,
            targets=(W.OPEN,),
            guards=("coordinator_or_delegate", "contract_complete", "budget_within_mission"),
            note="Coordinator or scoped delegate creates the WorkItem",
        ),
        Row(
            sources=frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.FAILED}),
            transition=WorkTransition.OFFER,
            targets=(W.OFFERED,),
            guards=("coordinator_or_delegate", "no_live_owner"),
            note="Creates, replaces, or extends a durable offer; an expired owner is fenced first",
        ),
        Row(
            sources=frozenset({W.OFFERED}),
            transition=WorkTransition.ACCEPT_OFFER,
            targets=(W.QUEUED,),
            guards=("offer_pending_for_actor", "offer_not_expired", "compare_and_set"),
            note="Atomic ownership epoch begins",
        ),
        Row(
            sources=frozenset({W.OFFERED}),
            transition=WorkTransition.OFFER_EXPIRY,
            targets=(W.OFFERED,),
            note="Expiry invalidates acceptance but does not itself append an Event or change "
            "state",
            appends_event=False,
        ),
        Row(
            sources=frozenset({W.QUEUED}),
            transition=WorkTransition.GRANT_EXECUTION,
            targets=(W.QUEUED,),
            guards=("execution_approval_required", "approver_authorized"),
            note="Satisfies the start gate without executing work",
        ),
        Row(
            sources=frozenset({W.QUEUED}),
            transition=WorkTransition.START,
            targets=(W.ACTIVE,),
            guards=("current_owner", "ownership_live", "execution_approved", "dependencies_met"),
            note="Valid ownership and Execution Lease required",
        ),
        Row(
            sources=frozenset({W.ACTIVE}),
            transition=WorkTransition.CHECKPOINT,
            targets=(W.QUEUED,),
            guards=("current_owner", "current_execution_lease"),
            note="Durable progress releases execution while retaining a bounded ownership lease",
        ),
        Row(
            sources=frozenset({W.ACTIVE}),
            transition=WorkTransition.BLOCK,
            targets=(W.BLOCKED,),
            guards=("current_owner", "current_execution_lease"),
            note="Checkpoint and bounded blocked lease",
        ),
        Row(
            sources=frozenset({W.BLOCKED}),
            transition=WorkTransition.UNBLOCK,
            targets=(W.QUEUED, W.OPEN),
            guards=("coordinator_or_owner", "ownership_live_chooses_queued"),
            note="Re-enters its queue or is re-offered after ownership expiry",
        ),
        Row(
            sources=frozenset({W.ACTIVE}),
            transition=WorkTransition.SUBMIT,
            targets=(W.SUBMITTED,),
            guards=("current_owner", "current_execution_lease", "evidence_covers_criteria"),
            note="Artifacts and Evidence required",
        ),
        Row(
            sources=frozenset({W.SUBMITTED}),
            transition=WorkTransition.ACCEPT_RESULT,
            targets=(W.VERIFIED,),
            guards=("current_coordinator", "not_own_output"),
            note="Coordinator review succeeds",
        ),
        Row(
            sources=_NOT_FINISHED,
            transition=WorkTransition.FAIL,
            targets=(W.FAILED,),
            guards=("coordinator_or_owner_with_lease", "failure_evidence"),
            note="Failure Evidence required; a Coordinator may later issue a new work.offer",
        ),
        Row(
            sources=_NOT_FINISHED,
            transition=WorkTransition.CANCEL,
            targets=(W.CANCELLED,),
            guards=("coordinator_or_owner",),
            note="Cleanup policy applies",
        ),
        Row(
            sources=frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED}),
            transition=WorkTransition.CREATE_CHILD,
            targets=(W.BLOCKED,),
            guards=("current_coordinator", "child_within_parent"),
            note="Ownership is fenced while the linked child Mission runs",
        ),
        Row(
            sources=frozenset({W.BLOCKED}),
            transition=WorkTransition.CHILD_APPROVED,
            targets=(W.VERIFIED,),
            guards=("linked_child",),
            note="Child Approval becomes parent WorkItem Evidence",
        ),
        Row(
            sources=frozenset({W.BLOCKED}),
            transition=WorkTransition.CHILD_FAILED,
            targets=(W.BLOCKED, W.FAILED),
            guards=("linked_child", "child_failure_policy_chooses"),
            note="The declared child-failure policy controls propagation",
        ),
        Row(
            sources=_NOT_FINISHED,
            transition=WorkTransition.PARENT_TERMINAL,
            targets=(W.FAILED, W.CANCELLED),
            guards=("mission_terminal_chooses",),
            note="Terminal Mission state propagates to unfinished WorkItems",
        ),
        # Not a row of the §10.2 table, but required by §11.3: "Opening a replacement Agent
        # Session MUST revoke that Agent's active leases and return affected WorkItems to
        # queued". Kept here so that the one table stays the only place states change.
        Row(
            sources=frozenset({W.ACTIVE}),
            transition=WorkTransition.SESSION_REPLACED,
            targets=(W.QUEUED,),
            guards=("execution_lease_holder_replaced",),
            note="§11.3: a replacement Session revokes active leases; the item returns to queued",
        ),
    ),
    terminal=frozenset({W.VERIFIED, W.CANCELLED}),
)


class WorkItemAction(StrEnum):
    """Actions on a WorkItem that append Events but do not move it between states."""

    PUBLISH_ARTIFACT = "artifact.publish"
    RENEW_LEASE = "ext.missionweaveprotocol.core.execution_lease_renew"
    RECORD_USAGE = "ext.missionweaveprotocol.core.resource_usage_record"
    INSERT_DEPENDENCY = "ext.missionweaveprotocol.core.dependency_insert"


#: In which states each in-state action is allowed (the item must be executing to publish,
#: renew or consume; dependencies may be added until execution starts or while it is paused).
IN_STATE_ACTIONS: Mapping[WorkItemAction, frozenset[WorkItemState]] = {
    WorkItemAction.PUBLISH_ARTIFACT: frozenset({W.ACTIVE}),
    WorkItemAction.RENEW_LEASE: frozenset({W.ACTIVE}),
    WorkItemAction.RECORD_USAGE: frozenset({W.ACTIVE}),
    WorkItemAction.INSERT_DEPENDENCY: frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.BLOCKED}),
}
