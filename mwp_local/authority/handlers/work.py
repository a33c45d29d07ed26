"""Planning Commands of the Coordinator (§10.1, §10.4, §11.4, §13.2): propose, authorize
with a complete Work Contract, insert dependencies (cycles refused), unblock, accept a reviewed
result, cancel. Offers and ownership live in ``offers``.

Every state change is looked up in ``WORK_ITEM_TABLE``.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from ...protocol.documents import validate
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import (
    IN_STATE_ACTIONS,
    WORK_ITEM_TABLE,
    WorkItemAction,
    WorkItemState,
    WorkTransition,
)
from ...protocol.timestamps import parse_timestamp
from .. import budgets, delegation, fences, leases
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..isolation import check_group_artifacts
from ..registry import command

W = WorkItemState
T = WorkTransition


def complete_contract(contract: Any, what: str = "The Work Contract") -> dict[str, Any]:
    """Refuse an incomplete Work Contract with ``WORK_CONTRACT_INCOMPLETE`` (MWP-WRK-001)."""
    try:
        validate("work-contract", contract)
    except ProtocolError as exc:
        problems = exc.details.get("problems", [])
        raise ProtocolError(
            ErrorCode.WORK_CONTRACT_INCOMPLETE,
            f"{what} is incomplete or malformed: {exc.explanation.split(': ', 1)[-1]}",
            details={"problems": problems},
            rule="§10.1 every WorkItem carries a complete, machine-readable Work Contract",
        ) from None
    return dict(contract)


def _coordinator_or_owner_human(ctx: Context, cmd: CommandView, *, delegable: bool = False) -> str:
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


def _dependency_cycle(ctx: Context, mission_id: str, start: str, adding: Iterable[str]) -> bool:
    """Whether making ``start`` depend on ``adding`` closes a cycle in the Mission's DAG."""
    stack = list(adding)
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current == start:
            return True
        if current in seen:
            continue
        seen.add(current)
        item = ctx.state.work_items.get(current)
        if item is not None and item.mission_id == mission_id:
            stack.extend(item.dependencies)
    return False


@command("work.propose", actors=("agent", "human"))
def propose(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Any Group member proposes work; no WorkItem (and no obligation) exists yet (§9)."""
    WORK_ITEM_TABLE.lookup(W.NONE, T.PROPOSE)
    proposal_id = cmd.payload.get("proposalId") or ctx.new_id("proposal")
    if proposal_id in ctx.state.proposals:
        raise invalid(f"Proposal {proposal_id} already exists.")
    yield Draft(
        kind="work.proposed",
        group_id=cmd.group_id,
        payload={
            "missionId": ctx.mission_of(cmd.group_id).mission_id,
            "proposalId": proposal_id,
            "proposer": cmd.actor,
            "summary": payload_field(cmd, "summary"),
            "contract": cmd.payload.get("contract"),
            "parentWorkItemId": cmd.payload.get("parentWorkItemId"),
        },
    )


@command("work.authorize", actors=("agent", "human"), aggregate=None)
def authorize(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Coordinator creates a WorkItem with a complete Work Contract (§10.1, §10.4)."""
    role = _coordinator_or_owner_human(ctx, cmd, delegable=True)
    mission = ctx.mission_of(cmd.group_id)
    work_item_id = payload_field(cmd, "workItemId")
    if work_item_id in ctx.state.work_items:
        raise invalid(f"WorkItem {work_item_id} already exists.")
    proposal_id = cmd.payload.get("proposalId")
    source = W.NONE
    if proposal_id is not None:
        proposal = ctx.state.proposals.get(proposal_id)
        if proposal is None or proposal.get("status") != "open":
            raise invalid(f"There is no open Work Proposal {proposal_id}.")
        source = W.PROPOSAL
    WORK_ITEM_TABLE.lookup(source, T.AUTHORIZE)
    contract = complete_contract(cmd.payload.get("contract"))
    for h in contract["inputArtifacts"]:
        if h not in ctx.state.artifacts:
            raise invalid(f"Input Artifact {h} is unknown (provenance must resolve).")
    check_group_artifacts(ctx.state, mission.group_id, contract["inputArtifacts"])
    for dep in contract["dependencyWorkItemIds"]:
        dep_item = ctx.state.work_items.get(dep)
        if dep_item is None or dep_item.mission_id != mission.mission_id:
            raise invalid(f"Dependency {dep} is not a WorkItem of this Mission (§10.4).")
    if parse_timestamp(contract["deadline"]) > parse_timestamp(mission.deadline):
        raise invalid("The WorkItem's deadline is later than the Mission's deadline.")
    budgets.check_allocation(
        ctx.state, ("mission", mission.mission_id), contract["budget"], f"WorkItem {work_item_id}"
    )
    parent = cmd.payload.get("parentWorkItemId")
    if parent is not None:
        ctx.work_item(parent, cmd.group_id)
    grant_id = None
    if role == "delegate":
        if parent is None:
            raise forbidden("A delegate authorizes only descendants of its Grant's target.")
        grant_id = delegation.check_use(
            ctx, cmd, subject=parent, new_item_depth=1, contract=contract
        )["grantId"]
    doc = {
        "workItemId": work_item_id,
        "missionId": mission.mission_id,
        "groupId": mission.group_id,
        "conversationId": cmd.payload.get("conversationId") or ctx.new_id("conversation"),
        "revision": 1,
        "state": "open",
        "exclusive": bool(cmd.payload.get("exclusive", True)),
        "contract": contract,
        "createdBy": (ctx.state.proposals[proposal_id]["proposer"] if proposal_id else cmd.actor),
        "authorizedBy": cmd.actor,
        "createdAt": ctx.now.text,
    }
    yield Draft(
        kind="work.authorized",
        group_id=cmd.group_id,
        work_item_id=work_item_id,
        conversation_id=doc["conversationId"],
        aggregate=("work_item", work_item_id),
        from_state=str(source),
        to_state="open",
        payload={
            "missionId": mission.mission_id,
            "workItem": doc,
            "proposalId": proposal_id,
            "parentWorkItemId": parent,
            "override": role == "owner",
            "grantId": grant_id,
        },
    )


@command("ext.missionweaveprotocol.core.dependency_insert", actors=("agent",), coordinator=True)
def insert_dependency(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Add dependencies to a WorkItem as discoveries occur; cycles are refused (§10.4)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    if item.state not in IN_STATE_ACTIONS[WorkItemAction.INSERT_DEPENDENCY]:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"Dependencies can be added to a WorkItem that is open, offered, queued or blocked; "
            f"{item.work_item_id} is {item.state}.",
        )
    adding = payload_field(cmd, "dependsOn", list)
    for dep in adding:
        dep_item = ctx.state.work_items.get(dep) if isinstance(dep, str) else None
        if dep_item is None or dep_item.mission_id != item.mission_id:
            raise invalid(f"{dep} is not a WorkItem of this Mission.")
        if dep in item.dependencies:
            raise invalid(f"{item.work_item_id} already depends on {dep}.")
    if _dependency_cycle(ctx, item.mission_id, item.work_item_id, adding):
        raise invalid(
            f"Making {item.work_item_id} depend on {', '.join(adding)} would create a cycle; "
            "a Mission's WorkItems must form a DAG.",
            rule="§10.4 dependency cycles are rejected",
        )
    contract = dict(item.contract)
    contract["dependencyWorkItemIds"] = [*item.dependencies, *adding]
    contract["contractVersion"] = item.contract_version + 1
    yield item_draft(
        item,
        "work.contract.revised",
        contract=contract,
        previousContractVersion=item.contract_version,
        renewedAcceptanceRequired=False,
        reason="dependency inserted",
    )


@command("work.unblock", actors=("agent", "human"))
def unblock(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Resolve a blocker: back to the queue while ownership lives, else re-open (§11.4)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    is_owner = item.owner is not None and item.owner["agentId"] == cmd.actor_id
    if not is_owner:
        _coordinator_or_owner_human(ctx, cmd)
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    WORK_ITEM_TABLE.lookup(item.state, T.UNBLOCK, subject=item.work_item_id)
    if item.child_mission_id and ctx.state.missions[item.child_mission_id].state == "active":
        raise invalid("The WorkItem waits for its child Mission; it cannot be unblocked by hand.")
    blocked = ctx.state.leases.get(item.blocked_lease_id or "")
    live = item.owner is not None and blocked is not None and blocked.live_at(ctx.now_us)
    target = WORK_ITEM_TABLE.target(item.state, T.UNBLOCK, W.QUEUED if live else W.OPEN)
    changed = []
    if blocked is not None and blocked.is_active:
        changed.append(leases.close(ctx, blocked, "released" if live else "expired", "unblocked"))
    if live:
        assert item.owner is not None
        agent = ctx.state.agents[item.owner["agentId"]]
        changed.append(
            leases.issue(
                ctx,
                lease_type="ownership",
                mission_id=item.mission_id,
                group_id=item.group_id,
                holder=item.owner["agentId"],
                session_epoch=agent.session_epoch,
                duration_us=ctx.config.ownership_after_checkpoint_us,
                work_item_id=item.work_item_id,
                ownership_epoch=item.ownership_epoch,
                start_by_us=ctx.now_us + ctx.config.ownership_after_checkpoint_us,
            )
        )
    yield item_draft(
        item,
        "work.unblocked",
        to=str(target),
        resolution=payload_field(cmd, "resolution"),
        toState=str(target),
        leases=leases.documents(*changed),
    )


@command("work.accept_result", coordinator=True, aggregate="work_item")
def accept_result(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Coordinator review succeeded: the submission is verified (§13.2, MWP-WRK-025)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    WORK_ITEM_TABLE.lookup(item.state, T.ACCEPT_RESULT, subject=item.work_item_id)
    review = cmd.payload.get("reviewEvidence", [])
    if not isinstance(review, list):
        raise invalid("reviewEvidence must be a list of signed Evidence documents.")
    reviewers = set()
    for evidence in review:
        verified = verify_parsed(profile_for("evidence"), evidence, ctx.state.registry)
        if evidence["workItemId"] != item.work_item_id:
            raise invalid("Review Evidence must be about this WorkItem.")
        reviewers.add(verified.principal.id)
    if item.owner and item.owner["agentId"] == cmd.actor_id and not (reviewers - {cmd.actor_id}):
        raise forbidden(
            "The Coordinator produced this result itself and may not be its sole reviewer; "
            "attach Evidence from another reviewer.",
            rule="§7.2 never the sole reviewer of its own output",
        )
    closed = leases.close_all_of_item(ctx, item, "released", "result accepted")
    yield item_draft(
        item,
        "work.result.accepted",
        to="verified",
        reviewEvidence=review,
        review=cmd.payload.get("review"),
        leases=leases.documents(*closed),
    )


@command("work.cancel", actors=("agent", "human"))
def cancel(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Cancel one WorkItem; its leases are revoked (§10.2, §12)."""
    _coordinator_or_owner_human(ctx, cmd)
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    WORK_ITEM_TABLE.lookup(item.state, T.CANCEL, subject=item.work_item_id)
    closed = leases.close_all_of_item(ctx, item, "revoked", "cancelled")
    yield item_draft(
        item,
        "work.cancelled",
        to="cancelled",
        reason=cmd.payload.get("reason", "cancelled"),
        leases=leases.documents(*closed),
    )
