"""Reducers of WorkItem, Artifact and usage Events (§10–§13)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.kinds import ExtensionEventKind as XE
from ...protocol.tables import OfferStatus, OfferTransition
from .. import budgets
from ..evolve import Fold, ReplayError, micros, reducer
from ..model import OfferRecord, WorkItemRecord
from ..state import AuthorityState
from .common import item_of, lease_of_type, move, recorded, update

OT = OfferTransition


def _offer_moved(
    state: AuthorityState, event: dict[str, Any], fold: Fold, offer_id: str, how: OT
) -> None:
    """Move one offer through the offer table (``ReplayError`` if the table forbids it). An
    offer already where the move leads stays there: a ``work.offer`` that revises the contract
    first withdraws the pending offers in the revision's Event, then lists them again as
    withdrawn by the new offer."""
    offer = state.offers[offer_id]
    row = fold.tables.offer.row(how)
    if offer.status not in row.targets:
        try:
            fold.tables.offer.lookup(OfferStatus(offer.status), how, subject=offer_id)
        except Exception as exc:
            raise ReplayError(f"Event {event['eventId']} ({event['kind']}): {exc}") from None
    state.put("offers", offer_id, replace(offer, status=str(row.targets[0])))


def _withdrawable(fold: Fold, offer: OfferRecord) -> bool:
    return fold.tables.offer.is_allowed(OfferStatus(offer.status), OT.WITHDRAW)


@reducer(E.WORK_PROPOSED)
def _proposed(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    recorded(event, fold)
    state.put("proposals", payload["proposalId"], {**payload, "status": "open"})


@reducer(E.WORK_AUTHORIZED)
def _authorized(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    doc = payload["workItem"]
    proposal_id = payload.get("proposalId")
    target = recorded(event, fold).target
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
            state=target,
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


@reducer(E.WORK_CONTRACT_REVISED)
def _contract_revised(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    if payload.get("renewedAcceptanceRequired"):
        for offer_id in item.offer_ids:
            if _withdrawable(fold, state.offers[offer_id]):
                _offer_moved(state, event, fold, offer_id, OT.WITHDRAW)
    update(state, event, item, contract=payload["contract"])


@reducer(E.WORK_OFFER_CREATED)
def _offer_created(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    for offer_id in payload["withdrawnOfferIds"]:
        _offer_moved(state, event, fold, offer_id, OT.WITHDRAW)
    new_ids = []
    created = str(fold.tables.offer.lookup(OfferStatus.NONE, OT.CREATE).targets[0])
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
                status=created,
            ),
        )
        new_ids.append(offer["offerId"])
    _charge_grant(state, payload.get("grantId"), item)
    fenced = payload.get("fencedOwner") is not None
    move(
        state,
        event,
        item,
        fold,
        offer_ids=(*item.offer_ids, *new_ids),
        selection_basis=payload["selectionBasis"],
        owner=None if fenced else item.owner,
        ownership_lease_id=None if fenced else item.ownership_lease_id,
        execution_lease_id=None if fenced else item.execution_lease_id,
        blocked_lease_id=None if fenced else item.blocked_lease_id,
    )


@reducer(E.WORK_OFFER_ACCEPTED)
def _offer_accepted(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    _offer_moved(state, event, fold, payload["offerId"], OT.ACCEPT)
    for offer_id in payload["lostOfferIds"]:
        _offer_moved(state, event, fold, offer_id, OT.LOSE_RACE)
    owner = payload["owner"]
    move(
        state,
        event,
        item,
        fold,
        owner=owner,
        ownership_epoch=owner["ownershipEpoch"],
        ownership_lease_id=owner["ownershipLeaseId"],
        execution_lease_id=None,
        blocked_lease_id=None,
        schedule_estimate=payload.get("scheduleEstimate"),
        execution_approved=False,
    )


@reducer(E.APPROVAL_EXECUTION_GRANTED)
def _execution_granted(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    move(state, event, item, fold, execution_approved=True)


@reducer(E.WORK_STARTED)
def _started(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    item = item_of(state, event)
    move(
        state,
        event,
        item,
        fold,
        execution_lease_id=payload["executionLeaseId"],
        ownership_lease_id=None,
        attempts=payload["attempt"],
        attempt_epoch=item.ownership_epoch,
    )


@reducer(E.WORK_PROGRESSED)
def _progressed(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    progress = event["payload"].get("progress")
    update(state, event, item, progress=progress if progress is not None else item.progress)


@reducer(E.WORK_CHECKPOINTED)
def _checkpointed(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    point = event["payload"]["checkpoint"]
    move(
        state,
        event,
        item,
        fold,
        execution_lease_id=None,
        ownership_lease_id=lease_of_type(event, "ownership"),
        last_checkpoint=point,
        progress=point["progress"],
    )


@reducer(E.WORK_BLOCKED)
def _blocked(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    payload = event["payload"]
    if "childMissionId" in payload:  # a child Mission failed under the "block" policy
        move(state, event, item, fold)
        return
    point = payload["checkpoint"]
    move(
        state,
        event,
        item,
        fold,
        execution_lease_id=None,
        blocked_lease_id=lease_of_type(event, "blocked"),
        last_checkpoint=point,
        progress=point["progress"],
    )


@reducer(E.WORK_UNBLOCKED)
def _unblocked(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    ownership = lease_of_type(event, "ownership")
    # Back in its queue the owner keeps the item under a new ownership lease; re-opened, the
    # item has no owner any more.
    move(
        state,
        event,
        item,
        fold,
        blocked_lease_id=None,
        ownership_lease_id=ownership,
        owner=item.owner if ownership is not None else None,
    )


@reducer(E.ARTIFACT_PUBLISHED)
def _artifact(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    manifest = event["payload"]["artifact"]
    state.put("artifacts", manifest["artifactId"], manifest)
    ids = state.artifact_ids.get(manifest["contentHash"], ())
    state.put("artifact_ids", manifest["contentHash"], (*ids, manifest["artifactId"]))
    item = item_of(state, event)
    update(
        state,
        event,
        item,
        artifact_hashes=(*item.artifact_hashes, manifest["contentHash"]),
        revision=item.revision,
    )


@reducer(XE.RESOURCE_USAGE_RECORDED)
def _usage(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    delta = {
        dim: event["payload"]["delta"][member]
        for dim, member in budgets.DELTA_MEMBER.items()
        if member in event["payload"]["delta"]
    }
    key: tuple[str, str] | None = ("work_item", event["payload"]["workItemId"])
    # A replica may lack the ledgers above its Groups (the parent Mission's, when it is no
    # member there: ``delivery.audience``); the Authority holds every one.
    while key is not None and key in state.budgets:
        ledger = state.budgets[key]
        used = dict(ledger.used)
        for dim, amount in delta.items():
            used[dim] = used.get(dim, 0) + amount
        state.put("budgets", key, replace(ledger, used=used))
        key = ledger.parent


@reducer(E.WORK_SUBMITTED)
def _submitted(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    item = item_of(state, event)
    payload = event["payload"]
    move(
        state,
        event,
        item,
        fold,
        execution_lease_id=None,
        submission=payload["submission"],
        submitted_artifacts=tuple(payload["submission"]["artifactHashes"]),
        submitted_evidence=tuple(payload["evidence"]),
    )


@reducer(E.WORK_RESULT_ACCEPTED, E.WORK_FAILED, E.WORK_CANCELLED)
def _finished(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """Verified (by review or by the child Mission's approval), failed or cancelled: every
    lease of the item is gone."""
    item = item_of(state, event)
    failed = event["kind"] == E.WORK_FAILED
    move(
        state,
        event,
        item,
        fold,
        execution_lease_id=None,
        ownership_lease_id=None,
        blocked_lease_id=None,
        failures=item.failures + failed,
        failed_at_us=(micros(event["occurredAt"]) if failed else item.failed_at_us),
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
