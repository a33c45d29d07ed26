"""Planning Commands of the Coordinator (§10.1, §10.4, §11.4, §13.2): propose, authorize
with a complete Work Contract, insert dependencies (cycles refused), unblock, accept a reviewed
result, cancel. Offers and ownership live in ``offers``.

Each handler decides its row of the WorkItem table (``decide``: the row's fences, source states
and guards) and keeps only what is its own: payload checks and building the Event, whose kind
and recorded states come from the row.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from typing import Any

from ...protocol.documents import validate
from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.kinds import ExtensionCommandKind as XC
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.tables import (
    IN_STATE_ACTIONS,
    LeaseTransition,
    WorkItemAction,
    WorkItemState,
)
from ...protocol.timestamps import parse_timestamp
from .. import budgets, delegation, fences, leases
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..decide import Subject, decide, named_item
from ..isolation import check_group_artifacts
from ..registry import command
from ..revision import material_changes

W = WorkItemState
LT = LeaseTransition


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


@command(C.WORK_PROPOSE, actors=("agent", "human"))
def propose(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Any Group member proposes work; no WorkItem (and no obligation) exists yet (§9)."""
    move = decide(ctx, cmd, ctx.tables.work_item, lambda: Subject(None, W.NONE))
    proposal_id = cmd.payload.get("proposalId") or ctx.new_id("proposal")
    if proposal_id in ctx.state.proposals:
        raise invalid(f"Proposal {proposal_id} already exists.")
    yield Draft(
        kind=move.event,
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


def _new_item(ctx: Context, cmd: CommandView) -> Subject:
    """The WorkItem ``work.authorize`` creates: not there yet, from an open Work Proposal when
    the Command cites one."""
    work_item_id = payload_field(cmd, "workItemId")
    if work_item_id in ctx.state.work_items:
        raise invalid(f"WorkItem {work_item_id} already exists.")
    proposal_id = cmd.payload.get("proposalId")
    if proposal_id is None:
        return Subject(None, W.NONE)
    proposal = ctx.state.proposals.get(proposal_id)
    if proposal is None or proposal.get("status") != "open":
        raise invalid(f"There is no open Work Proposal {proposal_id}.")
    return Subject(None, W.OPEN_WORK_PROPOSAL)


@command(C.WORK_AUTHORIZE, actors=("agent", "human"), aggregate=None)
def authorize(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Coordinator creates a WorkItem with a complete Work Contract (§10.1, §10.4)."""
    move = decide(ctx, cmd, ctx.tables.work_item, lambda: _new_item(ctx, cmd))
    mission = ctx.mission_of(cmd.group_id)
    work_item_id = cmd.payload["workItemId"]
    proposal_id = cmd.payload.get("proposalId")
    contract = complete_contract(cmd.payload.get("contract"))
    for h in contract["inputArtifacts"]:
        if not ctx.state.has_content(h):
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
    if move.role == "delegate":
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
        "state": str(move.target),
        "exclusive": bool(cmd.payload.get("exclusive", True)),
        "contract": contract,
        "createdBy": (ctx.state.proposals[proposal_id]["proposer"] if proposal_id else cmd.actor),
        "authorizedBy": cmd.actor,
        "createdAt": ctx.now.text,
    }
    yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        work_item_id=work_item_id,
        conversation_id=doc["conversationId"],
        aggregate=("work_item", work_item_id),
        from_state=str(move.source),
        to_state=str(move.target),
        payload={
            "missionId": mission.mission_id,
            "workItem": doc,
            "proposalId": proposal_id,
            "parentWorkItemId": parent,
            "override": move.role == "owner",
            "grantId": grant_id,
        },
    )


@command(XC.WORK_DEPENDENCY_ADD, actors=("agent",), coordinator=True)
def add_dependency(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Add dependencies to a WorkItem as discoveries occur; cycles are refused (§10.4)."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    if item.state not in IN_STATE_ACTIONS[WorkItemAction.ADD_DEPENDENCY]:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"Dependencies can be added to a WorkItem that is open, offered, queued or blocked; "
            f"{item.work_item_id} is {item.state}.",
        )
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
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
    # A material revision of an owned WorkItem needs renewed acceptance (§10.1): the owner's
    # leases are revoked with it, so its acceptance no longer counts.
    renewed = bool(material_changes(item.contract, contract)) and item.owner is not None
    fenced = (
        leases.close_all_of_item(
            ctx, item, LT.REVOKE, "material contract revision: renewed acceptance required"
        )
        if renewed
        else []
    )
    extra: dict[str, Any] = {"leases": leases.documents(*fenced)} if fenced else {}
    yield item_draft(
        item,
        E.WORK_CONTRACT_REVISED,
        contract=contract,
        previousContractVersion=item.contract_version,
        renewedAcceptanceRequired=renewed,
        reason="dependency inserted",
        **extra,
    )


@command(C.WORK_UNBLOCK, actors=("agent", "human"))
def unblock(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Resolve a blocker: back to the queue while ownership lives, else re-open (§11.4)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item, blocked, live = move.item, move.lease, move.ownership_live
    changed = []
    if blocked is not None and blocked.is_active:
        changed.append(leases.close(ctx, blocked, LT.RELEASE if live else LT.EXPIRE, "unblocked"))
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
    yield move.draft(
        resolution=payload_field(cmd, "resolution"),
        toState=str(move.target),
        leases=leases.documents(*changed),
    )


@command(C.WORK_ACCEPT_RESULT, coordinator=True, aggregate="work_item")
def accept_result(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Coordinator review succeeded: the submission is verified (§13.2, MWP-WRK-025); the
    table's ``review_passed`` guard has checked the review the Command carries."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item = move.item
    # The review guard (authority.review_rules) verified the Evidence and the §13.2 review.
    review = cmd.payload.get("reviewEvidence", [])
    closed = leases.close_all_of_item(ctx, item, LT.RELEASE, "result accepted")
    yield move.draft(
        reviewEvidence=review,
        review=cmd.payload.get("review"),
        leases=leases.documents(*closed),
    )


@command(C.WORK_CANCEL, actors=("agent", "human"))
def cancel(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Cancel one WorkItem; its leases are revoked (§10.2, §12)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    closed = leases.close_all_of_item(ctx, move.item, LT.REVOKE, "cancelled")
    yield move.draft(
        reason=cmd.payload.get("reason", "cancelled"),
        leases=leases.documents(*closed),
    )
