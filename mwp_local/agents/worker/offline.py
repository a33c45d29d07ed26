"""Bounded offline execution on the Worker's side (§11.5; MWP-WRK-020, MWP-WRK-021).

When the Group service becomes unreachable a Worker may keep going on work that was *already
active* under a live Execution Lease when contact was lost, and only if that work is reversible
(``sideEffectRisk`` ``none`` or ``reversible``) and still running in its slot (the only state a
checkpoint may leave, by the Capacity Slot table), for a bounded lease-grace period. It starts no
new WorkItem, asks for no capability token and calls no external tool (the driver serves no slot
while the service is down). What it did is buffered as a signed ``work.checkpoint`` carrying the
critical ``urn:missionweaveprotocol:extension:bounded-offline-execution`` binding with every
member §11.5 lists.

On reconnect, before anything else, the buffered Command is *rebased*: the binding is kept
unchanged, and the Command is re-signed with the current ``issuedAt``, Session Epoch and
Membership Epoch (the runtime fills these from what it knows now) under a new Action ID. Pure:
the caller supplies the runtime, the outage window and the time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...authority.offline import BOUNDED_OFFLINE, MAX_GRACE_US
from ...delivery.config import Window
from ...protocol.jsontext import parse_strict
from ...protocol.tables import LeaseState, WorkItemState
from ...protocol.timestamps import format_utc
from ..base import Intent, unwrap
from ..runtime import AgentRuntime
from .execution import checkpoint_of
from .lifecycle import SLOT_TABLE, SlotTransition

#: The ``sideEffectRisk`` values whose work may continue offline (reversible computation).
OFFLINE_RISKS = ("none", "reversible")
BINDING_VERSION = "0.1.0"


@dataclass(frozen=True, slots=True, kw_only=True)
class Buffered:
    """One buffered progress Command of one Worker."""

    agent: str
    work_item_id: str
    binding: dict[str, Any]
    #: The checkpoint to rebase on reconnect (the binding travels in its overrides).
    intent: Intent
    #: The Command as the Worker signed it when it buffered it (original epochs, old
    #: ``issuedAt``): what it would have sent, kept for audit.
    original: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Stopped:
    """Active work the Worker did not continue offline, and why."""

    agent: str
    work_item_id: str
    why: str


def extension(binding: dict[str, Any]) -> dict[str, Any]:
    """The ``extensions`` member carrying the critical binding."""
    return {BOUNDED_OFFLINE: {"version": BINDING_VERSION, "critical": True, "data": binding}}


def go_offline(runtime: AgentRuntime, outage: Window) -> tuple[list[Buffered], list[Stopped]]:
    """What ``runtime``'s Worker does through ``outage``: buffer progress of its already-active
    reversible work still running in its slot up to the grace deadline; stop everything else."""
    slots = getattr(unwrap(runtime.policy), "slots", None)
    if not isinstance(slots, dict):
        return [], []
    state = runtime.replica
    buffered: list[Buffered] = []
    stopped: list[Stopped] = []
    for slot in sorted(slots.values(), key=lambda s: s.slot_id):
        item = state.work_items.get(slot.work_item_id)
        lease = state.leases.get(slot.lease_id)
        if item is None or lease is None or item.execution_lease_id != slot.lease_id:
            continue
        if item.state != WorkItemState.ACTIVE or lease.state != LeaseState.ACTIVE:
            continue
        if lease.expires_us <= outage.at_us:
            stopped.append(
                Stopped(
                    agent=runtime.name,
                    work_item_id=item.work_item_id,
                    why="its lease had already expired when contact was lost",
                )
            )
            continue
        if not SLOT_TABLE.is_allowed(slot.state, SlotTransition.CHECKPOINT):
            # Past running the work is done or failed: what follows (usage, publish, submit,
            # fail) needs the Group service, and a checkpoint would break the slot table.
            stopped.append(
                Stopped(
                    agent=runtime.name,
                    work_item_id=item.work_item_id,
                    why=f"its slot was {slot.state} (past the work itself): what follows needs "
                    "the Group service, so it waits for reconnection",
                )
            )
            continue
        risk = item.contract["sideEffectRisk"]
        if risk not in OFFLINE_RISKS:
            stopped.append(
                Stopped(
                    agent=runtime.name,
                    work_item_id=item.work_item_id,
                    why=f"sideEffectRisk {risk} is not reversible: it waits for a valid lease",
                )
            )
            continue
        grace_us = lease.expires_us + min(outage.grace_us, MAX_GRACE_US)
        at_us = min(outage.until_us, grace_us)
        seconds = max(1, (at_us - outage.at_us) // 1_000_000)
        binding = {
            "agentId": runtime.member.id,
            "groupId": item.group_id,
            "workItemId": item.work_item_id,
            "sessionEpoch": lease.session_epoch,
            "ownershipEpoch": item.ownership_epoch,
            "executionLeaseId": lease.lease_id,
            "disconnectedAt": format_utc(outage.at_us),
            "bufferedAt": format_utc(at_us),
            "graceDeadline": format_utc(grace_us),
            "leaseExpiresAt": lease.expires_at,
            "usageDelta": {
                "financial": 0,
                "modelTokens": 0,
                "toolCalls": 0,
                "computeSeconds": seconds,
                "wallClockSeconds": seconds,
                "externalSideEffects": 0,
            },
        }
        intent = Intent(
            kind="work.checkpoint",
            group=item.group_id,
            why=(
                f"reconcile on reconnect: the progress '{item.work_item_id.rsplit(':', 1)[-1]}' "
                "made offline (bounded-offline binding kept, Command rebased and re-signed)"
            ),
            payload={
                "workItemId": item.work_item_id,
                "ownershipEpoch": item.ownership_epoch,
                "leaseId": lease.lease_id,
                "preempted": False,
                "checkpoint": checkpoint_of(slot, "offline", at_us, []),
            },
            overrides={"extra": {"extensions": extension(binding)}},
            tag="checkpoint",
        )
        original = parse_strict(runtime.command(intent, format_utc(at_us)))
        buffered.append(
            Buffered(
                agent=runtime.name,
                work_item_id=item.work_item_id,
                binding=binding,
                intent=intent,
                original=original,
            )
        )
    return buffered, stopped


__all__ = ["OFFLINE_RISKS", "Buffered", "Stopped", "extension", "go_offline"]
