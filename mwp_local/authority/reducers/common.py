"""Shared reducer helpers: finding the aggregate an Event names and moving it through the state
tables again, so that replaying a log also audits it (``ReplayError`` for an impossible Event).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.tables import (
    MISSION_TABLE,
    WORK_ITEM_TABLE,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)
from ..model import WorkItemRecord
from ..state import AuthorityState


class ReplayError(ValueError):
    """The log holds an Event the state tables or the current state do not allow."""


def item_of(state: AuthorityState, event: dict[str, Any]) -> WorkItemRecord:
    wid = event["payload"]["workItemId"]
    item = state.work_items.get(wid)
    if item is None:
        raise ReplayError(f"Event {event['eventId']} refers to unknown WorkItem {wid}")
    return item


def move(
    state: AuthorityState,
    event: dict[str, Any],
    item: WorkItemRecord,
    transition: WorkTransition,
    target: WorkItemState,
    **changes: Any,
) -> None:
    try:
        WORK_ITEM_TABLE.target(item.state, transition, target, subject=item.work_item_id)
    except Exception as exc:  # the log disagrees with the table
        raise ReplayError(f"Event {event['eventId']} ({event['kind']}): {exc}") from None
    update(state, event, item, state_=target, **changes)


def update(
    state: AuthorityState, event: dict[str, Any], item: WorkItemRecord, **changes: Any
) -> None:
    if "state_" in changes:
        changes["state"] = changes.pop("state_")
    changes.setdefault("revision", event.get("aggregateRevision", item.revision))
    changes.setdefault("updated_at", event["occurredAt"])
    changes.setdefault("last_sequence", event["sequence"])
    state.put("work_items", item.work_item_id, replace(item, **changes))


def mission_move(
    state: AuthorityState,
    event: dict[str, Any],
    transition: MissionTransition,
    **changes: Any,
) -> None:
    mission = state.missions[event["payload"]["missionId"]]
    try:
        target = MISSION_TABLE.lookup(mission.state, transition).targets[0]
    except Exception as exc:
        raise ReplayError(f"Event {event['eventId']} ({event['kind']}): {exc}") from None
    state.put(
        "missions",
        mission.mission_id,
        replace(
            mission,
            state=target,
            revision=event["aggregateRevision"],
            last_sequence=event["sequence"],
            **changes,
        ),
    )


def lease_of_type(event: dict[str, Any], lease_type: str) -> str | None:
    for doc in event["payload"].get("leases", ()):
        if doc["leaseType"] == lease_type and doc["state"] == "active":
            return str(doc["leaseId"])
    return None
