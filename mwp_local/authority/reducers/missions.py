"""Reducers of Mission, Coordinator and Membership Events (§7, §8, §14)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.tables import (
    MISSION_TABLE,
    MissionState,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)
from .. import budgets
from ..evolve import reducer
from ..model import GroupRecord, MembershipRecord, MissionRecord
from ..state import AuthorityState
from .common import ReplayError, item_of, mission_move, move

W = WorkItemState
T = WorkTransition


@reducer("mission.created")
def _mission_created(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    doc, group = payload["mission"], payload["group"]
    try:
        MISSION_TABLE.lookup(MissionState.NONE, MissionTransition.CREATE)
    except Exception as exc:  # pragma: no cover - the row always exists
        raise ReplayError(str(exc)) from None
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
            state=MissionState.ACTIVE,
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
    if parent_key is not None:
        state.put("budgets", parent_key, budgets.allocate(state.budgets[parent_key], doc["budget"]))
    state.put(
        "budgets",
        ("mission", doc["missionId"]),
        budgets.new_ledger("mission", doc["missionId"], parent_key, doc["budget"]),
    )


@reducer("mission.child.created")
def _child_created(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        T.CREATE_CHILD,
        W.BLOCKED,
        child_mission_id=event["payload"]["childMissionId"],
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
    )


@reducer("membership.changed", "membership.ended")
def _membership(state: AuthorityState, event: dict[str, Any]) -> None:
    doc = event["payload"]["membership"]
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


@reducer("mission.coordinator.assigned")
def _coordinator_assigned(state: AuthorityState, event: dict[str, Any]) -> None:
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


@reducer("mission.submitted_for_approval")
def _submitted_for_approval(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    mission_move(
        state,
        event,
        MissionTransition.SUBMIT_FOR_APPROVAL,
        submitted_revision=payload["missionRevision"],
        submitted_artifacts=tuple(payload["artifactHashes"]),
    )


@reducer("mission.approved")
def _approved(state: AuthorityState, event: dict[str, Any]) -> None:
    mission_move(state, event, MissionTransition.APPROVE)


@reducer("mission.changes_requested")
def _changes_requested(state: AuthorityState, event: dict[str, Any]) -> None:
    mission_move(state, event, MissionTransition.REQUEST_CHANGES)


@reducer("mission.cancelled", "mission.terminated")
def _mission_ended(state: AuthorityState, event: dict[str, Any]) -> None:
    mission_move(state, event, MissionTransition(event["payload"]["propagation"]))


@reducer("membership.delegation.granted")
def _grant(state: AuthorityState, event: dict[str, Any]) -> None:
    grant = event["payload"]["grant"]
    state.put("grants", grant["grantId"], {**grant, "used": {}, "items": ()})
