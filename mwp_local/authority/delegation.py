"""Delegated work authority (§9.1): checking a Delegation Grant at every use.

Only the current Coordinator issues a Grant. Its grantee may authorize a new descendant of the
Grant's target WorkItem (linked with ``parentWorkItemId``) or offer the target or an existing
descendant, within the Grant's capabilities, cumulative budget ceilings and descendant depth, and
only while the Grant, the grantee's ``work_delegate`` Membership epoch, the Coordinator Epoch and
the target are all still current. A Grant is non-transferable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.tables import UNFINISHED_STATES, MembershipState
from ..protocol.timestamps import parse_timestamp
from .budgets import limits_of
from .command import CommandView
from .context import Context


def _refuse(explanation: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.AUTH_FORBIDDEN, explanation, rule="§9.1 delegated work authority"
    )


def depth_below(ctx: Context, target: str, work_item_id: str) -> int | None:
    """How many parent links separate ``work_item_id`` from ``target`` (None: not below it)."""
    depth = 0
    current: str | None = work_item_id
    while current is not None:
        if current == target:
            return depth
        item = ctx.state.work_items.get(current)
        current = item.parent_work_item_id if item else None
        depth += 1
    return None


def check_use(
    ctx: Context,
    cmd: CommandView,
    *,
    subject: str,
    new_item_depth: int = 0,
    contract: Mapping[str, Any] | None = None,
    budget_already_counted: bool = False,
) -> dict[str, Any]:
    """The Grant cited by ``cmd`` if it authorizes acting on ``subject`` now; else refuse.

    ``subject`` is the WorkItem offered, or the parent of the WorkItem being authorized (then
    ``new_item_depth`` is 1).
    """
    grant_id = cmd.payload.get("grantId")
    grant = ctx.state.grants.get(grant_id) if isinstance(grant_id, str) else None
    if grant is None:
        raise _refuse(
            f"{cmd.actor_id} is not the Coordinator and cites no persisted Delegation Grant."
        )
    mission = ctx.mission_of(cmd.group_id)
    membership = ctx.state.memberships.get((mission.group_id, cmd.actor_id))
    problems = []
    if grant["granteeAgentId"] != cmd.actor_id:
        problems.append("the Grant belongs to another Agent (Grants are non-transferable)")
    if (
        membership is None
        or membership.role != "work_delegate"
        or membership.state != MembershipState.ACTIVE
    ):
        problems.append("the actor holds no active work_delegate Membership")
    elif membership.epoch != grant["granteeMembershipEpoch"]:
        problems.append("the grantee's Membership changed since the Grant was issued")
    if grant["groupId"] != mission.group_id or grant["missionId"] != mission.mission_id:
        problems.append("the Grant is for another Mission")
    if grant["coordinatorEpoch"] != mission.coordinator_epoch:
        problems.append("the Coordinator that issued the Grant has been replaced")
    if ctx.now_us >= parse_timestamp(grant["expiresAt"]).epoch_micros:
        problems.append(f"the Grant expired at {grant['expiresAt']}")
    target = ctx.state.work_items.get(grant["targetWorkItemId"])
    if target is None or target.state not in UNFINISHED_STATES:
        problems.append("the Grant's target WorkItem is missing, failed, cancelled or verified")
    depth = depth_below(ctx, grant["targetWorkItemId"], subject)
    if depth is None:
        problems.append(f"{subject} is outside the Grant's subtree")
    elif depth + new_item_depth > grant["maxDescendantDepth"]:
        problems.append(f"depth {depth + new_item_depth} exceeds the Grant's maximum")
    if contract is not None:
        allowed = {c["id"]: c["version"] for c in grant["allowedCapabilities"]}
        for cap in contract["requiredCapabilities"]:
            minimum = allowed.get(cap["id"])
            if minimum is None or _version(cap["version"]) < _version(minimum):
                problems.append(f"capability {cap['id']} {cap['version']} is not allowed")
        if not budget_already_counted:
            used = grant.get("used", {})
            for dim, amount in limits_of(contract["budget"]).items():
                ceiling = limits_of(grant["budget"]).get(dim)
                if ceiling is not None and used.get(dim, 0) + amount > ceiling:
                    problems.append(f"its {dim} budget would exceed the Grant's ceiling")
    if problems:
        raise _refuse(f"Delegation Grant {grant_id} cannot be used: " + "; ".join(problems) + ".")
    return grant


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("-", 1)[0].split("+", 1)[0].split("."))
