"""Mission lifecycle Commands (§7, §14): creation, Coordinator lease, approval, termination.

Every state change goes through ``MISSION_TABLE``; terminal Mission states propagate to the
Mission's unfinished WorkItems (§10.2 last row) and to child Missions, and a child Mission's
approval or failure propagates to its parent WorkItem (§14).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.hashing import is_sha256_id
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import (
    MISSION_TABLE,
    WORK_ITEM_TABLE,
    MissionState,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)
from ...protocol.timestamps import parse_timestamp
from .. import budgets, leases
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..model import MissionRecord
from ..registry import command

MT = MissionTransition


def _mission_document(
    ctx: Context,
    cmd: CommandView,
    *,
    mission_id: str,
    group_id: str,
    owner: dict[str, str],
    coordinator: dict[str, Any],
    parent: dict[str, Any] | None = None,
    follow_up_to: str | None = None,
) -> dict[str, Any]:
    p = cmd.payload
    for name in ("objective", "definitionOfDone", "budget", "deadline"):
        if name not in p:
            raise invalid(f"A Mission must declare its {name} (§7.1).", member=name)
    doc: dict[str, Any] = {
        "missionId": mission_id,
        "groupId": group_id,
        "revision": 1,
        "objective": p["objective"],
        "definitionOfDone": p["definitionOfDone"],
        "missionOwner": owner,
        "coordinator": coordinator,
        "state": "active",
        "budget": p["budget"],
        "deadline": p["deadline"],
        "approvalPolicy": p.get(
            "approvalPolicy", {"finalHumanApproval": True, "highRiskExecutionApproval": True}
        ),
        "createdAt": ctx.now.text,
    }
    if parent is not None:
        doc["parent"] = parent
    if follow_up_to is not None:
        doc["followUpToMissionId"] = follow_up_to
    from ...protocol.documents import validate

    try:
        validate("mission", doc)
    except ProtocolError as exc:
        raise invalid(f"The Mission it would create is not valid: {exc.explanation}") from None
    return doc


def _membership_document(
    ctx: Context,
    *,
    mission_id: str,
    group_id: str,
    member: dict[str, str],
    role: str,
    epoch: int,
    state: str = "active",
    scopes: list[str] | None = None,
    visibility_start: int = 0,
) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "membershipId": ctx.new_id("membership"),
        "missionId": mission_id,
        "groupId": group_id,
        "member": member,
        "role": role,
        "state": state,
        "membershipEpoch": epoch,
        "scopes": scopes or ["group:all"],
        "visibilityStartSequence": visibility_start,
        "grantedAt": ctx.now.text,
    }
    if state == "active":
        doc["activatedAt"] = ctx.now.text
    return doc


def _coordinator_for(
    ctx: Context, agent_id: str, mission_id: str, group_id: str, epoch: int
) -> tuple[dict[str, Any], Any]:
    agent = ctx.state.agents.get(agent_id)
    if agent is None or agent.session_epoch == 0:
        raise invalid(f"Coordinator {agent_id} is not a registered Agent with an open Session.")
    lease = leases.issue(
        ctx,
        lease_type="coordinator",
        mission_id=mission_id,
        group_id=group_id,
        holder=agent_id,
        session_epoch=agent.session_epoch,
        duration_us=ctx.config.coordinator_lease_us,
        coordinator_epoch=epoch,
    )
    coordinator = {
        "agentId": agent_id,
        "agentCardVersion": agent.card_version,
        "coordinatorEpoch": epoch,
        "leaseId": lease.lease_id,
    }
    return coordinator, lease


def _create(
    ctx: Context,
    cmd: CommandView,
    *,
    owner: dict[str, str],
    parent: dict[str, Any] | None = None,
    follow_up_to: str | None = None,
    group_id: str | None = None,
    budget_parent: tuple[str, str] | None = None,
) -> Generator[Draft, Any, None]:
    mission_id = payload_field(cmd, "missionId")
    group_id = group_id or cmd.group_id
    assert group_id is not None
    if mission_id in ctx.state.missions:
        raise invalid(f"Mission {mission_id} already exists.")
    if cmd.payload.get("groupId", group_id) != group_id:
        raise invalid("payload.groupId must name the Group being created.")
    coordinator_id = payload_field(cmd, "coordinatorAgentId")
    coordinator, lease = _coordinator_for(ctx, coordinator_id, mission_id, group_id, 1)
    mission = _mission_document(
        ctx,
        cmd,
        mission_id=mission_id,
        group_id=group_id,
        owner=owner,
        coordinator=coordinator,
        parent=parent,
        follow_up_to=follow_up_to,
    )
    if budget_parent is not None:
        budgets.check_allocation(ctx.state, budget_parent, mission["budget"], "The child Mission")
    conversation = cmd.payload.get("mainConversationId") or ctx.new_id("conversation")
    group = {
        "groupId": group_id,
        "missionId": mission_id,
        "state": "active",
        "mainConversationId": conversation,
        "createdAt": ctx.now.text,
    }
    MISSION_TABLE.lookup(MissionState.NONE, MT(cmd.kind))
    yield Draft(
        kind="mission.created",
        group_id=group_id,
        aggregate=("mission", mission_id),
        conversation_id=conversation,
        payload={
            "missionId": mission_id,
            "mission": mission,
            "group": group,
            "budgetParent": list(budget_parent) if budget_parent else None,
            "childFailurePolicy": cmd.payload.get("childFailurePolicy", "block"),
            "leases": leases.documents(lease),
        },
    )
    for member, role in (
        (owner, "mission_owner"),
        ({"type": "agent", "id": coordinator_id}, "coordinator"),
    ):
        yield Draft(
            kind="membership.changed",
            group_id=group_id,
            payload={
                "missionId": mission_id,
                "membership": _membership_document(
                    ctx, mission_id=mission_id, group_id=group_id, member=member, role=role, epoch=1
                ),
            },
        )


@command("mission.create", scope="create", actors=("human",))
def create(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """A human MissionOwner creates a root Mission, its Group and a Coordinator lease."""
    yield from _create(ctx, cmd, owner=cmd.actor)


@command("mission.create_follow_up", scope="create", actors=("human",))
def create_follow_up(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The same human creates a follow-up linked to an approved Mission (§7.1)."""
    previous_id = payload_field(cmd, "followUpToMissionId")
    previous = ctx.state.missions.get(previous_id)
    if previous is None or previous.state is not MissionState.APPROVED:
        raise invalid(f"A follow-up must link to an approved Mission; {previous_id} is not one.")
    if previous.owner_id != cmd.actor_id:
        raise forbidden("Only the same human MissionOwner may create a follow-up Mission.")
    yield from _create(ctx, cmd, owner=cmd.actor, follow_up_to=previous_id)


@command("mission.create_child", actors=("agent",), coordinator=True)
def create_child(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Parent Coordinator promotes a WorkItem to a child Mission (§14)."""
    parent_mission = ctx.mission_of(cmd.group_id)
    item = ctx.work_item(cmd.payload.get("parentWorkItemId"), cmd.group_id)
    WORK_ITEM_TABLE.lookup(item.state, WorkTransition.CREATE_CHILD, subject=item.work_item_id)
    child_group = payload_field(cmd, "childGroupId")
    if child_group in ctx.state.groups:
        raise invalid(f"Group {child_group} already exists.")
    depth = parent_mission.depth + 1
    if depth > ctx.config.max_child_depth and not cmd.payload.get("depthApproved"):
        raise ProtocolError(
            ErrorCode.APPROVAL_REQUIRED,
            f"A child at depth {depth} exceeds the Organization's default maximum depth "
            f"{ctx.config.max_child_depth}; it needs MissionOwner or policy approval.",
            rule="§14 default maximum depth",
        )
    _ancestry_is_acyclic(ctx, parent_mission, payload_field(cmd, "missionId"))
    deadline = parse_timestamp(payload_field(cmd, "deadline"))
    if deadline > parse_timestamp(item.contract["deadline"]):
        raise invalid("A child Mission's deadline must not be later than its parent WorkItem's.")
    child_id = cmd.payload["missionId"]
    revoked = leases.close_all_of_item(ctx, item, "revoked", "child_mission_created")
    yield item_draft(
        item,
        "mission.child.created",
        to=str(WorkItemState.BLOCKED),
        childMissionId=child_id,
        childGroupId=child_group,
        depth=depth,
        leases=leases.documents(*revoked),
    )
    yield from _create(
        ctx,
        cmd,
        owner=cmd.actor,
        parent={
            "missionId": parent_mission.mission_id,
            "workItemId": item.work_item_id,
            "depth": depth,
        },
        group_id=child_group,
        budget_parent=("work_item", item.work_item_id),
    )


def _ancestry_is_acyclic(ctx: Context, parent: MissionRecord, child_id: str) -> None:
    seen = {child_id}
    current: MissionRecord | None = parent
    while current is not None:
        if current.mission_id in seen:
            raise invalid("Mission ancestry would contain a cycle (§20).")
        seen.add(current.mission_id)
        current = ctx.state.missions.get(current.parent_mission_id or "")


@command("mission.assign_coordinator", actors=("human", "service"), aggregate="mission")
def assign_coordinator(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner (or policy) appoints a Coordinator with a higher epoch (§7.2)."""
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_type == "human" and cmd.actor_id != mission.owner_id:
        raise forbidden("Only the MissionOwner or Organization policy appoints a Coordinator.")
    if mission.state in MISSION_TABLE.terminal:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"Mission {mission.mission_id} is {mission.state}; it takes no new Coordinator.",
        )
    agent_id = payload_field(cmd, "coordinatorAgentId")
    epoch = mission.coordinator_epoch + 1
    coordinator, lease = _coordinator_for(
        ctx, agent_id, mission.mission_id, mission.group_id, epoch
    )
    old = ctx.state.leases.get(mission.coordinator_lease_id or "")
    closed = (
        [leases.close(ctx, old, "revoked", "coordinator_replaced")] if old and old.is_active else []
    )
    yield Draft(
        kind="mission.coordinator.assigned",
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload={
            "missionId": mission.mission_id,
            "coordinator": coordinator,
            "previousCoordinatorAgentId": mission.coordinator_agent_id,
            "previousCoordinatorEpoch": mission.coordinator_epoch,
            "reason": cmd.payload.get("reason", "replacement"),
            "leases": leases.documents(*closed, lease),
        },
    )
    existing = ctx.state.memberships.get((mission.group_id, agent_id))
    if existing is None or existing.role != "coordinator" or existing.state != "active":
        yield Draft(
            kind="membership.changed",
            group_id=cmd.group_id,
            payload={
                "missionId": mission.mission_id,
                "membership": _membership_document(
                    ctx,
                    mission_id=mission.mission_id,
                    group_id=mission.group_id,
                    member={"type": "agent", "id": agent_id},
                    role="coordinator",
                    epoch=(existing.epoch + 1) if existing else 1,
                ),
            },
        )


@command("mission.renew_coordinator", coordinator=True, aggregate="mission")
def renew_coordinator(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The current Coordinator renews its lease (compare-and-set on the lease)."""
    mission = ctx.mission_of(cmd.group_id)
    lease = ctx.state.leases[mission.coordinator_lease_id or ""]
    if cmd.payload.get("leaseId") != lease.lease_id:
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            f"The renewal cites lease {cmd.payload.get('leaseId')}, not the current Coordinator "
            f"lease {lease.lease_id}.",
            rule="§7.2 renewable Coordinator lease",
        )
    renewed = leases.renew(ctx, lease, ctx.config.coordinator_lease_us)
    yield Draft(
        kind="mission.coordinator.renewed",
        group_id=cmd.group_id,
        payload={"missionId": mission.mission_id, "leases": leases.documents(renewed)},
    )


@command("mission.submit_for_approval", coordinator=True, aggregate="mission")
def submit_for_approval(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Submit an exact Mission revision and Artifact set for approval (§7.3)."""
    mission = ctx.mission_of(cmd.group_id)
    MISSION_TABLE.lookup(mission.state, MT.SUBMIT_FOR_APPROVAL, subject=mission.mission_id)
    hashes = payload_field(cmd, "artifactHashes", list)
    if not hashes or not all(is_sha256_id(h) for h in hashes) or len(set(hashes)) != len(hashes):
        raise invalid("artifactHashes must be a non-empty list of distinct sha256: hashes.")
    for h in hashes:
        artifact = ctx.state.artifacts.get(h)
        if artifact is None or artifact["missionId"] != mission.mission_id:
            raise invalid(f"Artifact {h} was not published in this Mission.")
    items = [i for i in ctx.state.work_items.values() if i.mission_id == mission.mission_id]
    unfinished = [
        i.work_item_id
        for i in items
        if i.state not in (WorkItemState.VERIFIED, WorkItemState.CANCELLED)
    ]
    if unfinished or not any(i.state is WorkItemState.VERIFIED for i in items):
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            "Before submission every required WorkItem must be reviewed and verified; "
            f"unfinished: {', '.join(unfinished) or 'none verified yet'}.",
            details={"unfinished": unfinished},
            rule="§7.3 the Coordinator reviews all required results before submission",
        )
    yield Draft(
        kind="mission.submitted_for_approval",
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload={
            "missionId": mission.mission_id,
            "missionRevision": mission.revision + 1,
            "artifactHashes": sorted(hashes),
        },
    )


def _owner_only(ctx: Context, cmd: CommandView, mission: MissionRecord) -> None:
    if cmd.actor_id != mission.owner_id:
        raise forbidden(
            f"Only the MissionOwner ({mission.owner_id}) may do this.", rule="§7.1 MissionOwner"
        )


def _approval(
    ctx: Context, cmd: CommandView, mission: MissionRecord, decision: str
) -> dict[str, Any]:
    approval = payload_field(cmd, "approval", dict)
    verified = verify_parsed(profile_for("approval"), approval, ctx.state.registry)
    if verified.principal.id != cmd.actor_id:
        raise forbidden("The Approval must be signed by the Command's actor.")
    expected_kind = "child_mission" if mission.parent_mission_id else "mission_final"
    problems = []
    if approval["kind"] != expected_kind:
        problems.append(f"kind must be {expected_kind}")
    if approval["decision"] != decision:
        problems.append(f"decision must be {decision}")
    if approval["missionId"] != mission.mission_id or approval["groupId"] != mission.group_id:
        problems.append("it names another Mission or Group")
    if approval["missionRevision"] != mission.submitted_revision:
        problems.append(
            f"it approves revision {approval['missionRevision']}, but revision "
            f"{mission.submitted_revision} was submitted"
        )
    if sorted(approval["artifactHashes"]) != sorted(mission.submitted_artifacts):
        problems.append("its Artifact set differs from the submitted set")
    if problems:
        raise invalid("The Approval does not match the submission: " + "; ".join(problems) + ".")
    return dict(approval)


@command("mission.approve", actors=("human", "agent"), aggregate="mission", cas=True)
def approve(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner approves the exact submitted revision and Artifact set (§4.10)."""
    mission = ctx.mission_of(cmd.group_id)
    _owner_only(ctx, cmd, mission)
    MISSION_TABLE.lookup(mission.state, MT.APPROVE, subject=mission.mission_id)
    approval = _approval(ctx, cmd, mission, "approved")
    approved = yield Draft(
        kind="mission.approved",
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload={"missionId": mission.mission_id, "approval": approval},
    )
    if mission.parent_work_item_id:
        yield from _to_parent(ctx, mission, WorkTransition.CHILD_APPROVED, approved, "approved")


@command("mission.request_changes", actors=("human", "agent"), aggregate="mission")
def request_changes(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner asks for changes: the same Mission reopens (§7.3)."""
    mission = ctx.mission_of(cmd.group_id)
    _owner_only(ctx, cmd, mission)
    MISSION_TABLE.lookup(mission.state, MT.REQUEST_CHANGES, subject=mission.mission_id)
    reason = payload_field(cmd, "reason")
    payload: dict[str, Any] = {"missionId": mission.mission_id, "reason": reason}
    if "approval" in cmd.payload:
        payload["approval"] = _approval(ctx, cmd, mission, "changes_requested")
    yield Draft(
        kind="mission.changes_requested",
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload=payload,
    )


@command("mission.cancel", actors=("human", "agent", "service"), aggregate="mission")
def cancel(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner (or policy) cancels the Mission; cancellation propagates down (§7.1)."""
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_type != "service":
        _owner_only(ctx, cmd, mission)
    yield from terminate_mission(
        ctx, mission, MT.CANCEL, cmd.payload.get("reason", "cancelled"), None
    )


@command("mission.terminate", actors=("agent", "service"), aggregate="mission")
def terminate(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Coordinator or policy ends the Mission as failed (§7.1)."""
    mission = ctx.mission_of(cmd.group_id)
    yield from terminate_mission(
        ctx, mission, MT.TERMINATE, cmd.payload.get("reason", "terminated"), None
    )


def terminate_mission(
    ctx: Context,
    mission: MissionRecord,
    transition: MissionTransition,
    reason: str,
    cause: tuple[str, str] | None,
) -> Generator[Draft, Any, None]:
    """Move a Mission to cancelled/failed and propagate to its WorkItems and children."""
    target = MISSION_TABLE.lookup(mission.state, transition, subject=mission.mission_id).targets[0]
    automatic = cause is not None
    ended = yield Draft(
        kind="mission.cancelled" if target is MissionState.CANCELLED else "mission.terminated",
        group_id=mission.group_id,
        aggregate=("mission", mission.mission_id),
        cause=cause,
        actor={"type": "service", "id": ctx.identity.authority_id} if automatic else None,
        payload={"missionId": mission.mission_id, "reason": reason, "propagation": str(transition)},
    )
    item_target = (
        WorkItemState.CANCELLED if target is MissionState.CANCELLED else WorkItemState.FAILED
    )
    items = sorted(
        (i for i in ctx.state.work_items.values() if i.mission_id == mission.mission_id),
        key=lambda i: i.work_item_id,
    )
    for item in items:
        if not WORK_ITEM_TABLE.is_allowed(item.state, WorkTransition.PARENT_TERMINAL):
            continue
        WORK_ITEM_TABLE.target(item.state, WorkTransition.PARENT_TERMINAL, item_target)
        closed = leases.close_all_of_item(ctx, item, "revoked", f"mission_{target}")
        yield item_draft(
            item,
            "work.cancelled" if item_target is WorkItemState.CANCELLED else "work.failed",
            to=str(item_target),
            group_id=mission.group_id,
            cause=("event", ended["eventId"]),
            actor={"type": "service", "id": ctx.identity.authority_id},
            reason=f"mission {target}",
            leases=leases.documents(*closed),
        )
    if target is MissionState.CANCELLED:
        children = sorted(
            (m for m in ctx.state.missions.values() if m.parent_mission_id == mission.mission_id),
            key=lambda m: m.mission_id,
        )
        for child in children:
            if MISSION_TABLE.is_allowed(child.state, MT.PARENT_CANCELLED):
                yield from terminate_mission(
                    ctx, child, MT.PARENT_CANCELLED, "parent cancelled", ("event", ended["eventId"])
                )
    elif mission.parent_work_item_id:
        yield from _to_parent(ctx, mission, WorkTransition.CHILD_FAILED, ended, "failed")


def _to_parent(
    ctx: Context,
    child: MissionRecord,
    transition: WorkTransition,
    child_event: dict[str, Any],
    outcome: str,
) -> Generator[Draft, Any, None]:
    """Propagate a child Mission's approval or failure to its parent WorkItem (§14)."""
    parent_item = ctx.state.work_items.get(child.parent_work_item_id or "")
    if parent_item is None or not WORK_ITEM_TABLE.is_allowed(parent_item.state, transition):
        return
    if transition is WorkTransition.CHILD_APPROVED:
        target, kind = WorkItemState.VERIFIED, "work.result.accepted"
    elif child.child_failure_policy == "fail":
        target, kind = WorkItemState.FAILED, "work.failed"
    else:
        target, kind = WorkItemState.BLOCKED, "work.blocked"
    WORK_ITEM_TABLE.target(parent_item.state, transition, target)
    closed = (
        leases.close_all_of_item(ctx, parent_item, "revoked", f"child_mission_{outcome}")
        if target is not WorkItemState.BLOCKED
        else []
    )
    yield item_draft(
        parent_item,
        kind,
        to=str(target),
        cause=("event", child_event["eventId"]),
        actor={"type": "service", "id": ctx.identity.authority_id},
        childMissionId=child.mission_id,
        childOutcome=outcome,
        childEventId=child_event["eventId"],
        requiredResolution="replan, revise scope, replace the child, or cancel"
        if target is WorkItemState.BLOCKED
        else None,
        leases=leases.documents(*closed),
    )
