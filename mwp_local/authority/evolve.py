"""``evolve(state, event)``: fold one accepted Event into the Authority's state.

The same function serves live decisions (right after a handler's Event is signed) and replay
(rebuilding state from the log), so state is a pure fold of the log. Before an Event's reducer
runs, the state tables say which row the Event records (``TransitionTable.recorded_by``: its
kind, its cause, its mark) and check it against the aggregate's current state, so replaying a
log also audits it: an Event the tables would not allow raises ``ReplayError`` instead of
folding an impossible state. The reducer then applies the row's target (a ``Step``); it never
names a state itself. Every Lease and Membership document an Event carries is checked against
the lease and membership tables the same way.

Reducers are registered by Event kind; an Event kind with no reducer changes nothing but the
Group's last sequence (and the leases it carries). Reducers read only the Event and the state
before it. ``tables`` is the rule set to follow (the specification's, ``PROTOCOL_TABLES``,
unless the caller gives another).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from ..protocol.documents.kinds import EventKind, ExtensionEventKind
from ..protocol.tables import (
    PROTOCOL_TABLES,
    GroupState,
    GroupTransition,
    LeaseState,
    MissionState,
    Row,
    StateTables,
    TransitionTable,
    WorkItemState,
)
from ..protocol.timestamps import parse_timestamp
from .model import GroupRecord, LeaseRecord, event_ids_digest
from .state import AuthorityState


class ReplayError(ValueError):
    """The log holds an Event the state tables or the current state do not allow."""


@dataclass(frozen=True, slots=True)
class Step:
    """The row of a state table an Event records, checked against the state before it: the
    aggregate's state then and the target the Event moves it to."""

    row: Row[Any, Any]
    source: Any
    target: Any


@dataclass(frozen=True, slots=True)
class Fold:
    """What a reducer is given besides the state and the Event: the rule set being followed
    and the row the Event records (None when it records no WorkItem or Mission row)."""

    tables: StateTables
    step: Step | None


#: A reducer: the state, the Event, and the ``Fold`` it is part of.
Reducer = Callable[[AuthorityState, dict[str, Any], Fold], None]

_REDUCERS: dict[str, Reducer] = {}
REDUCERS: Mapping[str, Reducer] = MappingProxyType(_REDUCERS)


def reducer(*kinds: EventKind | ExtensionEventKind) -> Callable[[Reducer], Reducer]:
    """Register the decorated function for the given Event kinds."""

    def register(fn: Reducer) -> Reducer:
        for kind in kinds:
            if kind in _REDUCERS:
                raise ValueError(f"two reducers for {kind}")
            _REDUCERS[kind] = fn
        return fn

    return register


def evolve(
    state: AuthorityState, event: dict[str, Any], tables: StateTables = PROTOCOL_TABLES
) -> None:
    """Fold ``event`` into ``state`` under the rule set ``tables``."""
    group_id = event.get("groupId")
    if group_id is None:
        state.put("meta", "org_events", int(state.meta.get("org_events", 0)) + 1)
    else:
        _recordable(state, event, group_id, tables)
    kind = event["kind"]
    fn = _REDUCERS.get(kind)
    if fn is not None:
        fn(state, event, Fold(tables, step(state, event, tables)))
    payload = event["payload"]
    for lease_doc in payload.get("leases", ()) if isinstance(payload, dict) else ():
        put_lease(state, lease_doc, tables.lease, event)
    if group_id is not None:
        group = state.groups.get(group_id)
        if group is not None:
            state.put("groups", group_id, _with_sequence(group, event))


def _recordable(
    state: AuthorityState, event: dict[str, Any], group_id: str, tables: StateTables
) -> None:
    """An Event in a Group the Group table no longer lets record one (archived) is refused;
    the archival's own Event is checked against its row by ``step``."""
    group = state.groups.get(group_id)
    if group is None or tables.group.recorded_by(event) is not None:
        return
    try:
        tables.group.lookup(GroupState(group.state), GroupTransition.RECORD_EVENT, subject=group_id)
    except Exception as exc:
        raise _refused(event, exc) from None


def _refused(event: Mapping[str, Any], exc: Exception) -> ReplayError:
    return ReplayError(f"Event {event['eventId']} ({event['kind']}): {exc}")


def step(state: AuthorityState, event: dict[str, Any], tables: StateTables) -> Step | None:
    """The WorkItem, Mission or Group row ``event`` records, checked against the current state
    (None when it records none); ``ReplayError`` when the tables do not allow it."""
    row = tables.work_item.recorded_by(event)
    if row is not None:
        source, subject = _work_item_state(state, event)
        return _checked(tables.work_item, row, source, subject, event)
    mission_row = tables.mission.recorded_by(event)
    if mission_row is not None:
        mission = state.missions.get(event["payload"]["missionId"])
        before = MissionState.NONE if mission is None else mission.state
        return _checked(tables.mission, mission_row, before, "", event)
    group_row = tables.group.recorded_by(event)
    if group_row is not None:
        group = state.groups.get(event.get("groupId") or "")
        if group is None:
            raise ReplayError(f"Event {event['eventId']} refers to an unknown Group")
        return _checked(tables.group, group_row, GroupState(group.state), group.group_id, event)
    return None


def _work_item_state(state: AuthorityState, event: dict[str, Any]) -> tuple[WorkItemState, str]:
    """The state of the WorkItem an Event is about, and its ID (empty before it exists)."""
    payload = event["payload"]
    wid = payload.get("workItemId")
    if wid is not None:
        item = state.work_items.get(wid)
        if item is None:
            raise ReplayError(f"Event {event['eventId']} refers to unknown WorkItem {wid}")
        return item.state, item.work_item_id
    created = payload.get("workItem")
    if created is not None and created["workItemId"] in state.work_items:
        item = state.work_items[created["workItemId"]]
        return item.state, item.work_item_id
    # Not a WorkItem yet: an open Work Proposal once one was recorded, else nothing at all.
    proposal_id = payload.get("proposalId")
    if proposal_id in state.proposals:
        return WorkItemState.OPEN_WORK_PROPOSAL, ""
    return WorkItemState.NONE, ""


def _checked(
    table: TransitionTable[Any, Any],
    row: Row[Any, Any],
    source: Any,
    subject: str,
    event: dict[str, Any],
) -> Step:
    try:
        target = row.target_of(event)
        table.target(source, row.transition, target, subject=subject)
    except Exception as exc:  # the log disagrees with the table
        raise _refused(event, exc) from None
    return Step(row=row, source=source, target=target)


def _with_sequence(group: GroupRecord, event: Mapping[str, Any]) -> GroupRecord:
    return replace(
        group,
        last_sequence=event["sequence"],
        event_ids_digest=event_ids_digest(group.event_ids_digest, event["eventId"]),
    )


def micros(text: str | None) -> int | None:
    """The instant of a timestamp text in microseconds (None stays None)."""
    return None if text is None else parse_timestamp(text).epoch_micros


def lease_from_document(doc: Mapping[str, Any]) -> LeaseRecord:
    """A LeaseRecord from a wire Lease document."""
    expires = micros(doc["expiresAt"])
    assert expires is not None
    return LeaseRecord(
        lease_id=doc["leaseId"],
        lease_type=doc["leaseType"],
        mission_id=doc["missionId"],
        group_id=doc["groupId"],
        holder_agent_id=doc["holderAgentId"],
        session_epoch=doc["sessionEpoch"],
        issued_at=doc["issuedAt"],
        starts_at=doc["startsAt"],
        expires_at=doc["expiresAt"],
        expires_us=expires,
        work_item_id=doc.get("workItemId"),
        ownership_epoch=doc.get("ownershipEpoch"),
        coordinator_epoch=doc.get("coordinatorEpoch"),
        start_by=doc.get("startBy"),
        start_by_us=micros(doc.get("startBy")),
        state=doc["state"],
        renewal_count=doc["renewalCount"],
        last_renewed_at=doc.get("lastRenewedAt"),
        closed_at=doc.get("closedAt"),
        closure_reason=doc.get("closureReason"),
    )


def put_lease(
    state: AuthorityState,
    doc: Mapping[str, Any],
    table: TransitionTable[LeaseState, Any] = PROTOCOL_TABLES.lease,
    event: Mapping[str, Any] | None = None,
) -> None:
    """Store the lease a Lease document describes (Events carry leases under ``leases``),
    after checking the lease table leads from the lease's previous state to the document's
    (``ReplayError`` when it does not: a closed lease is never reopened)."""
    lease = lease_from_document(doc)
    known = state.leases.get(lease.lease_id)
    source = LeaseState.NONE if known is None else LeaseState(known.state)
    if table.between(source, LeaseState(lease.state)) is None:
        where = f"Event {event['eventId']} ({event['kind']})" if event else "A Lease document"
        raise ReplayError(
            f"{where}: lease {lease.lease_id} cannot go from '{source}' to '{lease.state}' "
            "(Lease state table)"
        )
    state.put("leases", lease.lease_id, lease)
    if lease.is_active:
        state.put("active_leases", lease.lease_id, lease.expires_us)
    elif lease.lease_id in state.active_leases:
        state.put("active_leases", lease.lease_id, None)


# Reducer modules register themselves on import.
from . import reducers as _reducers  # noqa: E402,F401
