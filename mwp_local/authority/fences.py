"""Epoch and lease fencing (§6.3, §7.2, §8, §11.3, §15.3), each a small named check.

Every function either returns quietly or raises the exact section-19 code with an explanation
that names the current and the presented values, so a learner sees why a Command was stale.
"""

from __future__ import annotations

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.tables import MembershipState
from .command import CommandView
from .context import Context
from .model import LeaseRecord, MembershipRecord, WorkItemRecord


def session(ctx: Context, cmd: CommandView) -> None:
    """An Agent Command must carry its Agent's current Session Epoch (§6.3)."""
    agent = ctx.state.agents.get(cmd.actor_id)
    if agent is None:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"Agent {cmd.actor_id} has no registered Agent Card in this Organization.",
            rule="§6.1 Agents are registered by the Organization",
        )
    if agent.session_epoch == 0:
        raise ProtocolError(
            ErrorCode.AUTH_REQUIRED,
            f"Agent {cmd.actor_id} has no open Session; open one before sending Commands.",
            rule="§6.3 Session Epoch",
        )
    if cmd.session_epoch != agent.session_epoch:
        raise ProtocolError(
            ErrorCode.AUTH_STALE_SESSION,
            f"The Command carries Session Epoch {cmd.session_epoch}, but the current Session "
            f"Epoch of {cmd.actor_id} is {agent.session_epoch}: a newer runtime has replaced it.",
            details={"presented": cmd.session_epoch, "current": agent.session_epoch},
            rule="§6.3 issuing epoch n+1 invalidates every session at epoch n or lower",
        )


def membership(ctx: Context, cmd: CommandView) -> MembershipRecord:
    """A Group-scoped Agent or human Command must carry its current Membership Epoch (§8)."""
    mem = ctx.state.memberships.get((cmd.group_id or "", cmd.actor_id))
    if mem is None or mem.state == MembershipState.ENDED:
        raise ProtocolError(
            ErrorCode.MEMBERSHIP_REQUIRED,
            f"{cmd.actor_id} has no {'active ' if mem else ''}Membership in this Group.",
            rule="§8 Membership",
        )
    if cmd.membership_epoch != mem.epoch:
        raise ProtocolError(
            ErrorCode.MEMBERSHIP_STALE,
            f"The Command carries Membership Epoch {cmd.membership_epoch}, but the current "
            f"Membership Epoch of {cmd.actor_id} in this Group is {mem.epoch}.",
            details={"presented": cmd.membership_epoch, "current": mem.epoch},
            rule="§8 a Command from a stale Membership Epoch is rejected",
        )
    return mem


def coordinator(ctx: Context, cmd: CommandView) -> None:
    """Only the current Coordinator epoch may coordinate (§7.2)."""
    mission = ctx.mission_of(cmd.group_id)
    if cmd.coordinator_epoch is None:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"{cmd.kind} needs the current Coordinator Epoch.",
            rule="§15.1 coordinator Commands carry coordinatorEpoch",
        )
    if cmd.coordinator_epoch != mission.coordinator_epoch:
        raise ProtocolError(
            ErrorCode.AUTH_STALE_COORDINATOR,
            f"Coordinator Epoch {cmd.coordinator_epoch} is stale; the current epoch is "
            f"{mission.coordinator_epoch}.",
            details={
                "expectedCoordinatorEpoch": mission.coordinator_epoch,
                "receivedCoordinatorEpoch": cmd.coordinator_epoch,
            },
            rule="§7.2 only the current Coordinator epoch may coordinate",
        )
    if cmd.actor_id != mission.coordinator_agent_id:
        raise ProtocolError(
            ErrorCode.AUTH_STALE_COORDINATOR,
            f"{cmd.actor_id} does not hold the Coordinator lease at epoch "
            f"{mission.coordinator_epoch} (it is held by {mission.coordinator_agent_id}).",
            rule="§7.2 only the current Coordinator epoch may coordinate",
        )
    lease = ctx.state.leases.get(mission.coordinator_lease_id or "")
    if lease is None or not lease.live_at(ctx.now_us):
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            "The Coordinator lease has expired; renew it (or be replaced) before coordinating.",
            rule="§7.2 renewable Coordinator lease",
        )


def revision(current: int, cmd: CommandView, what: str) -> None:
    """Optimistic concurrency (§15.3)."""
    if cmd.expected_revision is not None and cmd.expected_revision != current:
        raise ProtocolError(
            ErrorCode.REVISION_CONFLICT,
            f"The Command expects {what} at revision {cmd.expected_revision}, but it is at "
            f"revision {current}: someone changed it first. Re-read and decide again.",
            details={"expectedRevision": cmd.expected_revision, "currentRevision": current},
            rule="§15.3 optimistic concurrency",
        )


def owner(ctx: Context, cmd: CommandView, item: WorkItemRecord) -> None:
    """The actor must be the WorkItem's current owner at the current Ownership Epoch (§11.3)."""
    presented = cmd.payload.get("ownershipEpoch")
    if item.owner is None or item.owner["agentId"] != cmd.actor_id:
        if isinstance(presented, int) and presented < item.ownership_epoch:
            raise ProtocolError(
                ErrorCode.WORK_STALE_OWNERSHIP,
                f"Ownership Epoch {presented} of {item.work_item_id} is fenced: the item was "
                f"reassigned (current Ownership Epoch {item.ownership_epoch}).",
                details={"presented": presented, "current": item.ownership_epoch},
                rule="§4.5 exclusive work is fenced",
            )
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"{cmd.actor_id} does not own WorkItem {item.work_item_id}.",
            rule="§11.3 only the owner executes",
        )
    if presented != item.ownership_epoch:
        raise ProtocolError(
            ErrorCode.WORK_STALE_OWNERSHIP,
            f"The Command cites Ownership Epoch {presented}, but the current Ownership Epoch of "
            f"{item.work_item_id} is {item.ownership_epoch}.",
            details={"presented": presented, "current": item.ownership_epoch},
            rule="§4.5 exclusive work is fenced",
        )


def execution_lease(ctx: Context, cmd: CommandView, item: WorkItemRecord) -> LeaseRecord:
    """The Command must cite the current, unexpired Execution Lease (§11.3, MWP-WRK-013)."""
    presented = cmd.payload.get("leaseId")
    current = ctx.state.leases.get(item.execution_lease_id or "")
    if not isinstance(presented, str):
        raise ProtocolError(
            ErrorCode.INVALID_COMMAND,
            f"{cmd.kind} must cite the current Execution Lease ID (payload.leaseId).",
            rule="§11.3 every renewal, checkpoint, block, publication, submission and failure "
            "cites the current Lease ID",
        )
    if current is None or presented != current.lease_id:
        older = ctx.state.leases.get(presented)
        why = (
            f"it was {older.state}" + (f" ({older.closure_reason})" if older.closure_reason else "")
            if older is not None
            else "no such lease was issued"
        )
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            f"The Command cites Execution Lease {presented}, which is not the current lease of "
            f"{item.work_item_id} ({why}); the current lease is "
            f"{current.lease_id if current else 'none'}.",
            details={"presented": presented, "current": current.lease_id if current else None},
            rule="§11.3 a delayed Command with an older Lease ID is rejected",
        )
    if not current.live_at(ctx.now_us):
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            f"Execution Lease {current.lease_id} expired at {current.expires_at}.",
            details={"leaseId": current.lease_id, "expiresAt": current.expires_at},
            rule="§11.3 leases are renewable and expire",
        )
    return current


def ownership_live(ctx: Context, item: WorkItemRecord) -> bool:
    """Whether the item's owner still holds a live ownership (or blocked) lease."""
    if item.owner is None:
        return False
    for lease_id in (item.execution_lease_id, item.ownership_lease_id, item.blocked_lease_id):
        lease = ctx.state.leases.get(lease_id or "")
        if lease is not None and lease.live_at(ctx.now_us):
            return True
    return False
