"""Shared reducer helpers: finding the aggregate an Event names and applying the row it records.

``evolve`` has already found the row (a ``Step``) and checked it against the state tables, so
a reducer only applies ``step.target`` with the changes its Event kind brings; replaying a log
thereby audits it (``ReplayError`` for an impossible Event).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.tables import LeaseState
from ..evolve import Fold, ReplayError, Step
from ..model import WorkItemRecord
from ..state import AuthorityState

__all__ = [
    "Fold",
    "ReplayError",
    "item_of",
    "lease_of_type",
    "mission_move",
    "move",
    "recorded",
    "update",
]


def item_of(state: AuthorityState, event: dict[str, Any]) -> WorkItemRecord:
    """The WorkItem the Event's payload names (``ReplayError`` if there is none)."""
    wid = event["payload"]["workItemId"]
    item = state.work_items.get(wid)
    if item is None:
        raise ReplayError(f"Event {event['eventId']} refers to unknown WorkItem {wid}")
    return item


def recorded(event: dict[str, Any], fold: Fold) -> Step:
    """The row the Event records (``evolve`` found and checked it); ``ReplayError`` when the
    tables say it records none (a table without the row the Event's kind needs)."""
    step = fold.step
    if step is None:
        raise ReplayError(
            f"Event {event['eventId']} ({event['kind']}) records no row of the state tables"
        )
    return step


def move(
    state: AuthorityState,
    event: dict[str, Any],
    item: WorkItemRecord,
    fold: Fold,
    **changes: Any,
) -> None:
    """Move ``item`` to the target of the row the Event records, with ``changes``."""
    update(state, event, item, state_=recorded(event, fold).target, **changes)


def update(
    state: AuthorityState, event: dict[str, Any], item: WorkItemRecord, **changes: Any
) -> None:
    """Replace ``item`` with ``changes``, stamped with the Event's revision, time and sequence."""
    if "state_" in changes:
        changes["state"] = changes.pop("state_")
    changes.setdefault("revision", event.get("aggregateRevision", item.revision))
    changes.setdefault("updated_at", event["occurredAt"])
    changes.setdefault("last_sequence", event["sequence"])
    state.put("work_items", item.work_item_id, replace(item, **changes))


def mission_move(
    state: AuthorityState,
    event: dict[str, Any],
    fold: Fold,
    **changes: Any,
) -> None:
    """Move the Event's Mission to the target of the row the Event records."""
    mission = state.missions[event["payload"]["missionId"]]
    state.put(
        "missions",
        mission.mission_id,
        replace(
            mission,
            state=recorded(event, fold).target,
            revision=event["aggregateRevision"],
            last_sequence=event["sequence"],
            **changes,
        ),
    )


def lease_of_type(event: dict[str, Any], lease_type: str) -> str | None:
    """The ID of the active lease of ``lease_type`` the Event carries, if any."""
    for doc in event["payload"].get("leases", ()):
        if doc["leaseType"] == lease_type and doc["state"] == LeaseState.ACTIVE:
            return str(doc["leaseId"])
    return None
