"""Organization-scoped bootstrap Commands: Agent Card registration and Session opening (§6).

Opening a replacement Session revokes every active Execution Lease of that Agent and returns
those WorkItems to ``queued`` before the new runtime may start them again (§11.3, MWP-WRK-014):
the WorkItem table's ``session_replacement`` row, which the Session opening drives.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.documents.kinds import ExtensionCommandKind as XC
from ...protocol.documents.kinds import ExtensionEventKind as XE
from ...protocol.tables import LeaseTransition, WorkTransition
from .. import embedded_signatures, leases
from ..command import CommandView, Draft
from ..context import Context, invalid, payload_field
from ..decide import follow, item_subject
from ..registry import command

AGENT_CARD_REGISTERED = XE.AGENT_CARD_REGISTERED
SESSION_OPENED = XE.SESSION_OPENED
LEASE_REVOKED = XE.WORK_EXECUTION_LEASE_REVOKED


@command(XC.AGENT_CARD_REGISTER, scope="organization", actors=("service",))
def register_agent_card(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Register (or upgrade) an Organization-signed Agent Card."""
    card = payload_field(cmd, "agentCard", dict)
    # The same checks every Event embedding an Agent Card gets (live, imported, verify-log).
    embedded_signatures.agent_card(card, ctx.state, ctx.identity)
    yield Draft(
        kind=AGENT_CARD_REGISTERED,
        group_id=None,
        payload={
            "agentId": card["agentId"],
            "agentCardVersion": card["cardVersion"],
            "agentCard": card,
        },
    )


@command(XC.SESSION_OPEN, scope="organization", actors=("service",))
def open_session(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Issue Session Epoch n+1 to an Agent, fencing its previous runtime."""
    agent_id = payload_field(cmd, "agentId")
    agent = ctx.state.agents.get(agent_id)
    if agent is None:
        raise invalid(f"Agent {agent_id} has no registered Agent Card.")
    new_epoch = agent.session_epoch + 1
    opened = yield Draft(
        kind=SESSION_OPENED,
        group_id=None,
        payload={
            "agentId": agent_id,
            "sessionEpoch": new_epoch,
            "previousSessionEpoch": agent.session_epoch,
        },
    )
    # Revoke the fenced runtime's active Execution Leases, returning its items to the queue.
    active = sorted(
        (item for item in ctx.state.work_items.values() if item.execution_lease_id),
        key=lambda i: (i.group_id, i.work_item_id),
    )
    for item in active:
        lease = ctx.state.leases.get(item.execution_lease_id or "")
        if lease is None or lease.holder_agent_id != agent_id or not lease.is_active:
            continue
        move = follow(
            ctx, ctx.tables.work_item, WorkTransition.SESSION_REPLACED, item_subject(item)
        )
        revoked = leases.close(ctx, lease, LeaseTransition.REVOKE, "session_replaced")
        # Ownership stays with the Agent; its new runtime gets a bounded ownership lease to start
        # the item again under a new Execution Lease.
        ownership = leases.issue(
            ctx,
            lease_type="ownership",
            mission_id=item.mission_id,
            group_id=item.group_id,
            holder=agent_id,
            session_epoch=new_epoch,
            duration_us=ctx.config.start_by_us,
            work_item_id=item.work_item_id,
            ownership_epoch=item.ownership_epoch,
            start_by_us=ctx.now_us + ctx.config.start_by_us,
        )
        yield move.draft(
            cause=("event", opened["eventId"]),
            actor={"type": "service", "id": ctx.identity.authority_id},
            leaseId=lease.lease_id,
            reason="session_replaced",
            agentId=agent_id,
            newSessionEpoch=new_epoch,
            leases=leases.documents(revoked, ownership),
        )
