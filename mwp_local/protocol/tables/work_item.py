"""The WorkItem state machine of §10.2, as data.

``NONE`` and ``OPEN_WORK_PROPOSAL`` are the two pre-states of the table ("none" and "open Work
Proposal"); they are not wire states (a WorkItem document never carries them). Rows are
transcribed in the order of the specification, with the notes it gives; each names the Command
kind (or the cause) that drives it, the Event kinds that record it and the Authority's guards
(``mwp_local.authority.guards`` defines each name). Pipeline-wide fences (Session, Membership and
Coordinator Epochs, the compare-and-set a ``CommandSpec`` declares) apply to every Command and are
not repeated here.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from ..documents.kinds import CommandKind as C
from ..documents.kinds import EventKind as E
from ..documents.kinds import ExtensionCommandKind as XC
from ..documents.kinds import ExtensionEventKind as X
from ..documents.work import WorkItemState
from .core import Mark, Row, TransitionTable


class WorkTransition(StrEnum):
    """The transitions of §10.2: Command kinds, and the causes that are not Commands."""

    PROPOSE = C.WORK_PROPOSE.value
    AUTHORIZE = C.WORK_AUTHORIZE.value
    OFFER = C.WORK_OFFER.value
    ACCEPT_OFFER = C.WORK_ACCEPT_OFFER.value
    OFFER_EXPIRY = "offer_expiry"
    GRANT_EXECUTION = C.APPROVAL_GRANT_EXECUTION.value
    START = C.WORK_START.value
    CHECKPOINT = C.WORK_CHECKPOINT.value
    BLOCK = C.WORK_BLOCK.value
    UNBLOCK = C.WORK_UNBLOCK.value
    SUBMIT = C.WORK_SUBMIT.value
    ACCEPT_RESULT = C.WORK_ACCEPT_RESULT.value
    FAIL = C.WORK_FAIL.value
    CANCEL = C.WORK_CANCEL.value
    CREATE_CHILD = C.MISSION_CREATE_CHILD.value
    CHILD_APPROVED = "child_mission_approved"
    CHILD_FAILED = "child_mission_failed"
    PARENT_TERMINAL = "parent_mission_terminal"
    SESSION_REPLACED = "session_replacement"


W = WorkItemState
T = WorkTransition
#: The states of a WorkItem that is not finished: failure, cancellation and a parent Mission's
#: end still reach it (§10.2); verified, failed and cancelled items are finished.
UNFINISHED_STATES = frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.SUBMITTED})
#: The states in which an owner holds the WorkItem (accepted and not yet finished): an
#: obligation that keeps the owner's Membership (§8).
OWNED_STATES = frozenset({W.QUEUED, W.ACTIVE, W.BLOCKED, W.SUBMITTED})
#: The owning Worker's Commands cite its Ownership Epoch and its current Execution Lease.
_EXECUTING = ("current_owner", "current_execution_lease")
#: What tells a propagated child-Mission outcome from the parent Mission's own end.
_FROM_CHILD = Mark(("payload", "childMissionId"))

WORK_ITEM_TABLE: TransitionTable[WorkItemState, WorkTransition] = TransitionTable(
    "WorkItem",
    (
        Row(
            transition=T.PROPOSE,
            sources=frozenset({W.NONE}),
            targets=(W.OPEN_WORK_PROPOSAL,),
            events=(E.WORK_PROPOSED,),
            note="Any Group member may propose; no WorkItem exists yet",
        ),
        Row(
            transition=T.AUTHORIZE,
            sources=frozenset({W.NONE, W.OPEN_WORK_PROPOSAL}),
            targets=(W.OPEN,),
            events=(E.WORK_AUTHORIZED,),
            fences=("coordinator_owner_or_delegate",),
            note="Coordinator or scoped delegate creates the WorkItem",
        ),
        Row(
            transition=T.OFFER,
            sources=frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.FAILED}),
            targets=(W.OFFERED,),
            events=(E.WORK_OFFER_CREATED,),
            fences=("coordinator_owner_or_delegate", "delegate_within_grant", "compare_and_set"),
            guards=("no_live_owner", "retry_attempts_left"),
            note="Creates, replaces, or extends a durable offer; an expired owner is fenced first",
        ),
        Row(
            transition=T.ACCEPT_OFFER,
            sources=frozenset({W.OFFERED}),
            targets=(W.QUEUED,),
            events=(E.WORK_OFFER_ACCEPTED,),
            refusals=("offer_not_lost",),
            guards=(
                "offer_for_actor",
                "offer_not_expired",
                "offer_for_current_contract",
                "compare_and_set",
            ),
            note="Atomic ownership epoch begins",
        ),
        Row(
            transition=T.OFFER_EXPIRY,
            sources=frozenset({W.OFFERED}),
            targets=(W.OFFERED,),
            note="Expiry invalidates acceptance but does not itself append an Event or change "
            "state",
        ),
        Row(
            transition=T.GRANT_EXECUTION,
            sources=frozenset({W.QUEUED}),
            targets=(W.QUEUED,),
            events=(E.APPROVAL_EXECUTION_GRANTED,),
            guards=("execution_approval_required", "approver_authorized"),
            note="Satisfies the start gate without executing work",
        ),
        Row(
            transition=T.START,
            sources=frozenset({W.QUEUED}),
            targets=(W.ACTIVE,),
            events=(E.WORK_STARTED,),
            fences=("current_owner",),
            guards=(
                "ownership_live",
                "retry_attempt_allowed",
                "execution_approved",
                "dependencies_met",
            ),
            note="Valid ownership and Execution Lease required",
        ),
        Row(
            transition=T.CHECKPOINT,
            sources=frozenset({W.ACTIVE}),
            targets=(W.QUEUED,),
            events=(E.WORK_CHECKPOINTED,),
            fences=_EXECUTING,
            note="Durable progress releases execution while retaining a bounded ownership lease",
        ),
        Row(
            transition=T.BLOCK,
            sources=frozenset({W.ACTIVE}),
            targets=(W.BLOCKED,),
            events=(E.WORK_BLOCKED,),
            fences=_EXECUTING,
            note="Checkpoint and bounded blocked lease",
        ),
        Row(
            transition=T.UNBLOCK,
            sources=frozenset({W.BLOCKED}),
            targets=(W.QUEUED, W.OPEN),
            events=(E.WORK_UNBLOCKED,),
            choice=("payload", "toState"),
            fences=("work_owner_or_coordinator", "compare_and_set"),
            guards=("child_mission_settled", "ownership_live_chooses_queued"),
            note="Re-enters its queue or is re-offered after ownership expiry",
        ),
        Row(
            transition=T.SUBMIT,
            sources=frozenset({W.ACTIVE}),
            targets=(W.SUBMITTED,),
            events=(E.WORK_SUBMITTED,),
            fences=_EXECUTING,
            note="Artifacts and Evidence required",
        ),
        Row(
            transition=T.ACCEPT_RESULT,
            sources=frozenset({W.SUBMITTED}),
            targets=(W.VERIFIED,),
            events=(E.WORK_RESULT_ACCEPTED,),
            guards=("review_passed",),
            note="Coordinator review succeeds",
        ),
        Row(
            transition=T.FAIL,
            sources=UNFINISHED_STATES,
            targets=(W.FAILED,),
            events=(E.WORK_FAILED,),
            fences=("coordinator_or_owner_with_lease", "compare_and_set"),
            note="Failure Evidence required; a Coordinator may later issue a new work.offer",
        ),
        Row(
            transition=T.CANCEL,
            sources=UNFINISHED_STATES,
            targets=(W.CANCELLED,),
            events=(E.WORK_CANCELLED,),
            fences=("coordinator_or_mission_owner", "compare_and_set"),
            note="Cleanup policy applies",
        ),
        Row(
            transition=T.CREATE_CHILD,
            sources=frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED}),
            targets=(W.BLOCKED,),
            events=(E.MISSION_CHILD_CREATED,),
            note="Ownership is fenced while the linked child Mission runs",
        ),
        Row(
            transition=T.CHILD_APPROVED,
            sources=frozenset({W.BLOCKED}),
            targets=(W.VERIFIED,),
            events=(E.WORK_RESULT_ACCEPTED,),
            mark=_FROM_CHILD,
            note="Child Approval becomes parent WorkItem Evidence",
        ),
        Row(
            transition=T.CHILD_FAILED,
            sources=frozenset({W.BLOCKED}),
            targets=(W.BLOCKED, W.FAILED),
            events=(E.WORK_BLOCKED, E.WORK_FAILED),
            mark=_FROM_CHILD,
            guards=("child_failure_policy_chooses",),
            note="The declared child-failure policy controls propagation",
        ),
        Row(
            transition=T.PARENT_TERMINAL,
            sources=UNFINISHED_STATES,
            targets=(W.FAILED, W.CANCELLED),
            events=(E.WORK_FAILED, E.WORK_CANCELLED),
            guards=("mission_terminal_chooses",),
            note="Terminal Mission state propagates to unfinished WorkItems",
        ),
        # Not a row of the §10.2 table, but required by §11.3: "Opening a replacement Agent
        # Session MUST revoke that Agent's active leases and return affected WorkItems to
        # queued". Kept here so that the one table stays the only place states change.
        Row(
            transition=T.SESSION_REPLACED,
            sources=frozenset({W.ACTIVE}),
            targets=(W.QUEUED,),
            events=(X.WORK_EXECUTION_LEASE_REVOKED,),
            mark=Mark(("payload", "reason"), "session_replaced"),
            note="§11.3: a replacement Session revokes active leases; the item returns to queued",
        ),
    ),
    terminal=frozenset({W.VERIFIED, W.CANCELLED}),
)


class WorkItemAction(StrEnum):
    """Actions on a WorkItem that append Events but do not move it between states."""

    PUBLISH_ARTIFACT = C.ARTIFACT_PUBLISH.value
    RENEW_LEASE = XC.WORK_EXECUTION_LEASE_RENEW.value
    RECORD_USAGE = XC.RESOURCE_USAGE_RECORD.value
    ADD_DEPENDENCY = XC.WORK_DEPENDENCY_ADD.value


#: In which states each in-state action is allowed (the item must be executing to publish,
#: renew or consume; dependencies may be added until execution starts or while it is paused).
IN_STATE_ACTIONS: Mapping[WorkItemAction, frozenset[WorkItemState]] = {
    WorkItemAction.PUBLISH_ARTIFACT: frozenset({W.ACTIVE}),
    WorkItemAction.RENEW_LEASE: frozenset({W.ACTIVE}),
    WorkItemAction.RECORD_USAGE: frozenset({W.ACTIVE}),
    WorkItemAction.ADD_DEPENDENCY: frozenset({W.OPEN, W.OFFERED, W.QUEUED, W.BLOCKED}),
}
