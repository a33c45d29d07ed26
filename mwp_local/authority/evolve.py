"""``evolve(state, event)``: fold one accepted Event into the Authority's state.

The same function serves live decisions (right after a handler's Event is signed) and replay
(rebuilding state from the log), so state is a pure fold of the log. Reducers are registered by
Event kind; an Event kind with no reducer changes nothing but the Group's last sequence.
Reducers read only the Event and the state before it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from ..protocol.identity_memo import IdentityMemo
from ..protocol.timestamps import parse_timestamp
from .model import GroupRecord, LeaseRecord
from .state import AuthorityState

Reducer = Callable[[AuthorityState, dict[str, Any]], None]

_REDUCERS: dict[str, Reducer] = {}
REDUCERS: Mapping[str, Reducer] = MappingProxyType(_REDUCERS)


def reducer(*kinds: str) -> Callable[[Reducer], Reducer]:
    """Register the decorated function for the given Event kinds."""

    def register(fn: Reducer) -> Reducer:
        for kind in kinds:
            if kind in _REDUCERS:
                raise ValueError(f"two reducers for {kind}")
            _REDUCERS[kind] = fn
        return fn

    return register


def evolve(state: AuthorityState, event: dict[str, Any]) -> None:
    """Fold ``event`` into ``state``."""
    group_id = event.get("groupId")
    if group_id is None:
        state.put("meta", "org_events", int(state.meta.get("org_events", 0)) + 1)
    fn = _REDUCERS.get(event["kind"])
    if fn is not None:
        fn(state, event)
    payload = event["payload"]
    for lease_doc in payload.get("leases", ()) if isinstance(payload, dict) else ():
        put_lease(state, lease_doc)
    if group_id is not None:
        group = state.groups.get(group_id)
        if group is not None:
            state.put("groups", group_id, _with_sequence(group, event["sequence"]))


def _with_sequence(group: GroupRecord, sequence: int) -> GroupRecord:
    return replace(group, last_sequence=sequence)


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


#: The record of each Lease document folded lately: every agent folds the same Event object,
#: and a ``LeaseRecord`` is immutable, so they share one.
_LEASES: IdentityMemo[Mapping[str, Any], LeaseRecord] = IdentityMemo()


def put_lease(state: AuthorityState, doc: Mapping[str, Any]) -> None:
    """Store the lease a Lease document describes (Events carry leases under ``leases``)."""
    lease = _LEASES.get(doc, lease_from_document)
    state.put("leases", lease.lease_id, lease)
    if lease.is_active:
        state.put("active_leases", lease.lease_id, lease.expires_us)
    elif lease.lease_id in state.active_leases:
        state.put("active_leases", lease.lease_id, None)


# Reducer modules register themselves on import.
from . import reducers as _reducers  # noqa: E402,F401
