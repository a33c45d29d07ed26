"""Offers and ownership (§10.3): durable offers, the first valid acceptance winning a new
Ownership Epoch, and the execution-approval gate of risky work (§12).

An offer reserves nothing; exclusive work goes to one candidate at a time, urgent work to a
bounded set, and the winner's acceptance marks every other pending offer ``lost_race`` in the
same Event, before any loser could start (MWP-WRK-004). Each offer records its structured
selection basis (MWP-WRK-006). Each handler decides its row of the WorkItem table; the offers
themselves follow the offer table, and a just-in-time Membership the membership table.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import (
    UNFINISHED_STATES,
    LeaseTransition,
    MembershipState,
    MembershipTransition,
    OfferStatus,
    OfferTransition,
)
from ...protocol.timestamps import parse_timestamp
from .. import leases
from ..assignment import schedule_estimate, selection_basis
from ..command import CommandView, Draft, item_draft
from ..context import Context, invalid, payload_field
from ..decide import decide, named_item
from ..isolation import scope_covers_work
from ..model import MembershipRecord
from ..provisional import context_package
from ..registry import command
from .mission import _membership_document, membership_state
from .work import complete_contract

OT = OfferTransition
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


@command(C.WORK_OFFER, actors=("agent", "human"))
def offer(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Offer a WorkItem durably to one Worker, or (urgent) to a bounded candidate set (§10.3)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item, offers = move.item, ctx.tables.offer
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
    stated = payload_field(cmd, "selectionBasis", dict)
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
                "status": str(offers.lookup(OfferStatus.NONE, OT.CREATE).targets[0]),
                "verifiedMatches": matches,
            }
        )
    basis = selection_basis(
        stated, contract["requiredCapabilities"], new_offers[0]["verifiedMatches"]
    )
    withdrawn = [
        o
        for o in item.offer_ids
        if offers.is_allowed(OfferStatus(ctx.state.offers[o].status), OT.WITHDRAW)
    ]
    stale = []
    if item.owner is not None:
        stale = leases.close_all_of_item(
            ctx, item, LeaseTransition.EXPIRE, "ownership fenced for re-offer"
        )
    # A joining member sees this Command's Events from the first (a contract revision it
    # makes included): its visibility starts before them.
    visible_from = ctx.group(cmd.group_id).last_sequence + 1
    if revised is not None:
        yield item_draft(
            item,
            E.WORK_CONTRACT_REVISED,
            contract=revised,
            previousContractVersion=item.contract_version,
            renewedAcceptanceRequired=True,
            reason=cmd.payload.get("revisionReason", "contract corrected"),
        )
    memberships = ctx.tables.membership
    joining, extending = [], []
    for new in new_offers:
        mem = ctx.state.memberships.get((item.group_id, new["agentId"]))
        if memberships.is_allowed(membership_state(mem), MembershipTransition.GRANT):
            joining.append((new, mem))
        elif not scope_covers_work(mem, item.work_item_id):
            # A member offered a WorkItem its scopes do not cover (a second WorkItem, say):
            # the scopes grow under the next Membership Epoch, as a first join grants them,
            # or the new work's inputs stay unreadable to its Worker (§8, §13.3).
            assert mem is not None
            extending.append((new, mem))
    package = None
    if joining or extending or isinstance(cmd.payload.get("contextPackage"), dict):
        newcomer = next((new["agentId"] for new, _ in (*joining, *extending)), "")
        package = context_package(
            ctx,
            cmd,
            mission_id=item.mission_id,
            group_id=item.group_id,
            work_item_id=item.work_item_id,
            why=(
                f"{newcomer} is not a member of this Group yet"
                if joining
                else f"{newcomer}'s Membership does not cover WorkItem {item.work_item_id} yet"
                if extending
                else "The offer names a Context Package"
            ),
        )
    granted = [
        _membership_document(
            ctx,
            mission_id=item.mission_id,
            group_id=item.group_id,
            member={"type": "agent", "id": new["agentId"]},
            role="worker",
            epoch=(mem.epoch + 1) if mem else 1,
            state=MembershipState.PROVISIONAL,
            scopes=["work:" + item.work_item_id],
            visibility_start=visible_from,
            context_package_id=package["contextPackageId"],
            provisional_expires_at=new["expiresAt"],
        )
        for new, mem in joining
        if package is not None
    ] + [
        _extended(ctx, mem, item.work_item_id, package, new["expiresAt"])
        for new, mem in extending
        if package is not None
    ]
    for membership in granted:
        yield Draft(
            kind=E.MEMBERSHIP_CHANGED,
            group_id=cmd.group_id,
            payload={
                "missionId": item.mission_id,
                "membership": membership,
                "contextPackage": package,
            },
        )
    item = ctx.state.work_items[item.work_item_id]
    yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        conversation_id=item.conversation_id,
        aggregate=("work_item", item.work_item_id),
        from_state=str(item.state),
        to_state=str(move.target),
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "contractVersion": contract["contractVersion"],
            "offers": [{k: v for k, v in o.items() if k != "verifiedMatches"} for o in new_offers],
            "withdrawnOfferIds": withdrawn,
            "grantId": move.grant_id,
            "urgent": len(new_offers) > 1,
            "selectionBasis": basis,
            "fencedOwner": (
                {"agentId": item.owner["agentId"], "ownershipEpoch": item.ownership_epoch}
                if item.owner
                else None
            ),
            "leases": leases.documents(*stale),
            # A member whose visibility starts after this WorkItem was authorized receives
            # the package the offer names here (§8; a joining one, in its Membership Event).
            **(
                {"contextPackage": package}
                if package is not None and len(joining) < len(new_offers)
                else {}
            ),
        },
    )


def _extended(
    ctx: Context,
    mem: MembershipRecord,
    work_item_id: str,
    package: dict[str, Any],
    offer_expires_at: str,
) -> dict[str, Any]:
    """``mem``'s Membership document with ``work:<work_item_id>`` added to its scopes, under the
    next Membership Epoch: same Membership, role, state and visibility start, naming the Context
    Package of what the new scope discloses. A provisional one stays provisional until the later
    of its offers expires.

    The scopes of WorkItems that are finished (verified, failed, cancelled) are dropped in the
    same change: a just-in-time Membership covers what its Worker still has to do (§8, step 4),
    and a Worker doing thousands of WorkItems would otherwise carry every one of them in each
    later Membership document, so each widening would cost more than the last."""
    doc = dict(mem.document)
    items = ctx.state.work_items
    kept = [
        scope
        for scope in doc["scopes"]
        if not scope.startswith("work:")
        or (item := items.get(scope[len("work:") :])) is None
        or item.state in UNFINISHED_STATES
    ]
    state = ctx.tables.membership.target(
        membership_state(mem), MembershipTransition.CHANGE, membership_state(mem)
    )
    doc.update(
        state=str(state),
        membershipEpoch=mem.epoch + 1,
        scopes=[*kept, "work:" + work_item_id],
        contextPackageId=package["contextPackageId"],
    )
    if state is MembershipState.PROVISIONAL:
        doc["provisionalExpiresAt"] = max(
            (doc["provisionalExpiresAt"], offer_expires_at),
            key=lambda t: parse_timestamp(t).epoch_micros,
        )
    return doc


@command(C.WORK_ACCEPT_OFFER, cas=True)
def accept_offer(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The first valid acceptance atomically wins a new Ownership Epoch (§10.3, §15.3)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item, record, offers = move.item, move.offer, ctx.tables.offer
    assert record is not None
    estimate = schedule_estimate(cmd.payload.get("scheduleEstimate"))
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
        if o != record.offer_id
        and offers.is_allowed(OfferStatus(ctx.state.offers[o].status), OT.LOSE_RACE)
    ]
    yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        conversation_id=item.conversation_id,
        aggregate=("work_item", item.work_item_id),
        from_state=str(move.source),
        to_state=str(move.target),
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "offerId": record.offer_id,
            "owner": owner,
            "lostOfferIds": losers,
            "scheduleEstimate": estimate,
            "leases": leases.documents(ownership),
        },
    )
    mem = ctx.state.memberships.get((item.group_id, cmd.actor_id))
    activate = MembershipTransition.ACTIVATE
    if mem is not None and ctx.tables.membership.is_allowed(membership_state(mem), activate):
        doc = dict(mem.document)
        active = ctx.tables.membership.lookup(membership_state(mem), activate).targets[0]
        doc.update(state=str(active), activatedAt=ctx.now.text)
        yield Draft(
            kind=E.MEMBERSHIP_CHANGED,
            group_id=cmd.group_id,
            payload={"missionId": item.mission_id, "membership": doc},
        )


@command(
    C.APPROVAL_GRANT_EXECUTION,
    actors=("human", "agent", "service"),
    aggregate="work_item",
    cas=True,
)
def grant_execution(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """A signed Approval satisfies the pre-execution gate of a risky WorkItem (§12)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item = move.item
    approval = payload_field(cmd, "approval", dict)
    verified = verify_parsed(profile_for("approval"), approval, ctx.state.registry)
    if (
        verified.principal.id != cmd.actor_id
        or approval["kind"] != "work_execution"
        or approval["decision"] != "approved"
        or approval.get("workItemId") != item.work_item_id
    ):
        raise invalid("The Approval must be a work_execution approval of this WorkItem by you.")
    yield move.draft(approval=approval)
