"""Membership Commands (§8, §9.1): just-in-time Memberships, ending them, Delegation Grants.

A changed Membership gets a new epoch, which fences Commands carrying the old one
(``MEMBERSHIP_STALE``). Membership change is always compare-and-set on the epoch.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.documents import validate
from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.tables import (
    OWNED_STATES,
    UNFINISHED_STATES,
    MembershipState,
    MembershipTransition,
)
from ...protocol.timestamps import parse_timestamp
from ..command import CommandView, Draft
from ..context import Context, forbidden, invalid, payload_field
from ..model import LIMIT_MEMBER
from ..provisional import context_package
from ..registry import command
from .mission import _membership_document, membership_state

MS = MembershipState
MT = MembershipTransition

_ROLES = {"mission_owner", "coordinator", "worker", "reviewer", "observer", "work_delegate"}


def _may_manage(ctx: Context, cmd: CommandView) -> None:
    mission = ctx.mission_of(cmd.group_id)
    is_coordinator = cmd.actor_type == "agent" and cmd.actor_id == mission.coordinator_agent_id
    if not (is_coordinator or cmd.actor_id == mission.owner_id or cmd.actor_type == "service"):
        raise forbidden("Only the Coordinator or the MissionOwner manages Memberships (§8).")


@command(C.MEMBERSHIP_CHANGE, actors=("agent", "human", "service"))
def change(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Grant or change a Membership; the new Membership has the next epoch."""
    _may_manage(ctx, cmd)
    mission = ctx.mission_of(cmd.group_id)
    member = payload_field(cmd, "member", dict)
    role = payload_field(cmd, "role")
    state = cmd.payload.get("state", str(MS.PROVISIONAL))
    if role not in _ROLES or state not in ctx.tables.membership.row(MT.GRANT).targets:
        raise invalid(f"Unknown role {role!r} or state {state!r}.")
    if role in ("mission_owner", "coordinator"):
        raise invalid(f"The {role} Membership follows the Mission, not membership.change.")
    if member.get("type") == "agent" and member.get("id") not in ctx.state.agents:
        raise invalid(f"Agent {member.get('id')} is not registered.")
    existing = ctx.state.memberships.get((mission.group_id, member.get("id", "")))
    expected = cmd.payload.get("expectedMembershipEpoch")
    current = existing.epoch if existing else 0
    if expected is not None and expected != current:
        raise ProtocolError(
            ErrorCode.REVISION_CONFLICT,
            f"The change expects Membership Epoch {expected}, but it is {current}.",
            details={"expectedRevision": expected, "currentRevision": current},
            rule="§15.3 Membership change is compare-and-set",
        )
    if (
        existing
        and existing.role in ("mission_owner", "coordinator")
        and existing.state != MS.ENDED
    ):
        raise invalid(f"{member.get('id')} holds the {existing.role} role; it cannot be changed.")
    group = ctx.group(cmd.group_id)
    package_id = expires = None
    provisional = state == MS.PROVISIONAL
    if provisional:
        expires = payload_field(cmd, "provisionalExpiresAt")
        if parse_timestamp(expires).epoch_micros <= ctx.now_us:
            raise invalid(f"The provisional Membership would already have expired ({expires}).")
        package_id = context_package(
            ctx,
            cmd,
            mission_id=mission.mission_id,
            group_id=mission.group_id,
            why=f"{member.get('id')} would join as a provisional member",
        )["contextPackageId"]
    doc = _membership_document(
        ctx,
        mission_id=mission.mission_id,
        group_id=mission.group_id,
        member={"type": member["type"], "id": member["id"]},
        role=role,
        epoch=current + 1,
        state=ctx.tables.membership.target(
            membership_state(existing),
            MT.GRANT if existing is None or existing.state == MS.ENDED else MT.CHANGE,
            MS(state),
        ),
        scopes=cmd.payload.get("scopes"),
        visibility_start=int(cmd.payload.get("visibilityStartSequence", group.last_sequence + 1)),
        context_package_id=package_id,
        provisional_expires_at=expires,
    )
    payload: dict[str, Any] = {"missionId": mission.mission_id, "membership": doc}
    if provisional:
        payload["contextPackage"] = cmd.payload["contextPackage"]
    yield Draft(kind=E.MEMBERSHIP_CHANGED, group_id=cmd.group_id, payload=payload)


@command(C.MEMBERSHIP_END, actors=("agent", "human", "service"))
def end(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """End a Membership (no WorkItems or review obligations remain)."""
    _may_manage(ctx, cmd)
    mission = ctx.mission_of(cmd.group_id)
    principal = payload_field(cmd, "principalId")
    existing = ctx.state.memberships.get((mission.group_id, principal))
    if not ctx.tables.membership.is_allowed(membership_state(existing), MT.END):
        raise invalid(f"{principal} has no Membership to end in this Group.")
    assert existing is not None
    if existing.role in ("mission_owner", "coordinator"):
        raise invalid(f"The {existing.role} Membership cannot be ended this way.")
    owned = [
        i.work_item_id
        for i in ctx.state.work_items.values()
        if i.group_id == mission.group_id
        and i.owner
        and i.owner["agentId"] == principal
        and i.state in OWNED_STATES
    ]
    if owned:
        raise invalid(f"{principal} still owns WorkItems: {', '.join(sorted(owned))}.")
    doc = dict(existing.document)
    ended = ctx.tables.membership.lookup(membership_state(existing), MT.END).targets[0]
    doc.update(state=str(ended), endedAt=ctx.now.text, membershipEpoch=existing.epoch + 1)
    yield Draft(
        kind=E.MEMBERSHIP_ENDED,
        group_id=cmd.group_id,
        payload={"missionId": mission.mission_id, "membership": doc},
    )


@command(C.MEMBERSHIP_GRANT_DELEGATION, coordinator=True)
def grant_delegation(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The current Coordinator grants scoped work authority to a work_delegate (§9.1)."""
    mission = ctx.mission_of(cmd.group_id)
    grantee = payload_field(cmd, "granteeAgentId")
    membership = ctx.state.memberships.get((mission.group_id, grantee))
    if membership is None or membership.role != "work_delegate" or membership.state != MS.ACTIVE:
        raise invalid(f"{grantee} needs an active work_delegate Membership to receive a Grant.")
    target = ctx.work_item(cmd.payload.get("targetWorkItemId"), cmd.group_id)
    if target.state not in UNFINISHED_STATES:
        raise invalid(f"The target {target.work_item_id} is {target.state}.")
    budget = payload_field(cmd, "budget", dict)
    missing = [m for m in ("currency", *LIMIT_MEMBER.values()) if m not in budget]
    if missing:
        raise invalid(f"A Grant sets explicit ceilings for all six dimensions; missing {missing}.")
    expires = payload_field(cmd, "expiresAt")
    if parse_timestamp(expires).epoch_micros <= ctx.now_us:
        raise invalid("The Grant would already be expired.")
    grant = {
        "grantId": cmd.payload.get("grantId") or ctx.new_id("grant"),
        "granteeAgentId": grantee,
        "missionId": mission.mission_id,
        "groupId": mission.group_id,
        "targetWorkItemId": target.work_item_id,
        "allowedCapabilities": payload_field(cmd, "allowedCapabilities", list),
        "budget": budget,
        "maxDescendantDepth": int(cmd.payload.get("maxDescendantDepth", 1)),
        "granteeMembershipEpoch": membership.epoch,
        "coordinatorEpoch": mission.coordinator_epoch,
        "grantedBy": cmd.actor,
        "grantedAt": ctx.now.text,
        "expiresAt": expires,
    }
    doc = dict(membership.document, delegationGrants=[grant])
    try:
        validate("membership", doc)
    except ProtocolError as exc:
        raise invalid(f"The Grant is not valid: {exc.explanation}") from None
    yield Draft(
        kind=E.MEMBERSHIP_DELEGATION_GRANTED,
        group_id=cmd.group_id,
        payload={"missionId": mission.mission_id, "grant": grant},
    )
