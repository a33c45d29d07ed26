"""Reconciling progress a Worker buffered while the Group service was down (§11.5; MWP-WRK-021,
MWP-WRK-022). Pure decision code, called by the ``work.checkpoint`` and ``message.post``
handlers (a buffered checkpoint, or a progress Message, which must stay in the WorkItem's own
Conversation).

A buffered Command carries the critical ``urn:missionweaveprotocol:extension:bounded-offline-
execution`` binding: Agent, Group, WorkItem, original Session Epoch, Ownership Epoch, historical
Execution Lease ID, disconnect time, buffer time, grace deadline, historical lease expiry and the
six-dimensional usage delta. The Worker rebases it on reconnect (current ``issuedAt``, Session and
Membership Epochs, re-signed), so the pipeline's freshness and epoch fences apply as usual; this
module then checks the binding against the Authority's history:

* the binding names the actor, the Command's Group and the WorkItem the payload and envelope
  name (and the envelope's Conversation, if any, is the WorkItem's): otherwise the progress lies
  outside the bound WorkItem Conversation (``INVALID_COMMAND``);
* the owner is unchanged: same Agent, same Ownership Epoch (``WORK_STALE_OWNERSHIP``);
* the historical lease is this WorkItem's Execution Lease of that Session and epoch, with the
  recorded expiry (``WORK_LEASE_EXPIRED``);
* the progress was buffered inside the historical lease/grace window: disconnected while the
  lease was valid, buffered no earlier than that and no later than the grace deadline, which is
  at most ``MAX_GRACE_US`` past the lease expiry (``WORK_LEASE_EXPIRED``);
* it was not buffered after the lease was closed. A lease released or revoked is closed at that
  instant; a lease that merely ran out during the outage is the case the grace period exists
  for, so its expiry counts as the end of the lease window, not as a closure
  (``WORK_LEASE_EXPIRED``).

The charge comes first: ``charge`` returns the ``resource_usage_recorded`` draft (both sessions
named) and raises ``BUDGET_EXCEEDED`` before anything is drafted if any ledger of the ancestry
would overflow, so the charge and the progress are accepted or refused together.
"""

from __future__ import annotations

from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.tables import LeaseState
from ..protocol.timestamps import parse_timestamp
from . import budgets
from .command import CommandView, Draft
from .context import Context, invalid
from .model import LeaseRecord, WorkItemRecord

BOUNDED_OFFLINE = "urn:missionweaveprotocol:extension:bounded-offline-execution"
#: The longest lease-grace period after a historical lease expiry (Organization policy).
MAX_GRACE_US = 900_000_000
USAGE_RECORDED = "ext.missionweaveprotocol.core.resource_usage_recorded"

#: Every member the binding must carry (§11.5).
BINDING_MEMBERS = (
    "agentId",
    "groupId",
    "workItemId",
    "sessionEpoch",
    "ownershipEpoch",
    "executionLeaseId",
    "disconnectedAt",
    "bufferedAt",
    "graceDeadline",
    "leaseExpiresAt",
    "usageDelta",
)
_RULE = "§11.5 bounded offline execution"


def binding_of(cmd: CommandView) -> dict[str, Any] | None:
    """The bounded-offline binding of ``cmd`` (None when it has none), checked for shape."""
    extensions = cmd.document.get("extensions") or {}
    entry = extensions.get(BOUNDED_OFFLINE)
    if entry is None:
        return None
    if entry.get("critical") is not True:
        raise invalid(
            "The bounded-offline-execution binding must be marked critical: an Authority that "
            "cannot interpret it must refuse the Command.",
            rule=_RULE,
        )
    data = entry.get("data")
    missing = [m for m in BINDING_MEMBERS if not isinstance(data, dict) or m not in data]
    if missing:
        raise invalid(
            "The bounded-offline-execution binding lacks " + ", ".join(missing) + ".",
            rule=_RULE,
            missing=missing,
        )
    assert isinstance(data, dict)
    return data


def extension_of(cmd: CommandView) -> dict[str, Any]:
    """The binding's whole ``extensions`` entry, as the accepted Event keeps it."""
    return dict(cmd.document["extensions"][BOUNDED_OFFLINE])


def _late(text: str) -> ProtocolError:
    return ProtocolError(ErrorCode.WORK_LEASE_EXPIRED, text, rule=_RULE)


def check(
    ctx: Context, cmd: CommandView, binding: dict[str, Any]
) -> tuple[WorkItemRecord, LeaseRecord]:
    """The WorkItem and historical lease the binding names, or the rejection."""
    wid = cmd.payload.get("workItemId")
    outside = [
        what
        for what, ok in (
            ("the Agent is not the actor", binding["agentId"] == cmd.actor_id),
            ("the Group is not the Command's", binding["groupId"] == cmd.group_id),
            ("the WorkItem is not the payload's", binding["workItemId"] == wid),
            (
                "the envelope names another WorkItem",
                cmd.work_item_id in (None, binding["workItemId"]),
            ),
        )
        if not ok
    ]
    if outside:
        raise invalid(
            "Buffered progress must stay inside the WorkItem Conversation its binding names: "
            + "; ".join(outside)
            + ".",
            rule=_RULE,
        )
    item = ctx.work_item(wid, cmd.group_id)
    if cmd.conversation_id not in (None, item.conversation_id):
        raise invalid(
            f"Buffered progress for {item.work_item_id} belongs in its Conversation "
            f"{item.conversation_id}, not {cmd.conversation_id}.",
            rule=_RULE,
        )
    owner = item.owner["agentId"] if item.owner else None
    if owner != cmd.actor_id or item.ownership_epoch != binding["ownershipEpoch"]:
        raise ProtocolError(
            ErrorCode.WORK_STALE_OWNERSHIP,
            f"The progress was buffered under Ownership Epoch {binding['ownershipEpoch']} by "
            f"{cmd.actor_id}, but {item.work_item_id} is now owned by {owner} at epoch "
            f"{item.ownership_epoch}: the owner changed while the Worker was offline.",
            details={"buffered": binding["ownershipEpoch"], "current": item.ownership_epoch},
            rule=_RULE,
        )
    lease = ctx.state.leases.get(binding["executionLeaseId"])
    if (
        lease is None
        or lease.lease_type != "execution"
        or lease.work_item_id != item.work_item_id
        or lease.holder_agent_id != cmd.actor_id
        or lease.ownership_epoch != item.ownership_epoch
        or lease.session_epoch != binding["sessionEpoch"]
        or lease.expires_at != binding["leaseExpiresAt"]
        or item.execution_lease_id != lease.lease_id
    ):
        raise _late(
            f"The binding's historical lease {binding['executionLeaseId']} is not the Execution "
            f"Lease {item.work_item_id} ran under in Session Epoch {binding['sessionEpoch']} "
            "(with that expiry): nothing can be reconciled against it."
        )
    check_window(binding, lease)
    return item, lease


def check_window(binding: dict[str, Any], lease: LeaseRecord) -> None:
    def us(name: str) -> int:
        return parse_timestamp(binding[name]).epoch_micros

    issued = parse_timestamp(lease.issued_at).epoch_micros
    disconnected, buffered, grace = us("disconnectedAt"), us("bufferedAt"), us("graceDeadline")
    if not issued <= disconnected < lease.expires_us:
        raise _late(
            f"The Worker lost contact at {binding['disconnectedAt']}, outside its lease "
            f"({lease.issued_at} to {lease.expires_at}): only already-active work may continue "
            "offline."
        )
    if grace > lease.expires_us + MAX_GRACE_US:
        raise _late(
            f"The grace deadline {binding['graceDeadline']} lies more than "
            f"{MAX_GRACE_US // 60_000_000} minutes after the lease expiry {lease.expires_at}."
        )
    if not disconnected <= buffered <= grace:
        raise _late(
            f"The progress was buffered at {binding['bufferedAt']}, outside the lease-grace "
            f"window ({binding['disconnectedAt']} to {binding['graceDeadline']})."
        )
    closed = (
        lease.state in (LeaseState.RELEASED, LeaseState.REVOKED) and lease.closed_at is not None
    )
    if closed and buffered > parse_timestamp(str(lease.closed_at)).epoch_micros:
        raise _late(
            f"The progress was buffered at {binding['bufferedAt']}, after lease "
            f"{lease.lease_id} was {lease.state} at {lease.closed_at}."
        )


def charge(
    ctx: Context, cmd: CommandView, item: WorkItemRecord, binding: dict[str, Any]
) -> Draft | None:
    """The ``resource_usage_recorded`` draft for a nonzero offline delta (None for a zero
    delta), after charging the WorkItem's whole budget ancestry; ``BUDGET_EXCEEDED`` if any
    dimension of any ledger would overflow."""
    raw = binding["usageDelta"]
    if not isinstance(raw, dict):
        raise invalid("The binding's usageDelta is an object of the six dimensions.", rule=_RULE)
    if set(raw) <= set(budgets.DELTA_MEMBER.values()) and all(
        type(v) in (int, float) and v == 0 for v in raw.values()
    ):
        return None  # nothing was used offline: nothing to charge
    delta = budgets.parse_delta(raw)
    chain = budgets.charge(budgets.ancestry(ctx.state, ("work_item", item.work_item_id)), delta)
    return Draft(
        kind=USAGE_RECORDED,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "ownershipEpoch": item.ownership_epoch,
            "leaseId": binding["executionLeaseId"],
            "sessionEpoch": cmd.session_epoch,
            "offline": {
                "historicalSession": {
                    "agentId": binding["agentId"],
                    "sessionEpoch": binding["sessionEpoch"],
                    "executionLeaseId": binding["executionLeaseId"],
                    "bufferedAt": binding["bufferedAt"],
                },
                "reconciliationSession": {
                    "agentId": cmd.actor_id,
                    "sessionEpoch": cmd.session_epoch,
                    "actionId": cmd.action_id,
                },
            },
            "delta": {budgets.DELTA_MEMBER[d]: v for d, v in sorted(delta.items())},
            "ancestry": [budgets.ledger_summary(ledger) for ledger in chain],
        },
    )


__all__ = [
    "BINDING_MEMBERS",
    "BOUNDED_OFFLINE",
    "MAX_GRACE_US",
    "binding_of",
    "charge",
    "check",
    "check_window",
    "extension_of",
]
