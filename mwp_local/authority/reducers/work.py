"""Reducers of WorkItem, Artifact and usage Events (§10–§13)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.tables import WORK_ITEM_TABLE, WorkItemState, WorkTransition
from .. import budgets
from ..evolve import micros, reducer
from ..model import OfferRecord, WorkItemRecord
from ..state import AuthorityState
from .common import ReplayError, item_of, lease_of_type, move, update

W = WorkItemState
T = WorkTransition


@reducer("work.proposed")
def _proposed(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    state.put("proposals", payload["proposalId"], {**payload, "status": "open"})


@reducer("work.authorized")
def _authorized(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    doc = payload["workItem"]
    proposal_id = payload.get("proposalId")
    source = W.PROPOSAL if proposal_id else W.NONE
    try:
        WORK_ITEM_TABLE.target(source, T.AUTHORIZE, W.OPEN)
    except Exception as exc:  # pragma: no cover
        raise ReplayError(str(exc)) from None
    if proposal_id:
        state.put(
            "proposals", proposal_id, {**state.proposals[proposal_id], "status": "authorized"}
        )
    state.put(
        "work_items",
        doc["workItemId"],
        WorkItemRecord(
            work_item_id=doc["workItemId"],
            mission_id=doc["missionId"],
            group_id=doc["groupId"],
            conversation_id=doc["conversationId"],
            state=W.OPEN,
            revision=event["aggregateRevision"],
            exclusive=doc["exclusive"],
            contract=doc["contract"],
            created_by=doc["createdBy"],
            created_at=doc["createdAt"],
            authorized_by=doc.get("authorizedBy"),
            parent_work_item_id=payload.get("parentWorkItemId"),
            updated_at=event["occurredAt"],
            last_sequence=event["sequence"],
        ),
    )
    mission_key = ("mission", doc["missionId"])
    budget = doc["contract"]["budget"]
    state.put("budgets", mission_key, budgets.allocate(state.budgets[mission_key], budget))
    state.put(
        "budgets",
        ("work_item", doc["workItemId"]),
        budgets.new_ledger("work_item", doc["workItemId"], mission_key, budget),
    )
    _charge_grant(state, payload.get("grantId"), state.work_items[doc["workItemId"]])


@reducer("work.contract.revised")
def _contract_revised(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    if payload.get("renewedAcceptanceRequired"):
        for offer_id in item.offer_ids:
            offer = state.offers[offer_id]
            if offer.status == "pending":
                state.put("offers", offer_id, replace(offer, status="withdrawn"))
    update(state, event, item, contract=payload["contract"])


@reducer("work.offer.created")
def _offer_created(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    for offer_id in payload["withdrawnOfferIds"]:
        state.put("offers", offer_id, replace(state.offers[offer_id], status="withdrawn"))
    new_ids = []
    for offer in payload["offers"]:
        expires = micros(offer["expiresAt"])
        assert expires is not None
        state.put(
            "offers",
            offer["offerId"],
            OfferRecord(
                offer_id=offer["offerId"],
                work_item_id=item.work_item_id,
                group_id=item.group_id,
                agent_id=offer["agentId"],
                agent_card_version=offer["agentCardVersion"],
                contract_version=payload["contractVersion"],
                expires_at=offer["expiresAt"],
                expires_us=expires,
            ),
        )
        new_ids.append(offer["offerId"])
    _charge_grant(state, payload.get("grantId"), item)
    fenced = payload.get("fencedOwner") is not None
    move(
        state,
        event,
        item,
        T.OFFER,
        W.OFFERED,
        offer_ids=(*item.offer_ids, *new_ids),
        selection_basis=payload["selectionBasis"],
        owner=None if fenced else item.owner,
        ownership_lease_id=None if fenced else item.ownership_lease_id,
        execution_lease_id=None if fenced else item.execution_lease_id,
        blocked_lease_id=None if fenced else item.blocked_lease_id,
    )


@reducer("work.offer.accepted")
def _offer_accepted(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    state.put(
        "offers", payload["offerId"], replace(state.offers[payload["offerId"]], status="accepted")
    )
    for offer_id in payload["lostOfferIds"]:
        state.put("offers", offer_id, replace(state.offers[offer_id], status="lost_race"))
    owner = payload["owner"]
    move(
        state,
        event,
        item,
        T.ACCEPT_OFFER,
        W.QUEUED,
        owner=owner,
        ownership_epoch=owner["ownershipEpoch"],
        ownership_lease_id=owner["ownershipLeaseId"],
        execution_lease_id=None,
        blocked_lease_id=None,
        schedule_estimate=payload.get("scheduleEstimate"),
        execution_approved=False,
    )


@reducer("approval.execution.granted")
def _execution_granted(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    move(state, event, item, T.GRANT_EXECUTION, W.QUEUED, execution_approved=True)


@reducer("work.started")
def _started(state: AuthorityState, event: dict[str, Any]) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        T.START,
        W.ACTIVE,
        execution_lease_id=payload["executionLeaseId"],
        ownership_lease_id=None,
        attempts=payload["attempt"],
        attempt_epoch=item.ownership_epoch,
    )


@reducer("work.progressed")
def _progressed(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    progress = event["payload"].get("progress")
    update(state, event, item, progress=progress if progress is not None else item.progress)


@reducer("work.checkpointed")
def _checkpointed(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    point = event["payload"]["checkpoint"]
    move(
        state,
        event,
        item,
        T.CHECKPOINT,
        W.QUEUED,
        execution_lease_id=None,
        ownership_lease_id=lease_of_type(event, "ownership"),
        last_checkpoint=point,
        progress=point["progress"],
    )


@reducer("work.blocked")
def _blocked(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    payload = event["payload"]
    if "childMissionId" in payload:  # a child Mission failed under the "block" policy
        move(state, event, item, T.CHILD_FAILED, W.BLOCKED)
        return
    point = payload["checkpoint"]
    move(
        state,
        event,
        item,
        T.BLOCK,
        W.BLOCKED,
        execution_lease_id=None,
        blocked_lease_id=lease_of_type(event, "blocked"),
        last_checkpoint=point,
        progress=point["progress"],
    )


@reducer("work.unblocked")
def _unblocked(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    target = W(event["payload"]["toState"])
    ownership = lease_of_type(event, "ownership")
    move(
        state,
        event,
        item,
        T.UNBLOCK,
        target,
        blocked_lease_id=None,
        ownership_lease_id=ownership,
        owner=item.owner if target is W.QUEUED else None,
    )


@reducer("artifact.published")
def _artifact(state: AuthorityState, event: dict[str, Any]) -> None:
    manifest = event["payload"]["artifact"]
    state.put("artifacts", manifest["contentHash"], manifest)
    item = item_of(state, event)
    update(
        state,
        event,
        item,
        artifact_hashes=(*item.artifact_hashes, manifest["contentHash"]),
        revision=item.revision,
    )


@reducer("ext.missionweaveprotocol.core.resource_usage_recorded")
def _usage(state: AuthorityState, event: dict[str, Any]) -> None:
    delta = {
        dim: event["payload"]["delta"][member]
        for dim, member in budgets.DELTA_MEMBER.items()
        if member in event["payload"]["delta"]
    }
    key: tuple[str, str] | None = ("work_item", event["payload"]["workItemId"])
    while key is not None:
        ledger = state.budgets[key]
        used = dict(ledger.used)
        for dim, amount in delta.items():
            used[dim] = used.get(dim, 0) + amount
        state.put("budgets", key, replace(ledger, used=used))
        key = ledger.parent


@reducer("work.submitted")
def _submitted(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    payload = event["payload"]
    move(
        state,
        event,
        item,
        T.SUBMIT,
        W.SUBMITTED,
        execution_lease_id=None,
        submission=payload["submission"],
        submitted_artifacts=tuple(payload["submission"]["artifactHashes"]),
        submitted_evidence=tuple(payload["evidence"]),
    )


@reducer("work.result.accepted")
def _result_accepted(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    transition = T.CHILD_APPROVED if "childMissionId" in event["payload"] else T.ACCEPT_RESULT
    move(
        state,
        event,
        item,
        transition,
        W.VERIFIED,
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
    )


def _terminal_transition(
    state: AuthorityState, event: dict[str, Any], fallback: WorkTransition
) -> WorkTransition:
    if event["cause"]["type"] == "event" and "childMissionId" in event["payload"]:
        return T.CHILD_FAILED
    if event["cause"]["type"] == "event":
        return T.PARENT_TERMINAL
    return fallback


@reducer("work.failed")
def _failed(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        _terminal_transition(state, event, T.FAIL),
        W.FAILED,
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
    )


@reducer("work.cancelled")
def _cancelled(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        _terminal_transition(state, event, T.CANCEL),
        W.CANCELLED,
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
    )


def _charge_grant(state: AuthorityState, grant_id: str | None, item: WorkItemRecord) -> None:
    """Count an item's budget against the Delegation Grant it was created or offered under."""
    if grant_id is None:
        return
    grant = state.grants[grant_id]
    if item.work_item_id in grant["items"]:
        return
    used = dict(grant["used"])
    for dim, amount in budgets.limits_of(item.contract["budget"]).items():
        used[dim] = used.get(dim, 0) + amount
    state.put(
        "grants", grant_id, {**grant, "used": used, "items": (*grant["items"], item.work_item_id)}
    )
