"""Reducers of Mission, Coordinator, Membership and Group Events (§7, §8, §14).

Mission moves apply the row ``evolve`` found; every Membership document is checked against the
membership table (a Membership never goes where the table does not lead).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.documents.kinds import EventKind as E
from ...protocol.tables import MembershipState
from .. import budgets
from ..evolve import Fold, reducer
from ..model import GroupRecord, MembershipRecord, MissionRecord
from ..state import AuthorityState
from .common import ReplayError, item_of, mission_move, move, recorded


@reducer(E.MISSION_CREATED)
def _mission_created(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    doc, group = payload["mission"], payload["group"]
    target = recorded(event, fold).target
    state.put(
        "groups",
        group["groupId"],
        GroupRecord(
            group_id=group["groupId"],
            mission_id=doc["missionId"],
            main_conversation_id=group["mainConversationId"],
        ),
    )
    parent = doc.get("parent")
    coordinator = doc["coordinator"]
    state.put(
        "missions",
        doc["missionId"],
        MissionRecord(
            mission_id=doc["missionId"],
            group_id=doc["groupId"],
            state=target,
            revision=event["aggregateRevision"],
            objective=doc["objective"],
            owner_type=doc["missionOwner"]["type"],
            owner_id=doc["missionOwner"]["id"],
            coordinator_agent_id=coordinator["agentId"],
            coordinator_epoch=coordinator["coordinatorEpoch"],
            coordinator_lease_id=coordinator["leaseId"],
            deadline=doc["deadline"],
            document=doc,
            parent_mission_id=parent["missionId"] if parent else None,
            parent_work_item_id=parent["workItemId"] if parent else None,
            depth=parent["depth"] if parent else 0,
            child_failure_policy=payload.get("childFailurePolicy") or "block",
            follow_up_to=doc.get("followUpToMissionId"),
            last_sequence=event["sequence"],
        ),
    )
    budget_parent = payload.get("budgetParent")
    parent_key: tuple[str, str] | None = (
        (budget_parent[0], budget_parent[1]) if budget_parent else None
    )
    # An agent's replica folds only the Groups it is a member of (``delivery.audience``): the
    # Coordinator of a child Mission may not see the parent Group's ledger. The Authority never
    # lacks it (the Command creating the child was decided against it).
    if parent_key is not None and parent_key in state.budgets:
        state.put("budgets", parent_key, budgets.allocate(state.budgets[parent_key], doc["budget"]))
    state.put(
        "budgets",
        ("mission", doc["missionId"]),
        budgets.new_ledger("mission", doc["missionId"], parent_key, doc["budget"]),
    )


@reducer(E.MISSION_CHILD_CREATED)
def _child_created(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        fold,
        child_mission_id=event["payload"]["childMissionId"],
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
    )


@reducer(E.MEMBERSHIP_CHANGED, E.MEMBERSHIP_ENDED)
def _membership(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    doc = event["payload"]["membership"]
    known = state.memberships.get((doc["groupId"], doc["member"]["id"]))
    source = MembershipState.NONE if known is None else MembershipState(known.state)
    if fold.tables.membership.between(source, MembershipState(doc["state"])) is None:
        raise ReplayError(
            f"Event {event['eventId']} ({event['kind']}): the Membership of "
            f"{doc['member']['id']} cannot go from '{source}' to '{doc['state']}' "
            "(Membership state table)"
        )
    state.put(
        "memberships",
        (doc["groupId"], doc["member"]["id"]),
        MembershipRecord(
            group_id=doc["groupId"],
            principal_type=doc["member"]["type"],
            principal_id=doc["member"]["id"],
            role=doc["role"],
            epoch=doc["membershipEpoch"],
            state=doc["state"],
            document=doc,
        ),
    )


@reducer(E.MISSION_COORDINATOR_ASSIGNED)
def _coordinator_assigned(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    mission = state.missions[payload["missionId"]]
    coordinator = payload["coordinator"]
    document = dict(mission.document, coordinator=coordinator)
    state.put(
        "missions",
        mission.mission_id,
        replace(
            mission,
            revision=event["aggregateRevision"],
            coordinator_agent_id=coordinator["agentId"],
            coordinator_epoch=coordinator["coordinatorEpoch"],
            coordinator_lease_id=coordinator["leaseId"],
            document=document,
            last_sequence=event["sequence"],
        ),
    )


@reducer(E.MISSION_COORDINATOR_RENEWED)
def _coordinator_renewed(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """The renewed Coordinator lease is folded from ``payload.leases``; nothing else changes."""


@reducer(E.MISSION_SUBMITTED_FOR_APPROVAL)
def _submitted_for_approval(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    mission_move(
        state,
        event,
        fold,
        submitted_revision=payload["missionRevision"],
        submitted_artifacts=tuple(payload["artifactHashes"]),
    )


@reducer(E.MISSION_APPROVED)
def _approved(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """Approved: the row's target, and the Approval kept for the Group's final snapshot."""
    mission_move(state, event, fold, approval=event["payload"]["approval"])


@reducer(E.MISSION_CHANGES_REQUESTED, E.MISSION_CANCELLED, E.MISSION_TERMINATED)
def _mission_moved(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """Reopened for changes, cancelled or failed: the row's target, nothing else."""
    mission_move(state, event, fold)


@reducer(E.MEMBERSHIP_DELEGATION_GRANTED)
def _grant(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    grant = event["payload"]["grant"]
    state.put("grants", grant["grantId"], {**grant, "used": {}, "items": ()})


@reducer(E.GROUP_SNAPSHOT_CREATED)
def _snapshot_created(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """The final snapshot stays in the log; ``group.archived`` right after it names its ID."""


@reducer(E.GROUP_ARCHIVED)
def _group_archived(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """The Group moves to the row's target and keeps when and by which snapshot (§7.4)."""
    doc = event["payload"]["group"]
    group = state.groups[event["groupId"]]
    state.put(
        "groups",
        group.group_id,
        replace(
            group,
            state=str(recorded(event, fold).target),
            archived_at=doc["archivedAt"],
            archive_snapshot_id=doc["archiveSnapshotId"],
        ),
    )
