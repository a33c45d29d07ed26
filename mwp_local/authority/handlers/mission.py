"""Mission lifecycle Commands (§7, §14): creation, Coordinator lease, approval, termination.

Each handler decides its row of the Mission table (``decide``); terminal Mission states
propagate to the Mission's unfinished WorkItems (§10.2 last row) and to child Missions, and a
child Mission's approval or failure propagates to its parent WorkItem (§14): those rows are
driven by a cause, decided with ``follow`` inside the Command that caused them.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.mission import GroupState
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.hashing import is_sha256_id
from ...protocol.profiles import PROFILES
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import (
    LeaseTransition,
    MembershipState,
    MissionState,
    MissionTransition,
    WorkTransition,
)
from ...protocol.timestamps import parse_timestamp
from .. import budgets, leases
from ..command import CommandView, Draft
from ..context import Context, forbidden, invalid, payload_field
from ..decide import Decision, Subject, decide, follow, item_subject, mission_subject, named_item
from ..guards import unfinished_work
from ..model import MembershipRecord, MissionRecord
from ..registry import command

MT = MissionTransition
LT = LeaseTransition
#: The Mission rows that cancel, and so propagate the cancellation to child Missions.
_CANCELLING = (MT.CANCEL, MT.PARENT_CANCELLED)


def membership_state(membership: MembershipRecord | None) -> MembershipState:
    """A member's state in the membership table (``NONE`` when it has no Membership)."""
    return MembershipState.NONE if membership is None else MembershipState(membership.state)


def _mission_document(
    ctx: Context,
    cmd: CommandView,
    *,
    mission_id: str,
    group_id: str,
    owner: dict[str, str],
    coordinator: dict[str, Any],
    state: MissionState,
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
        "state": str(state),
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
    if ctx.identity.profiles:
        # The Group pins the major version of every profile its Authority may use in it (§18).
        doc["pinnedProfiles"] = [PROFILES[uri].pin() for uri in ctx.identity.profiles]
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
    state: MembershipState = MembershipState.ACTIVE,
    scopes: list[str] | None = None,
    visibility_start: int = 0,
    context_package_id: str | None = None,
    provisional_expires_at: str | None = None,
) -> dict[str, Any]:
    """A Membership document; a provisional one names its Context Package and its expiry."""
    doc: dict[str, Any] = {
        "membershipId": ctx.new_id("membership"),
        "missionId": mission_id,
        "groupId": group_id,
        "member": member,
        "role": role,
        "state": str(state),
        "membershipEpoch": epoch,
        "scopes": scopes or ["group:all"],
        "visibilityStartSequence": visibility_start,
        "grantedAt": ctx.now.text,
    }
    if state is MembershipState.ACTIVE:
        doc["activatedAt"] = ctx.now.text
    if state is MembershipState.PROVISIONAL:
        if context_package_id is None or provisional_expires_at is None:
            raise ValueError("a provisional Membership needs its Context Package and expiry")
        doc["contextPackageId"] = context_package_id
        doc["provisionalExpiresAt"] = provisional_expires_at
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
    created: Decision,
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
        state=created.target,
        parent=parent,
        follow_up_to=follow_up_to,
    )
    if budget_parent is not None:
        budgets.check_allocation(ctx.state, budget_parent, mission["budget"], "The child Mission")
    conversation = cmd.payload.get("mainConversationId") or ctx.new_id("conversation")
    group = {
        "groupId": group_id,
        "missionId": mission_id,
        "state": GroupState.ACTIVE.value,
        "mainConversationId": conversation,
        "createdAt": ctx.now.text,
    }
    yield Draft(
        kind=created.event,
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
            kind=E.MEMBERSHIP_CHANGED,
            group_id=group_id,
            payload={
                "missionId": mission_id,
                "membership": _membership_document(
                    ctx, mission_id=mission_id, group_id=group_id, member=member, role=role, epoch=1
                ),
            },
        )


def _new_mission() -> Subject:
    return Subject(None, MissionState.NONE)


@command(C.MISSION_CREATE, scope="create", actors=("human",))
def create(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """A human MissionOwner creates a root Mission, its Group and a Coordinator lease."""
    created = decide(ctx, cmd, ctx.tables.mission, _new_mission)
    yield from _create(ctx, cmd, created, owner=cmd.actor)


@command(C.MISSION_CREATE_FOLLOW_UP, scope="create", actors=("human",))
def create_follow_up(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The same human creates a follow-up linked to an approved Mission (§7.1)."""
    created = decide(ctx, cmd, ctx.tables.mission, _new_mission)
    follow_up_to = cmd.payload["followUpToMissionId"]
    yield from _create(ctx, cmd, created, owner=cmd.actor, follow_up_to=follow_up_to)


@command(C.MISSION_CREATE_CHILD, actors=("agent",), coordinator=True)
def create_child(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Parent Coordinator promotes a WorkItem to a child Mission (§14)."""
    parent_mission = ctx.mission_of(cmd.group_id)
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd, "parentWorkItemId"))
    created = decide(ctx, cmd, ctx.tables.mission, _new_mission)
    item = move.item
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
    revoked = leases.close_all_of_item(ctx, item, LT.REVOKE, "child_mission_created")
    yield move.draft(
        childMissionId=child_id,
        childGroupId=child_group,
        depth=depth,
        leases=leases.documents(*revoked),
    )
    yield from _create(
        ctx,
        cmd,
        created,
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


@command(C.MISSION_ASSIGN_COORDINATOR, actors=("human", "service"), aggregate="mission")
def assign_coordinator(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner (or policy) appoints a Coordinator with a higher epoch (§7.2)."""
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_type == "human" and cmd.actor_id != mission.owner_id:
        raise forbidden("Only the MissionOwner or Organization policy appoints a Coordinator.")
    if mission.state in ctx.tables.mission.terminal:
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
        [leases.close(ctx, old, LT.REVOKE, "coordinator_replaced")] if old and old.is_active else []
    )
    yield Draft(
        kind=E.MISSION_COORDINATOR_ASSIGNED,
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
    if (
        existing is None
        or existing.role != "coordinator"
        or existing.state != MembershipState.ACTIVE
    ):
        yield Draft(
            kind=E.MEMBERSHIP_CHANGED,
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


@command(C.MISSION_RENEW_COORDINATOR, coordinator=True, aggregate="mission")
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
        kind=E.MISSION_COORDINATOR_RENEWED,
        group_id=cmd.group_id,
        payload={"missionId": mission.mission_id, "leases": leases.documents(renewed)},
    )


def _the_mission(ctx: Context, cmd: CommandView) -> Subject:
    return mission_subject(ctx.mission_of(cmd.group_id))


@command(C.MISSION_SUBMIT_FOR_APPROVAL, coordinator=True, aggregate="mission")
def submit_for_approval(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Submit an exact Mission revision and Artifact set for approval (§7.3)."""
    move = decide(ctx, cmd, ctx.tables.mission, lambda: _the_mission(ctx, cmd))
    mission = move.mission
    hashes = payload_field(cmd, "artifactHashes", list)
    if not hashes or not all(is_sha256_id(h) for h in hashes) or len(set(hashes)) != len(hashes):
        raise invalid("artifactHashes must be a non-empty list of distinct sha256: hashes.")
    for h in hashes:
        if ctx.state.manifest_of(h, mission_id=mission.mission_id) is None:
            raise invalid(f"Artifact {h} was not published in this Mission.")
    unfinished, any_verified = unfinished_work(ctx, mission)
    if unfinished or not any_verified:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            "Before submission every required WorkItem must be reviewed and verified; "
            f"unfinished: {', '.join(unfinished) or 'none verified yet'}.",
            details={"unfinished": unfinished},
            rule="§7.3 the Coordinator reviews all required results before submission",
        )
    yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload={
            "missionId": mission.mission_id,
            "missionRevision": mission.revision + 1,
            "artifactHashes": sorted(hashes),
        },
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


@command(C.MISSION_APPROVE, actors=("human", "agent"), aggregate="mission", cas=True)
def approve(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner approves the exact submitted revision and Artifact set (§4.10)."""
    move = decide(ctx, cmd, ctx.tables.mission, lambda: _the_mission(ctx, cmd))
    mission = move.mission
    approval = _approval(ctx, cmd, mission, "approved")
    approved = yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload={"missionId": mission.mission_id, "approval": approval},
    )
    if mission.parent_work_item_id:
        yield from _to_parent(ctx, mission, WorkTransition.CHILD_APPROVED, approved, "approved")


@command(C.MISSION_REQUEST_CHANGES, actors=("human", "agent"), aggregate="mission")
def request_changes(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner asks for changes: the same Mission reopens (§7.3)."""
    move = decide(ctx, cmd, ctx.tables.mission, lambda: _the_mission(ctx, cmd))
    mission = move.mission
    reason = payload_field(cmd, "reason")
    payload: dict[str, Any] = {"missionId": mission.mission_id, "reason": reason}
    if "approval" in cmd.payload:
        payload["approval"] = _approval(ctx, cmd, mission, "changes_requested")
    yield Draft(
        kind=move.event,
        group_id=cmd.group_id,
        aggregate=("mission", mission.mission_id),
        payload=payload,
    )


@command(C.MISSION_CANCEL, actors=("human", "agent", "service"), aggregate="mission")
def cancel(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The MissionOwner (or policy) cancels the Mission; cancellation propagates down (§7.1)."""
    ended = decide(ctx, cmd, ctx.tables.mission, lambda: _the_mission(ctx, cmd))
    yield from terminate_mission(ctx, ended, cmd.payload.get("reason", "cancelled"), None)


@command(C.MISSION_TERMINATE, actors=("agent", "service"), aggregate="mission")
def terminate(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The Coordinator or policy ends the Mission as failed (§7.1)."""
    ended = decide(ctx, cmd, ctx.tables.mission, lambda: _the_mission(ctx, cmd))
    yield from terminate_mission(ctx, ended, cmd.payload.get("reason", "terminated"), None)


def terminate_mission(
    ctx: Context,
    ended: Decision,
    reason: str,
    cause: tuple[str, str] | None,
) -> Generator[Draft, Any, None]:
    """Move a Mission to cancelled/failed (``ended``: its decided row) and propagate to its
    WorkItems and children."""
    mission, transition, target = ended.mission, ended.row.transition, ended.target
    automatic = cause is not None
    ended_event = yield Draft(
        kind=ended.event,
        group_id=mission.group_id,
        aggregate=("mission", mission.mission_id),
        cause=cause,
        actor={"type": "service", "id": ctx.identity.authority_id} if automatic else None,
        payload={"missionId": mission.mission_id, "reason": reason, "propagation": str(transition)},
    )
    work = ctx.tables.work_item
    items = sorted(
        (i for i in ctx.state.work_items.values() if i.mission_id == mission.mission_id),
        key=lambda i: i.work_item_id,
    )
    for item in items:
        if not work.is_allowed(item.state, WorkTransition.PARENT_TERMINAL):
            continue
        move = follow(ctx, work, WorkTransition.PARENT_TERMINAL, item_subject(item))
        closed = leases.close_all_of_item(ctx, item, LT.REVOKE, f"mission_{target}")
        yield move.draft(
            group_id=mission.group_id,
            cause=("event", ended_event["eventId"]),
            actor={"type": "service", "id": ctx.identity.authority_id},
            reason=f"mission {target}",
            leases=leases.documents(*closed),
        )
    if transition in _CANCELLING:
        children = sorted(
            (m for m in ctx.state.missions.values() if m.parent_mission_id == mission.mission_id),
            key=lambda m: m.mission_id,
        )
        for child in children:
            if ctx.tables.mission.is_allowed(child.state, MT.PARENT_CANCELLED):
                child_ended = follow(
                    ctx, ctx.tables.mission, MT.PARENT_CANCELLED, mission_subject(child)
                )
                yield from terminate_mission(
                    ctx, child_ended, "parent cancelled", ("event", ended_event["eventId"])
                )
    elif mission.parent_work_item_id:
        yield from _to_parent(ctx, mission, WorkTransition.CHILD_FAILED, ended_event, "failed")


def _to_parent(
    ctx: Context,
    child: MissionRecord,
    transition: WorkTransition,
    child_event: dict[str, Any],
    outcome: str,
) -> Generator[Draft, Any, None]:
    """Propagate a child Mission's approval or failure to its parent WorkItem (§14); a parent
    the move leaves blocked keeps its leases and is told what resolves it."""
    work = ctx.tables.work_item
    parent_item = ctx.state.work_items.get(child.parent_work_item_id or "")
    if parent_item is None or not work.is_allowed(parent_item.state, transition):
        return
    move = follow(ctx, work, transition, item_subject(parent_item), child=child)
    closed = (
        []
        if move.stays
        else leases.close_all_of_item(ctx, parent_item, LT.REVOKE, f"child_mission_{outcome}")
    )
    yield move.draft(
        cause=("event", child_event["eventId"]),
        actor={"type": "service", "id": ctx.identity.authority_id},
        childMissionId=child.mission_id,
        childOutcome=outcome,
        childEventId=child_event["eventId"],
        requiredResolution="replan, revise scope, replace the child, or cancel"
        if move.stays
        else None,
        leases=leases.documents(*closed),
    )
