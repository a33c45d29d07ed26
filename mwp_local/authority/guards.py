"""The guards the state tables name, one registry (``decision.GUARDS``), one function each.

A row of ``mwp_local.protocol.tables`` names its fences and guards; this module says what each
name checks and which section-19 code refuses a Command that fails it. Guards read the state
through the ``Decision`` (and its ``Context``), never change it, and may record what they found
for the handler (``Decision.role``, ``lease``, ``offer``, ``grant_id``); a chooser sets
``Decision.target`` for a row with several targets. The explanations are the learner's: each
names the current and the presented values.
"""

from __future__ import annotations

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.tables import MissionState, OfferStatus, OfferTransition, WorkItemState
from . import delegation, fences, offline, retries, review_rules
from .command import CommandView
from .context import Context, forbidden, invalid, payload_field
from .decision import Decision, guard
from .model import MissionRecord, OfferRecord, WorkItemRecord

W = WorkItemState

# --------------------------------------------------------------------------- who may act


def coordinator_or_mission_owner(ctx: Context, cmd: CommandView, *, delegable: bool = False) -> str:
    """Who may author work (§9.1): ``"coordinator"``, ``"owner"`` (the MissionOwner's audited
    emergency override) or, when ``delegable``, ``"delegate"`` (the caller must then check the
    cited Grant with ``delegation.check_use``)."""
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_type == "agent" and cmd.actor_id == mission.coordinator_agent_id:
        fences.coordinator(ctx, cmd)
        return "coordinator"
    if cmd.actor_id == mission.owner_id:
        return "owner"
    if delegable and cmd.actor_type == "agent" and "grantId" in cmd.payload:
        return "delegate"
    raise forbidden(
        f"{cmd.kind} needs the current Coordinator, a scoped delegate citing its Grant, or the "
        "MissionOwner's audited override.",
        rule="§9.1 only the current Coordinator, a MissionOwner override or a delegate",
    )


def _cmd(d: Decision) -> CommandView:
    assert d.cmd is not None, "this guard checks a Command"
    return d.cmd


@guard("coordinator_owner_or_delegate")
def _coordinator_owner_or_delegate(d: Decision) -> None:
    """The current Coordinator, the MissionOwner's override, or a delegate citing a Grant."""
    d.role = coordinator_or_mission_owner(d.ctx, _cmd(d), delegable=True)


@guard("coordinator_or_mission_owner")
def _coordinator_or_mission_owner(d: Decision) -> None:
    """The current Coordinator or the MissionOwner's override."""
    d.role = coordinator_or_mission_owner(d.ctx, _cmd(d))


@guard("work_owner_or_coordinator")
def _work_owner_or_coordinator(d: Decision) -> None:
    """The WorkItem's owner, the current Coordinator or the MissionOwner's override."""
    item, cmd = d.item, _cmd(d)
    if item.owner is not None and item.owner["agentId"] == cmd.actor_id:
        d.role = "work_owner"
    else:
        d.role = coordinator_or_mission_owner(d.ctx, cmd)


@guard("delegate_within_grant")
def _delegate_within_grant(d: Decision) -> None:
    """A delegate's Grant covers this WorkItem now (scope, capabilities, budget, epochs)."""
    if d.role != "delegate":
        return
    ctx, cmd, item = d.ctx, _cmd(d), d.item
    grant = ctx.state.grants.get(cmd.payload.get("grantId", ""), {})
    d.grant_id = delegation.check_use(
        ctx,
        cmd,
        subject=item.work_item_id,
        contract=item.contract,
        budget_already_counted=item.work_item_id in grant.get("items", ()),
    )["grantId"]


def _owner_only(ctx: Context, cmd: CommandView, mission: MissionRecord) -> None:
    if cmd.actor_id != mission.owner_id:
        raise forbidden(
            f"Only the MissionOwner ({mission.owner_id}) may do this.", rule="§7.1 MissionOwner"
        )


@guard("mission_owner")
def _mission_owner(d: Decision) -> None:
    """The MissionOwner itself."""
    _owner_only(d.ctx, _cmd(d), d.mission)


@guard("mission_owner_or_policy")
def _mission_owner_or_policy(d: Decision) -> None:
    """The MissionOwner, or an Organization service acting as policy."""
    cmd = _cmd(d)
    if cmd.actor_type != "service":
        _owner_only(d.ctx, cmd, d.mission)


@guard("coordinator_or_owner_with_lease")
def _coordinator_or_owner_with_lease(d: Decision) -> None:
    """The current Coordinator (not owning the item), or the owner at its Ownership Epoch,
    citing its current Execution Lease while the item is executing."""
    ctx, cmd, item = d.ctx, _cmd(d), d.item
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_id == mission.coordinator_agent_id and (
        item.owner is None or item.owner["agentId"] != cmd.actor_id
    ):
        fences.coordinator(ctx, cmd)
    else:
        fences.owner(ctx, cmd, item)
        if item.state is W.ACTIVE:
            fences.execution_lease(ctx, cmd, item)


# --------------------------------------------------------------------------- fences


@guard("compare_and_set")
def _compare_and_set(d: Decision) -> None:
    """``expectedRevision``, when given, is the WorkItem's current revision (§15.3)."""
    item = d.item
    fences.revision(item.revision, _cmd(d), f"WorkItem {item.work_item_id}")


@guard("current_owner")
def _current_owner(d: Decision) -> None:
    """The actor owns the WorkItem at its current Ownership Epoch (§11.3); for buffered
    progress, the owner and epoch are unchanged since the binding and its historical lease is
    this item's, within the lease-grace window (§11.5)."""
    if d.binding is not None:
        _item, d.lease = offline.check(d.ctx, _cmd(d), d.binding)
        return
    fences.owner(d.ctx, _cmd(d), d.item)


@guard("current_execution_lease")
def _current_execution_lease(d: Decision) -> None:
    """The Command cites the current, unexpired Execution Lease (§11.3, MWP-WRK-013); buffered
    progress had its historical lease checked with the owner."""
    if d.binding is None:
        d.lease = fences.execution_lease(d.ctx, _cmd(d), d.item)


# --------------------------------------------------------------------------- offers


@guard("no_live_owner")
def _no_live_owner(d: Decision) -> None:
    """No owner still holds live ownership: an expired owner is fenced by the re-offer."""
    ctx, item = d.ctx, d.item
    if item.owner is not None and fences.ownership_live(ctx, item):
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"WorkItem {item.work_item_id} still has a live owner "
            f"({item.owner['agentId']}, Ownership Epoch {item.ownership_epoch}); it can be "
            "re-offered only once that ownership has expired or been released.",
            rule="§10.2 work.offer requires no live owner",
        )


@guard("offer_not_lost")
def _offer_not_lost(d: Decision) -> None:
    """The actor's latest offer did not lose the race to another candidate (§10.3)."""
    ctx, cmd, item = d.ctx, _cmd(d), d.item
    mine = [ctx.state.offers[o] for o in item.offer_ids]
    mine = [o for o in mine if o.agent_id == cmd.actor_id]
    if mine and mine[-1].status == OfferStatus.LOST_RACE:
        raise ProtocolError(
            ErrorCode.WORK_ALREADY_OWNED,
            f"Another candidate already won {item.work_item_id} "
            f"(Ownership Epoch {item.ownership_epoch}); your offer was withdrawn.",
            rule="§10.3 the first valid acceptance wins",
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


@guard("offer_for_actor")
def _offer_for_actor(d: Decision) -> None:
    """The offer accepted (the one named, else the actor's latest) was made to the actor."""
    d.offer = _offer_for(d.ctx, _cmd(d), d.item)


@guard("offer_not_expired")
def _offer_not_expired(d: Decision) -> None:
    """The offer may still be accepted (the offer table) and has not expired (§10.2)."""
    record, ctx = d.offer, d.ctx
    assert record is not None, "offer_for_actor finds the offer first"
    acceptable = ctx.tables.offer.is_allowed(OfferStatus(record.status), OfferTransition.ACCEPT)
    if not acceptable or ctx.now_us >= record.expires_us:
        why = (
            f"it expired at {record.expires_at}"
            if record.status in (OfferStatus.PENDING, OfferStatus.EXPIRED)
            else f"it is {record.status}"
        )
        raise ProtocolError(
            ErrorCode.WORK_OFFER_EXPIRED,
            f"Offer {record.offer_id} is no longer valid: {why}.",
            rule="§10.2 offer expiry invalidates acceptance",
        )


@guard("offer_for_current_contract")
def _offer_for_current_contract(d: Decision) -> None:
    """The offer was made for the contract version in force (§10.1)."""
    record, item = d.offer, d.item
    assert record is not None, "offer_for_actor finds the offer first"
    if record.contract_version != item.contract_version:
        raise ProtocolError(
            ErrorCode.WORK_OFFER_EXPIRED,
            f"Offer {record.offer_id} was for contract version {record.contract_version}; the "
            f"contract is now version {item.contract_version} and needs a new offer.",
            rule="§10.1 a revised contract requires renewed acceptance",
        )


# --------------------------------------------------------------------------- execution


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


@guard("execution_approval_required")
def _execution_approval_required(d: Decision) -> None:
    """The WorkItem's contract or the Mission's policy puts it behind an approval (§12)."""
    item = d.item
    if not needs_execution_approval(d.ctx, item):
        raise invalid(f"WorkItem {item.work_item_id} needs no execution approval.")


@guard("approver_authorized")
def _approver_authorized(d: Decision) -> None:
    """A human where the contract requires one; the MissionOwner or Organization policy."""
    ctx, cmd, item = d.ctx, _cmd(d), d.item
    mission = ctx.mission_of(cmd.group_id)
    required = item.contract["executionApproval"]
    if required == "human_required" and cmd.actor_type != "human":
        raise forbidden("This WorkItem's contract requires a human to approve execution.")
    if cmd.actor_id != mission.owner_id and cmd.actor_type != "service":
        raise forbidden("Only the MissionOwner or Organization policy grants execution approval.")


@guard("ownership_live")
def _ownership_live(d: Decision) -> None:
    """The ownership lease is live: its start-by deadline has not passed (§11.3)."""
    ctx, item = d.ctx, d.item
    ownership = ctx.state.leases.get(item.ownership_lease_id or "")
    if ownership is None or not ownership.live_at(ctx.now_us):
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            f"The ownership lease of {item.work_item_id} has expired (start-by "
            f"{ownership.start_by if ownership else 'unknown'}); the item may be reassigned.",
            rule="§11.3 an ownership grant has a start-by deadline",
        )
    d.lease = ownership


@guard("retry_attempt_allowed")
def _retry_attempt_allowed(d: Decision) -> None:
    """A new attempt keeps to the contract's retry policy: attempts, backoff, deadline (§11.4)."""
    retries.check_new_attempt(d.item, d.ctx.now_us)


@guard("retry_attempts_left")
def _retry_attempts_left(d: Decision) -> None:
    """A failed WorkItem is offered again only while its contract allows another attempt."""
    retries.check_reoffer(d.item)


@guard("review_passed")
def _review_passed(d: Decision) -> None:
    """The result rests on a §13.2 review the Command carries (``authority.review_rules``)."""
    cmd = _cmd(d)
    review_rules.check_review(d.item, cmd.payload, cmd.actor_id, d.ctx.state.registry)


@guard("execution_approved")
def _execution_approved(d: Decision) -> None:
    """A WorkItem behind an approval gate has its approval (§12)."""
    item = d.item
    if needs_execution_approval(d.ctx, item) and not item.execution_approved:
        raise ProtocolError(
            ErrorCode.APPROVAL_REQUIRED,
            f"WorkItem {item.work_item_id} is awaiting execution approval "
            f"({item.contract['executionApproval']}, risk {item.contract['sideEffectRisk']}).",
            rule="§12 awaiting_execution_approval",
        )


@guard("dependencies_met")
def _dependencies_met(d: Decision) -> None:
    """Every dependency is verified (§10.4)."""
    ctx, item = d.ctx, d.item
    pending = [
        dep for dep in item.dependencies if ctx.state.work_items[dep].state is not W.VERIFIED
    ]
    if pending:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"WorkItem {item.work_item_id} is not eligible: its dependencies "
            f"{', '.join(pending)} are not verified yet.",
            details={"pendingDependencies": pending},
            rule="§10.4 eligible only when dependencies satisfy the dependency policy",
        )


# --------------------------------------------------------------------------- blocking


@guard("child_mission_settled")
def _child_mission_settled(d: Decision) -> None:
    """A WorkItem waiting for its running child Mission is not unblocked by hand (§14)."""
    ctx, item = d.ctx, d.item
    if (
        item.child_mission_id
        and ctx.state.missions[item.child_mission_id].state == MissionState.ACTIVE
    ):
        raise invalid("The WorkItem waits for its child Mission; it cannot be unblocked by hand.")


@guard("ownership_live_chooses_queued")
def _ownership_live_chooses_queued(d: Decision) -> None:
    """Chooser: back to the queue while the owner's blocked lease lives, else re-open."""
    ctx, item = d.ctx, d.item
    blocked = ctx.state.leases.get(item.blocked_lease_id or "")
    d.lease = blocked
    d.ownership_live = (
        item.owner is not None and blocked is not None and blocked.live_at(ctx.now_us)
    )
    d.target = W.QUEUED if d.ownership_live else W.OPEN


@guard("child_failure_policy_chooses")
def _child_failure_policy_chooses(d: Decision) -> None:
    """Chooser: the child Mission's declared failure policy fails the parent WorkItem, or keeps
    it blocked for replanning (§14)."""
    assert d.child is not None, "a child Mission's outcome drives this row"
    d.target = W.FAILED if d.child.child_failure_policy == "fail" else W.BLOCKED


@guard("mission_terminal_chooses")
def _mission_terminal_chooses(d: Decision) -> None:
    """Chooser: a cancelled Mission cancels its unfinished WorkItems, a failed one fails them."""
    mission = d.ctx.state.missions[d.item.mission_id]
    d.target = W.CANCELLED if mission.state is MissionState.CANCELLED else W.FAILED


# --------------------------------------------------------------------------- Missions


@guard("linked_approved_mission")
def _linked_approved_mission(d: Decision) -> None:
    """A follow-up links to an approved Mission (§7.1)."""
    ctx, cmd = d.ctx, _cmd(d)
    previous_id = payload_field(cmd, "followUpToMissionId")
    previous = ctx.state.missions.get(previous_id)
    if previous is None or previous.state is not MissionState.APPROVED:
        raise invalid(f"A follow-up must link to an approved Mission; {previous_id} is not one.")


@guard("same_mission_owner")
def _same_mission_owner(d: Decision) -> None:
    """Only the linked Mission's own human MissionOwner creates its follow-up (§7.1)."""
    ctx, cmd = d.ctx, _cmd(d)
    previous = ctx.state.missions[cmd.payload["followUpToMissionId"]]
    if previous.owner_id != cmd.actor_id:
        raise forbidden("Only the same human MissionOwner may create a follow-up Mission.")


def unfinished_work(ctx: Context, mission: MissionRecord) -> tuple[list[str], bool]:
    """The Mission's WorkItems not yet verified or cancelled, and whether any is verified
    (what ``mission.submit_for_approval`` requires after its payload checks, §7.3)."""
    items = [i for i in ctx.state.work_items.values() if i.mission_id == mission.mission_id]
    unfinished = [i.work_item_id for i in items if i.state not in (W.VERIFIED, W.CANCELLED)]
    return unfinished, any(i.state is W.VERIFIED for i in items)


# --------------------------------------------------------------------------- Groups


@guard("archival_service")
def _archival_service(d: Decision) -> None:
    """Only an Organization archival service archives a Group (§6.4, §15.2)."""
    ctx, cmd = d.ctx, _cmd(d)
    if cmd.actor_type != "service" or cmd.actor_id not in ctx.identity.control_services:
        raise forbidden(
            f"{cmd.actor_id} may not archive a Group: archival is Organization-owned, sent by an "
            "authorized archival service.",
            rule="§15.2 the Organization-owned group_archive Command",
        )


@guard("mission_finished")
def _mission_finished(d: Decision) -> None:
    """The Group's Mission, and every child Mission of it, has ended: nothing may happen in
    the Group any more, and no child's outcome still has to reach it (§7.4)."""
    ctx, cmd = d.ctx, _cmd(d)
    mission = ctx.mission_of(cmd.group_id)
    ended = ctx.tables.mission.terminal
    open_children = sorted(
        m.mission_id
        for m in ctx.state.missions.values()
        if m.parent_mission_id == mission.mission_id and m.state not in ended
    )
    if mission.state not in ended or open_children:
        still = f"Mission {mission.mission_id} is {mission.state}"
        if open_children:
            still = f"its child Mission {open_children[0]} has not ended"
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"The Group cannot be archived yet: {still}. A Group is archived once its Mission "
            f"is {', '.join(sorted(map(str, ended)))} and its child Missions have ended.",
            details={"missionId": mission.mission_id, "missionState": str(mission.state)},
            rule="§7.4 archival produces the final snapshot of an ended Mission",
        )
