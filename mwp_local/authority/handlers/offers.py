"""Offers and ownership (§10.3): durable offers, the first valid acceptance winning a new
Ownership Epoch, and the execution-approval gate of risky work (§12).

An offer reserves nothing; exclusive work goes to one candidate at a time, urgent work to a
bounded set, and the winner's acceptance marks every other pending offer ``lost_race`` in the
same Event, before any loser could start (MWP-WRK-004). Each offer records its structured
selection basis (MWP-WRK-006).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import WORK_ITEM_TABLE, WorkItemState, WorkTransition
from ...protocol.timestamps import parse_timestamp
from .. import delegation, fences, leases
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..model import OfferRecord, WorkItemRecord
from ..registry import command
from .mission import _membership_document
from .work import _coordinator_or_owner_human, complete_contract

W = WorkItemState
T = WorkTransition
MAX_URGENT_CANDIDATES = 5


def _capability_match(
    ctx: Context, agent_id: str, required: list[dict[str, str]]
) -> list[dict[str, str]]:
    agent = ctx.state.agents.get(agent_id)
    if agent is None:
        raise invalid(f"Agent {agent_id} is not registered.")
    offered = dict(agent.capabilities)
    matches = []
    for cap in required:
        have = offered.get(cap["id"])
        if have is None or not _version_satisfies(have, cap["version"]):
            raise invalid(
                f"Agent {agent_id} lacks capability {cap['id']} {cap['version']} "
                f"(its Agent Card declares {have or 'nothing'}).",
                rule="§6.1 capability versions are pinned",
            )
        matches.append({"id": cap["id"], "version": have})
    return matches


def _version_satisfies(have: str, need: str) -> bool:
    def parts(v: str) -> tuple[int, ...]:
        core = v.split("-", 1)[0].split("+", 1)[0]
        return tuple(int(x) for x in core.split("."))

    h, n = parts(have), parts(need)
    return h[0] == n[0] and h >= n


@command("work.offer", actors=("agent", "human"))
def offer(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Offer a WorkItem durably to one Worker, or (urgent) to a bounded candidate set (§10.3)."""
    role = _coordinator_or_owner_human(ctx, cmd, delegable=True)
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    grant_id = None
    if role == "delegate":
        grant = ctx.state.grants.get(cmd.payload.get("grantId", ""), {})
        grant_id = delegation.check_use(
            ctx,
            cmd,
            subject=item.work_item_id,
            contract=item.contract,
            budget_already_counted=item.work_item_id in grant.get("items", ()),
        )["grantId"]
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    WORK_ITEM_TABLE.lookup(item.state, T.OFFER, subject=item.work_item_id)
    if item.owner is not None and fences.ownership_live(ctx, item):
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"WorkItem {item.work_item_id} still has a live owner "
            f"({item.owner['agentId']}, Ownership Epoch {item.ownership_epoch}); it can be "
            "re-offered only once that ownership has expired or been released.",
            rule="§10.2 work.offer requires no live owner",
        )
    candidates = cmd.payload.get("offers")
    if candidates is None:
        candidates = [
            {"agentId": payload_field(cmd, "agentId"), "expiresAt": payload_field(cmd, "expiresAt")}
        ]
    if not isinstance(candidates, list) or not candidates:
        raise invalid("An offer needs at least one candidate.")
    contract = item.contract
    revised = cmd.payload.get("contract")
    if revised is not None:
        revised = complete_contract(revised, "The revised Work Contract")
        if revised["contractVersion"] != item.contract_version + 1:
            raise invalid(
                f"A revised contract must have contractVersion {item.contract_version + 1}."
            )
        contract = revised
    urgent = contract["requestedUrgency"] in ("high", "critical")
    if len(candidates) > 1 and (not urgent or len(candidates) > MAX_URGENT_CANDIDATES):
        raise invalid(
            "Exclusive work is offered sequentially to one Worker; only urgent work "
            f"(high/critical) may go to a bounded set of at most {MAX_URGENT_CANDIDATES}.",
            rule="§10.3 offers",
        )
    basis = payload_field(cmd, "selectionBasis", dict)
    new_offers: list[dict[str, Any]] = []
    seen_agents: set[str] = set()
    for cand in candidates:
        agent_id = cand.get("agentId")
        if not isinstance(agent_id, str) or agent_id in seen_agents:
            raise invalid("Each candidate needs a distinct agentId.")
        seen_agents.add(agent_id)
        expires = parse_timestamp(cand.get("expiresAt"))
        if expires.epoch_micros <= ctx.now_us:
            raise invalid(f"The offer to {agent_id} expires at {expires.text}, already past.")
        matches = _capability_match(ctx, agent_id, contract["requiredCapabilities"])
        new_offers.append(
            {
                "offerId": cand.get("offerId") or ctx.new_id("offer"),
                "agentId": agent_id,
                "agentCardVersion": ctx.state.agents[agent_id].card_version,
                "expiresAt": expires.text,
                "status": "pending",
                "verifiedMatches": matches,
            }
        )
    withdrawn = [o for o in item.offer_ids if ctx.state.offers[o].status == "pending"]
    stale = []
    if item.owner is not None:
        stale = leases.close_all_of_item(ctx, item, "expired", "ownership fenced for re-offer")
    if revised is not None:
        yield item_draft(
            item,
            "work.contract.revised",
            contract=revised,
            previousContractVersion=item.contract_version,
            renewedAcceptanceRequired=True,
            reason=cmd.payload.get("revisionReason", "contract corrected"),
        )
    for new in new_offers:
        mem = ctx.state.memberships.get((item.group_id, new["agentId"]))
        if mem is None or mem.state == "ended":
            yield Draft(
                kind="membership.changed",
                group_id=cmd.group_id,
                payload={
                    "missionId": item.mission_id,
                    "membership": _membership_document(
                        ctx,
                        mission_id=item.mission_id,
                        group_id=item.group_id,
                        member={"type": "agent", "id": new["agentId"]},
                        role="worker",
                        epoch=(mem.epoch + 1) if mem else 1,
                        state="provisional",
                        scopes=["work:" + item.work_item_id],
                        visibility_start=ctx.group(cmd.group_id).last_sequence + 1,
                    ),
                },
            )
    item = ctx.state.work_items[item.work_item_id]
    yield Draft(
        kind="work.offer.created",
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        conversation_id=item.conversation_id,
        aggregate=("work_item", item.work_item_id),
        from_state=str(item.state),
        to_state="offered",
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "contractVersion": contract["contractVersion"],
            "offers": [{k: v for k, v in o.items() if k != "verifiedMatches"} for o in new_offers],
            "withdrawnOfferIds": withdrawn,
            "grantId": grant_id,
            "urgent": len(new_offers) > 1,
            "selectionBasis": {
                **basis,
                "requiredCapabilities": contract["requiredCapabilities"],
                "verifiedMatches": new_offers[0]["verifiedMatches"],
            },
            "fencedOwner": (
                {"agentId": item.owner["agentId"], "ownershipEpoch": item.ownership_epoch}
                if item.owner
                else None
            ),
            "leases": leases.documents(*stale),
        },
    )


def _offer_for(ctx: Context, cmd: CommandView, item: WorkItemRecord) -> OfferRecord:
    offer_id = cmd.payload.get("offerId")
    record = ctx.state.offers.get(offer_id) if isinstance(offer_id, str) else None
    if record is None or record.work_item_id != item.work_item_id:
        mine = [o for o in item.offer_ids if ctx.state.offers[o].agent_id == cmd.actor_id]
        if not mine:
            raise forbidden(f"{cmd.actor_id} holds no offer for {item.work_item_id}.")
        record = ctx.state.offers[mine[-1]]
    if record.agent_id != cmd.actor_id:
        raise forbidden(f"Offer {record.offer_id} was made to {record.agent_id}, not to you.")
    return record


@command("work.accept_offer", cas=True)
def accept_offer(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The first valid acceptance atomically wins a new Ownership Epoch (§10.3, §15.3)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    mine = [ctx.state.offers[o] for o in item.offer_ids]
    mine = [o for o in mine if o.agent_id == cmd.actor_id]
    if mine and mine[-1].status == "lost_race":
        raise ProtocolError(
            ErrorCode.WORK_ALREADY_OWNED,
            f"Another candidate already won {item.work_item_id} "
            f"(Ownership Epoch {item.ownership_epoch}); your offer was withdrawn.",
            rule="§10.3 the first valid acceptance wins",
        )
    WORK_ITEM_TABLE.lookup(item.state, T.ACCEPT_OFFER, subject=item.work_item_id)
    record = _offer_for(ctx, cmd, item)
    if record.status != "pending" or ctx.now_us >= record.expires_us:
        why = (
            f"it expired at {record.expires_at}"
            if record.status == "pending" or record.status == "expired"
            else f"it is {record.status}"
        )
        raise ProtocolError(
            ErrorCode.WORK_OFFER_EXPIRED,
            f"Offer {record.offer_id} is no longer valid: {why}.",
            rule="§10.2 offer expiry invalidates acceptance",
        )
    if record.contract_version != item.contract_version:
        raise ProtocolError(
            ErrorCode.WORK_OFFER_EXPIRED,
            f"Offer {record.offer_id} was for contract version {record.contract_version}; the "
            f"contract is now version {item.contract_version} and needs a new offer.",
            rule="§10.1 a revised contract requires renewed acceptance",
        )
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    agent = ctx.state.agents[cmd.actor_id]
    pins = cmd.payload.get("capabilityPins") or _capability_match(
        ctx, cmd.actor_id, item.contract["requiredCapabilities"]
    )
    epoch = item.ownership_epoch + 1
    start_by = ctx.now_us + ctx.config.start_by_us
    ownership = leases.issue(
        ctx,
        lease_type="ownership",
        mission_id=item.mission_id,
        group_id=item.group_id,
        holder=cmd.actor_id,
        session_epoch=agent.session_epoch,
        duration_us=ctx.config.start_by_us,
        work_item_id=item.work_item_id,
        ownership_epoch=epoch,
        start_by_us=start_by,
    )
    owner = {
        "agentId": cmd.actor_id,
        "agentCardVersion": agent.card_version,
        "capabilityPins": pins,
        "ownershipEpoch": epoch,
        "ownershipLeaseId": ownership.lease_id,
        "acceptedAt": ctx.now.text,
    }
    losers = [
        o
        for o in item.offer_ids
        if o != record.offer_id and ctx.state.offers[o].status == "pending"
    ]
    yield Draft(
        kind="work.offer.accepted",
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        conversation_id=item.conversation_id,
        aggregate=("work_item", item.work_item_id),
        from_state="offered",
        to_state="queued",
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "offerId": record.offer_id,
            "owner": owner,
            "lostOfferIds": losers,
            "scheduleEstimate": cmd.payload.get("scheduleEstimate"),
            "leases": leases.documents(ownership),
        },
    )
    mem = ctx.state.memberships.get((item.group_id, cmd.actor_id))
    if mem is not None and mem.state == "provisional":
        doc = dict(mem.document)
        doc.update(state="active", activatedAt=ctx.now.text)
        yield Draft(
            kind="membership.changed",
            group_id=cmd.group_id,
            payload={"missionId": item.mission_id, "membership": doc},
        )


@command(
    "approval.grant_execution",
    actors=("human", "agent", "service"),
    aggregate="work_item",
    cas=True,
)
def grant_execution(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """A signed Approval satisfies the pre-execution gate of a risky WorkItem (§12)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    mission = ctx.mission_of(cmd.group_id)
    WORK_ITEM_TABLE.lookup(item.state, T.GRANT_EXECUTION, subject=item.work_item_id)
    if not needs_execution_approval(ctx, item):
        raise invalid(f"WorkItem {item.work_item_id} needs no execution approval.")
    required = item.contract["executionApproval"]
    if required == "human_required" and cmd.actor_type != "human":
        raise forbidden("This WorkItem's contract requires a human to approve execution.")
    if cmd.actor_id != mission.owner_id and cmd.actor_type != "service":
        raise forbidden("Only the MissionOwner or Organization policy grants execution approval.")
    approval = payload_field(cmd, "approval", dict)
    verified = verify_parsed(profile_for("approval"), approval, ctx.state.registry)
    if (
        verified.principal.id != cmd.actor_id
        or approval["kind"] != "work_execution"
        or approval["decision"] != "approved"
        or approval.get("workItemId") != item.work_item_id
    ):
        raise invalid("The Approval must be a work_execution approval of this WorkItem by you.")
    yield item_draft(
        item,
        "approval.execution.granted",
        to="queued",
        approval=approval,
    )


def needs_execution_approval(ctx: Context, item: WorkItemRecord) -> bool:
    """Whether policy places the item behind ``awaiting_execution_approval`` (§12)."""
    contract = item.contract
    if contract["executionApproval"] != "not_required":
        return True
    mission = ctx.state.missions[item.mission_id]
    policy = mission.document.get("approvalPolicy", {})
    return bool(policy.get("highRiskExecutionApproval")) and contract["sideEffectRisk"] in (
        "high_risk",
        "destructive",
    )
