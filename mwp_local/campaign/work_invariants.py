"""The WorkItem invariants: §10.2 paths, fencing, one live owner, no late completion, budgets.

Each walks the log once with its own ``Tracker`` (an independent fold of the wire documents),
judging every Event against the facts as they stood just before it.
"""

from __future__ import annotations

from typing import Any

from ..authority.offline import BOUNDED_OFFLINE, MAX_GRACE_US
from ..protocol.tables import IN_STATE_ACTIONS, WORK_ITEM_TABLE, WorkItemAction, WorkItemState
from ..protocol.tables import WorkTransition as T
from .logdir import LogView
from .registry import Tally, invariant
from .tracker import USAGE, Tracker, classify, micros, work_item_of

W = WorkItemState
#: Events that act on a WorkItem without moving it, and the in-state action each records.
_IN_STATE = {
    "artifact.published": WorkItemAction.PUBLISH_ARTIFACT,
    USAGE: WorkItemAction.RECORD_USAGE,
}


@invariant(
    "work_item_paths",
    "every WorkItem moves only along rows of the §10.2 table (WORK_ITEM_TABLE), from the state "
    "it is in to a next state the row allows; in-state actions happen only where allowed",
)
def _paths(view: LogView, tally: Tally) -> None:
    tracker = Tracker()
    for ev in view.events:
        doc = ev.doc
        wid = work_item_of(doc)
        moved = classify(doc)
        if wid is not None and moved is not None:
            transition, target = moved
            source = tracker.item(wid).state
            if transition is T.AUTHORIZE:
                created = source is W.NONE
                tally.check(created, f"{wid}: authorized again at position {ev.position}")
                source = W.OPEN_WORK_PROPOSAL if doc["payload"].get("proposalId") else W.NONE
            allowed = WORK_ITEM_TABLE.is_allowed(source, transition)
            row_ok = allowed and target in WORK_ITEM_TABLE.lookup(source, transition).targets
            tally.check(
                row_ok,
                f"{wid}: '{transition}' from '{source}' to '{target}' at position {ev.position} "
                f"({doc['kind']}) is not a row of the §10.2 table",
            )
            record = ev.entry.event
            if record.to_state is not None:
                tally.check(
                    (record.from_state, record.to_state) == (str(source), str(target)),
                    f"position {ev.position}: typed columns say {record.from_state} → "
                    f"{record.to_state}, the signed Events say {source} → {target}",
                )
        elif wid is not None and doc["kind"] in _IN_STATE:
            action = _IN_STATE[doc["kind"]]
            state = tracker.item(wid).state
            tally.check(
                state in IN_STATE_ACTIONS[action],
                f"{wid}: {doc['kind']} at position {ev.position} while '{state}'",
            )
        tracker.apply(doc)


@invariant(
    "fencing",
    "every accepted Command carried the current Session, Membership and Coordinator Epochs, the "
    "current Ownership Epoch of its WorkItem, and a live lease it holds (no transition by a "
    "stale epoch or Lease ID)",
)
def _fencing(view: LogView, tally: Tally) -> None:
    tracker = Tracker()
    judged: set[tuple[str, str]] = set()
    for ev in view.events:
        cmd = view.command_of(ev.doc)
        key = (ev.doc["actor"]["id"], (ev.doc.get("cause") or {}).get("id", ""))
        if cmd is not None and key not in judged:
            judged.add(key)
            _fences(cmd, tracker, micros(ev.doc["occurredAt"]), ev.position, tally)
        tracker.apply(ev.doc)


def _fences(cmd: dict[str, Any], tr: Tracker, at: int, position: int, tally: Tally) -> None:
    actor = cmd["actor"]["id"]
    where = f"{cmd['kind']} {cmd['actionId']} by {actor} (position {position})"
    group = cmd.get("groupId")
    if cmd["actor"]["type"] == "agent" and "sessionEpoch" in cmd:
        current = tr.sessions.get(actor)
        tally.check(
            cmd["sessionEpoch"] == current,
            f"{where}: Session Epoch {cmd['sessionEpoch']}, current {current}",
        )
    if "membershipEpoch" in cmd and group and (group, actor) in tr.memberships:
        epoch, state = tr.memberships[(group, actor)]
        tally.check(
            cmd["membershipEpoch"] == epoch and state != "ended",
            f"{where}: Membership Epoch {cmd['membershipEpoch']}, current {epoch} ({state})",
        )
    if "coordinatorEpoch" in cmd:
        mission = tr.mission_of_group(group)
        current_coordinator = tr.coordinators.get(mission or "")
        tally.check(
            current_coordinator == (actor, cmd["coordinatorEpoch"]),
            f"{where}: Coordinator Epoch {cmd['coordinatorEpoch']}, current {current_coordinator}",
        )
        return  # a Coordinator's Command is fenced by its Coordinator Epoch and lease
    payload = cmd["payload"]
    wid = payload.get("workItemId")
    if wid and "ownershipEpoch" in payload:
        item = tr.item(wid)
        tally.check(
            payload["ownershipEpoch"] == item.epoch and item.owner == actor,
            f"{where}: Ownership Epoch {payload['ownershipEpoch']} of {wid}, current "
            f"{item.epoch} held by {item.owner}",
        )
    offline = (cmd.get("extensions") or {}).get(BOUNDED_OFFLINE)
    if offline is not None and "leaseId" in payload:
        _offline(offline["data"], payload["leaseId"], actor, tr, where, tally)
    elif "leaseId" in payload:
        lease = tr.live_lease(payload["leaseId"], at)
        tally.check(
            lease is not None and lease["holderAgentId"] == actor,
            f"{where}: lease {payload['leaseId']} is not a live lease of the actor "
            f"({(tr.leases.get(payload['leaseId']) or {}).get('state', 'unknown')})",
        )


def _offline(
    binding: dict[str, Any], lease_id: str, actor: str, tr: Tracker, where: str, tally: Tally
) -> None:
    """Progress buffered through a Group-service outage (§11.5): judged at the time it was
    buffered, inside the historical lease and its bounded grace period."""
    lease = tr.leases.get(lease_id) or {}
    buffered = micros(binding["bufferedAt"])
    expires = micros(lease.get("expiresAt") or binding["leaseExpiresAt"])
    closed = lease.get("closedAt") if lease.get("state") in ("released", "revoked") else None
    ok = (
        binding["executionLeaseId"] == lease_id
        and lease.get("holderAgentId") == actor == binding["agentId"]
        and micros(binding["disconnectedAt"]) < expires
        and micros(binding["disconnectedAt"]) <= buffered <= micros(binding["graceDeadline"])
        and micros(binding["graceDeadline"]) <= expires + MAX_GRACE_US
        and (closed is None or buffered <= micros(closed))
    )
    tally.check(
        ok,
        f"{where}: progress buffered offline at {binding['bufferedAt']} is outside lease "
        f"{lease_id}'s window (expires {lease.get('expiresAt')}, grace until "
        f"{binding['graceDeadline']}, {lease.get('state', 'unknown')})",
    )


@invariant(
    "single_live_owner",
    "at every point of the log each WorkItem has at most one Agent holding a live ownership, "
    "execution or blocked lease, and Ownership Epochs only increase",
)
def _single_owner(view: LogView, tally: Tally) -> None:
    tracker = Tracker()
    for ev in view.events:
        doc = ev.doc
        wid = work_item_of(doc)
        before = list(tracker.item(wid).epochs) if wid else []
        tracker.apply(doc)
        accepted = doc["kind"] == "work.offer.accepted"
        if wid is None or (not doc["payload"].get("leases") and not accepted):
            continue
        item = tracker.item(wid)
        if doc["kind"] == "work.offer.accepted":
            tally.check(
                all(e < item.epoch for e in before),
                f"{wid}: Ownership Epoch {item.epoch} at position {ev.position} after {before}",
            )
        holders = tracker.live_holders(wid, micros(doc["occurredAt"]))
        tally.check(
            len(holders) <= 1,
            f"{wid}: {len(holders)} live owners after position {ev.position}: "
            f"{', '.join(sorted(holders))}",
        )


@invariant(
    "no_late_completion",
    "a WorkItem is submitted only by its current owner under a live Execution Lease of the "
    "current Ownership Epoch, and completed only from a submission of that same epoch",
)
def _late(view: LogView, tally: Tally) -> None:
    tracker = Tracker()
    submitted: dict[str, tuple[int, str | None]] = {}
    for ev in view.events:
        doc = ev.doc
        wid = work_item_of(doc)
        at = micros(doc["occurredAt"])
        if wid and doc["kind"] == "work.submitted":
            item = tracker.item(wid)
            cmd = view.command_of(doc) or {}
            lease_id = (cmd.get("payload") or {}).get("leaseId")
            lease = tracker.live_lease(lease_id, at) if lease_id else None
            tally.check(
                lease is not None
                and lease["holderAgentId"] == doc["actor"]["id"] == item.owner
                and lease.get("ownershipEpoch") == item.epoch,
                f"{wid}: submitted at position {ev.position} without a live Execution Lease "
                f"of the current epoch {item.epoch} (lease {lease_id})",
            )
            submitted[wid] = (item.epoch, item.owner)
        elif (
            wid and doc["kind"] == "work.result.accepted" and "childMissionId" not in doc["payload"]
        ):
            item = tracker.item(wid)
            tally.check(
                submitted.get(wid) == (item.epoch, item.owner),
                f"{wid}: completed at position {ev.position} from a submission of "
                f"{submitted.get(wid)}, while the current epoch and owner are "
                f"{(item.epoch, item.owner)}",
            )
        tracker.apply(doc)


@invariant(
    "budgets",
    "recorded usage never exceeds any limit of the WorkItem's or any ancestor's budget, and "
    "each usage Event's own cumulative figures agree with the log's sum",
)
def _budgets(view: LogView, tally: Tally) -> None:
    tracker = Tracker()
    for ev in view.events:
        tracker.apply(ev.doc)
        if ev.doc["kind"] != USAGE:
            continue
        payload = ev.doc["payload"]
        scope: tuple[str, str] | None = ("work_item", payload["workItemId"])
        while scope is not None:
            used, limits = tracker.used.get(scope, {}), tracker.limits.get(scope, {})
            for dim, limit in limits.items():
                tally.check(
                    used.get(dim, 0) <= limit,
                    f"{scope[0]} {scope[1]}: {dim} used {used.get(dim, 0):g} > limit {limit:g} "
                    f"after position {ev.position}",
                )
            scope = tracker.parent.get(scope)
        for entry in payload.get("ancestry") or ():
            key = (entry["scope"]["type"], entry["scope"]["id"])
            mine = tracker.used.get(key, {})
            for dim, value in (entry.get("cumulative") or {}).items():
                tally.check(
                    abs(mine.get(dim, 0) - value) < 1e-9,
                    f"position {ev.position}: {key[1]} reports {dim} {value:g}, the log sums "
                    f"{mine.get(dim, 0):g}",
                )


def lease_intervals(view: LogView) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(holder, WorkItem) → the intervals its Execution Leases were live, from their last
    snapshots in the log."""
    last: dict[str, dict[str, Any]] = {}
    for ev in view.events:
        for lease in ev.doc["payload"].get("leases") or ():
            last[lease["leaseId"]] = lease
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for lease in last.values():
        if lease.get("leaseType") != "execution" or not lease.get("workItemId"):
            continue
        end = micros(lease.get("closedAt") or lease["expiresAt"])
        end = min(end, micros(lease["expiresAt"]))
        key = (lease["holderAgentId"], lease["workItemId"])
        out.setdefault(key, []).append((micros(lease["startsAt"]), end))
    return out
