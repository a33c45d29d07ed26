"""Building and closing fenced leases (§7.2, §11.3) as Lease documents.

Leases are immutable: renewing or closing one yields a new document with the same stable Lease
ID; every change is looked up in the lease table (issue, renew, release, revoke, expire).
Events carry the documents of every lease they create or change under ``payload.leases``, and
``evolve`` stores them, so the log alone tells each lease's history.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..protocol.tables import LeaseState, LeaseTransition
from .context import Context
from .model import LeaseRecord, WorkItemRecord


def issue(
    ctx: Context,
    *,
    lease_type: str,
    mission_id: str,
    group_id: str,
    holder: str,
    session_epoch: int,
    duration_us: int,
    work_item_id: str | None = None,
    ownership_epoch: int | None = None,
    coordinator_epoch: int | None = None,
    start_by_us: int | None = None,
) -> LeaseRecord:
    """A new active lease starting now."""
    expires = ctx.now_us + duration_us
    state = ctx.tables.lease.lookup(LeaseState.NONE, LeaseTransition.ISSUE).targets[0]
    return LeaseRecord(
        lease_id=ctx.new_id(f"lease:{lease_type}"),
        lease_type=lease_type,
        mission_id=mission_id,
        group_id=group_id,
        holder_agent_id=holder,
        session_epoch=session_epoch,
        issued_at=ctx.now.text,
        starts_at=ctx.now.text,
        expires_at=ctx.at(expires),
        expires_us=expires,
        work_item_id=work_item_id,
        ownership_epoch=ownership_epoch,
        coordinator_epoch=coordinator_epoch,
        start_by=None if start_by_us is None else ctx.at(start_by_us),
        start_by_us=start_by_us,
        state=state.value,
    )


def renew(ctx: Context, lease: LeaseRecord, duration_us: int) -> LeaseRecord:
    """The lease renewed from now for ``duration_us``."""
    expires = ctx.now_us + duration_us
    ctx.tables.lease.lookup(LeaseState(lease.state), LeaseTransition.RENEW, subject=lease.lease_id)
    return replace(
        lease,
        expires_at=ctx.at(expires),
        expires_us=expires,
        renewal_count=lease.renewal_count + 1,
        last_renewed_at=ctx.now.text,
    )


def close(
    ctx: Context, lease: LeaseRecord, transition: LeaseTransition, reason: str
) -> LeaseRecord:
    """The lease closed now by ``transition`` (release, revoke or expire: the lease table says
    which state it leaves the lease in), with a reason. A lease that ran out is closed at its
    expiry, not at the moment someone noticed."""
    target = ctx.tables.lease.lookup(
        LeaseState(lease.state), transition, subject=lease.lease_id
    ).targets[0]
    closed_at = ctx.now.text
    if transition is LeaseTransition.EXPIRE:
        closed_at = lease.expires_at if ctx.now_us >= lease.expires_us else ctx.now.text
    return replace(lease, state=target.value, closed_at=closed_at, closure_reason=reason)


def documents(*leases: LeaseRecord | None) -> list[dict[str, Any]]:
    """Lease documents of the given leases (``None`` skipped), for ``payload.leases``."""
    return [lease.to_document() for lease in leases if lease is not None]


def close_all_of_item(
    ctx: Context, item: WorkItemRecord, transition: LeaseTransition, reason: str
) -> list[LeaseRecord]:
    """Every active lease (execution, ownership, blocked) of a WorkItem, closed by
    ``transition``."""
    out = []
    for lease_id in (item.execution_lease_id, item.ownership_lease_id, item.blocked_lease_id):
        lease = ctx.state.leases.get(lease_id or "")
        if lease is not None and lease.is_active:
            out.append(close(ctx, lease, transition, reason))
    return out
