"""An independent fold of the Event log for the invariant checker.

The checker must not trust the code it checks, so it does not use the Authority's reducers for
what it judges. ``classify`` maps a signed Event to the §10.2 transition it records, read from
the wire document alone, and ``Tracker`` folds the facts the fences depend on (Session Epochs,
Membership Epochs, Coordinators and their epochs, WorkItem owners and Ownership Epochs, lease
snapshots, budget limits and usage). Transitions are judged against ``WORK_ITEM_TABLE`` itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..authority.model import LIMIT_MEMBER
from ..protocol.tables import WorkItemState, WorkTransition
from ..protocol.timestamps import parse_timestamp

W = WorkItemState
T = WorkTransition

#: Event kind → (transition, next state) when nothing in the payload decides otherwise.
_SIMPLE: dict[str, tuple[WorkTransition, WorkItemState]] = {
    "work.offer.created": (T.OFFER, W.OFFERED),
    "work.offer.accepted": (T.ACCEPT_OFFER, W.QUEUED),
    "approval.execution.granted": (T.GRANT_EXECUTION, W.QUEUED),
    "work.started": (T.START, W.ACTIVE),
    "work.checkpointed": (T.CHECKPOINT, W.QUEUED),
    "work.submitted": (T.SUBMIT, W.SUBMITTED),
    "mission.child.created": (T.CREATE_CHILD, W.BLOCKED),
}
REVOKED = "ext.missionweaveprotocol.core.work_execution_lease_revoked"
SESSION_OPENED = "ext.missionweaveprotocol.identity.session_opened"
USAGE = "ext.missionweaveprotocol.core.resource_usage_recorded"


def micros(text: str) -> int:
    """A timestamp's instant in microseconds."""
    return parse_timestamp(text).epoch_micros


def work_item_of(doc: dict[str, Any]) -> str | None:
    """The WorkItem an Event is about (created by ``work.authorized``), if any."""
    if doc["kind"] == "work.authorized":
        return str(doc["payload"]["workItem"]["workItemId"])
    wid = doc.get("workItemId") or doc["payload"].get("workItemId")
    return str(wid) if wid else None


def classify(doc: dict[str, Any]) -> tuple[WorkTransition, WorkItemState] | None:
    """The §10.2 transition a signed Event records and the state it claims, or None."""
    kind, payload = doc["kind"], doc["payload"]
    from_event = (doc.get("cause") or {}).get("type") == "event"
    child = "childMissionId" in payload
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "work.authorized":
        return T.AUTHORIZE, W.OPEN
    if kind == "work.blocked":
        return (T.CHILD_FAILED if child else T.BLOCK), W.BLOCKED
    if kind == "work.unblocked":
        return T.UNBLOCK, W(payload["toState"])
    if kind == "work.result.accepted":
        return (T.CHILD_APPROVED if child else T.ACCEPT_RESULT), W.VERIFIED
    if kind in ("work.failed", "work.cancelled"):
        target = W.FAILED if kind == "work.failed" else W.CANCELLED
        if from_event:
            return (T.CHILD_FAILED if child else T.PARENT_TERMINAL), target
        return (T.FAIL if kind == "work.failed" else T.CANCEL), target
    if kind == REVOKED and payload.get("reason") == "session_replaced":
        return T.SESSION_REPLACED, W.QUEUED
    return None


@dataclass
class Item:
    """What the checker knows of one WorkItem."""

    state: WorkItemState = W.NONE
    owner: str | None = None
    epoch: int = 0
    #: Every Ownership Epoch that began, in order.
    epochs: list[int] = field(default_factory=list)
    mission: str | None = None


@dataclass
class Tracker:
    """The facts fences depend on, folded from Events in log order."""

    sessions: dict[str, int] = field(default_factory=dict)
    memberships: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    #: Mission ID → (Coordinator Agent ID, Coordinator Epoch).
    coordinators: dict[str, tuple[str | None, int]] = field(default_factory=dict)
    group_mission: dict[str, str] = field(default_factory=dict)
    items: dict[str, Item] = field(default_factory=dict)
    #: Lease ID → its latest snapshot.
    leases: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Scope ("work_item" | "mission", ID) → limits, usage, and the parent scope.
    limits: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    used: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    parent: dict[tuple[str, str], tuple[str, str] | None] = field(default_factory=dict)

    def item(self, wid: str) -> Item:
        """The record of ``wid`` (created empty on first sight)."""
        return self.items.setdefault(wid, Item())

    def mission_of_group(self, group: str | None) -> str | None:
        """The Mission whose primary Group is ``group``."""
        return self.group_mission.get(group) if group else None

    def live_lease(self, lease_id: str, at_us: int) -> dict[str, Any] | None:
        """The snapshot of ``lease_id`` if it is active and unexpired at ``at_us``."""
        lease = self.leases.get(lease_id)
        if lease is None or lease.get("state") != "active":
            return None
        return lease if micros(lease["expiresAt"]) > at_us else None

    def live_holders(self, wid: str, at_us: int) -> set[str]:
        """Agents holding a live ownership, execution or blocked lease on ``wid``."""
        return {
            lease["holderAgentId"]
            for lid, lease in self.leases.items()
            if lease.get("workItemId") == wid
            and lease.get("leaseType") in ("ownership", "execution", "blocked")
            and self.live_lease(lid, at_us) is not None
        }

    def apply(self, doc: dict[str, Any]) -> None:
        """Fold one Event."""
        kind, payload = doc["kind"], doc["payload"]
        for lease in payload.get("leases") or ():
            self.leases[lease["leaseId"]] = lease
        if kind == SESSION_OPENED:
            self.sessions[payload["agentId"]] = int(payload["sessionEpoch"])
        elif kind in ("membership.changed", "membership.ended"):
            m = payload["membership"]
            self.memberships[(m["groupId"], m["member"]["id"])] = (
                int(m["membershipEpoch"]),
                str(m.get("state", "active")),
            )
        elif kind in ("mission.created", "mission.coordinator.assigned"):
            self._mission(kind, payload)
        elif kind == USAGE:
            self._usage(payload)
        wid = work_item_of(doc)
        if wid is None:
            return
        item = self.item(wid)
        if kind == "work.authorized":
            work = payload["workItem"]
            item.mission = work["missionId"]
            scope = ("work_item", wid)
            self.limits[scope] = _limits(work["contract"]["budget"])
            self.parent[scope] = ("mission", work["missionId"])
        elif kind == "work.offer.accepted":
            item.owner = payload["owner"]["agentId"]
            item.epoch = int(payload["owner"]["ownershipEpoch"])
            item.epochs.append(item.epoch)
        elif (kind == "work.offer.created" and payload.get("fencedOwner")) or (
            kind == "work.unblocked" and payload.get("toState") == "open"
        ):
            item.owner = None
        moved = classify(doc)
        if moved is not None:
            item.state = moved[1]

    def _mission(self, kind: str, payload: dict[str, Any]) -> None:
        if kind == "mission.created":
            mission = payload["mission"]
            mid = mission["missionId"]
            self.group_mission[mission["groupId"]] = mid
            scope = ("mission", mid)
            self.limits[scope] = _limits(mission.get("budget") or {})
            parent = payload.get("budgetParent")
            self.parent[scope] = (str(parent[0]), str(parent[1])) if parent else None
            coordinator = mission.get("coordinator") or {}
        else:
            mid = payload["missionId"]
            coordinator = payload["coordinator"]
        self.coordinators[mid] = (
            coordinator.get("agentId"),
            int(coordinator.get("coordinatorEpoch", 0)),
        )

    def _usage(self, payload: dict[str, Any]) -> None:
        scope: tuple[str, str] | None = ("work_item", payload["workItemId"])
        seen: set[tuple[str, str]] = set()
        while scope is not None and scope not in seen:
            seen.add(scope)
            used = self.used.setdefault(scope, {})
            for dim, amount in payload["delta"].items():
                used[dim] = used.get(dim, 0) + amount
            scope = self.parent.get(scope)


def _limits(budget: dict[str, Any]) -> dict[str, float]:
    return {dim: float(budget[m]) for dim, m in LIMIT_MEMBER.items() if m in budget}
