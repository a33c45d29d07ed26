"""What a Worker holds and is offered, kept up to date from the Events it observes, so that a
decision costs what this Worker holds rather than what the Organization holds.

``WorkerIndex.reindex`` is correct because every reducer that writes a WorkItem or one of its
offers does so for the WorkItem its Event's payload names (``workItemId``, or ``workItem`` when
it is created), and the Worker's ``observe`` sees each Event right after it is folded, replays
included: a restarted Worker rebuilds the same index. An entry may outlive its reason (an offer
answered since, an item no longer queued); decisions check every condition again, so only a
missing entry could change behaviour. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...authority.model import WorkItemRecord
from ...protocol.tables import OfferStatus
from ...protocol.tables import WorkItemState as W
from ..base import View

__all__ = ["HELD_STATES", "WorkerIndex", "work_item_of"]

#: The states in which an owned WorkItem counts as held by its Worker.
HELD_STATES = frozenset((W.QUEUED, W.ACTIVE, W.BLOCKED))


@dataclass
class WorkerIndex:
    """Owned WorkItems queued, active or blocked; pending offers addressed to this Worker and
    not answered; the order in which the replica first held each WorkItem (its order in
    ``state.work_items``, which decisions iterate in)."""

    held: set[str] = field(default_factory=set)
    open_offers: set[str] = field(default_factory=set)
    order: dict[str, int] = field(default_factory=dict)

    def reindex(self, view: View, work_item_id: str, answered: set[str]) -> None:
        """Bring the index up to date for one WorkItem, from the replica as it is now."""
        item = view.state.work_items.get(work_item_id)
        if item is None:
            self.held.discard(work_item_id)
            return
        self.order.setdefault(work_item_id, len(self.order))
        me = view.me
        if item.state in HELD_STATES and item.owner and item.owner["agentId"] == me:
            self.held.add(work_item_id)
        else:
            self.held.discard(work_item_id)
        for offer_id in item.offer_ids:
            offer = view.state.offers.get(offer_id)
            if offer is None or offer.agent_id != me:
                continue
            if offer.status == OfferStatus.PENDING and offer_id not in answered:
                self.open_offers.add(offer_id)
            else:
                self.open_offers.discard(offer_id)

    def held_items(self, view: View) -> list[WorkItemRecord]:
        """The owned WorkItems queued, active or blocked, in the replica's order."""
        me = view.me
        items = view.state.work_items
        out = []
        for wid in sorted(self.held, key=self.order.__getitem__):
            item = items[wid]
            if item.state in HELD_STATES and item.owner and item.owner["agentId"] == me:
                out.append(item)
        return out


def work_item_of(payload: Any) -> str | None:
    """The WorkItem an Event's payload names (``workItemId``, or the created ``workItem``)."""
    if not isinstance(payload, dict):
        return None
    work_item_id = payload.get("workItemId")
    if work_item_id is None and isinstance(payload.get("workItem"), dict):
        work_item_id = payload["workItem"].get("workItemId")
    return work_item_id if isinstance(work_item_id, str) else None
