"""The Authority's current state: tables of aggregate records, changed only through ``put``.

``AuthorityState`` is the in-memory fold of every accepted Event (the log stays the truth). Its
tables are plain dicts of frozen records; every write goes through :meth:`AuthorityState.put`,
which records the previous value while a transaction is open, so a Command whose later Event
fails a check, or a batch whose commit fails, can be undone exactly (:meth:`rollback`). The
projection rows the log store keeps beside the Events are rendered from it on the storage side
(``store.projection_rows``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..protocol.registry import Registry
from .model import (
    AgentRecord,
    BudgetLedger,
    GroupRecord,
    LeaseRecord,
    MembershipRecord,
    MissionRecord,
    OfferRecord,
    WorkItemRecord,
)
from .records import ReceiptRecord

_MISSING = object()

#: Table name → projection table it feeds (tables with no projection are internal).
TABLES: tuple[str, ...] = (
    "agents",
    "groups",
    "missions",
    "memberships",
    "work_items",
    "offers",
    "leases",
    "budgets",
    "receipts",
    "proposals",
    "artifacts",
    "artifact_ids",
    "messages",
    "grants",
    "meta",
    "active_leases",
)


@dataclass
class AuthorityState:
    """Everything the Authority knows, folded from the log. Mutate only via ``put``."""

    registry: Registry
    organization_id: str
    agents: dict[str, AgentRecord] = field(default_factory=dict)
    groups: dict[str, GroupRecord] = field(default_factory=dict)
    missions: dict[str, MissionRecord] = field(default_factory=dict)
    memberships: dict[tuple[str, str], MembershipRecord] = field(default_factory=dict)
    work_items: dict[str, WorkItemRecord] = field(default_factory=dict)
    offers: dict[str, OfferRecord] = field(default_factory=dict)
    leases: dict[str, LeaseRecord] = field(default_factory=dict)
    budgets: dict[tuple[str, str], BudgetLedger] = field(default_factory=dict)
    receipts: dict[tuple[str, str], ReceiptRecord] = field(default_factory=dict)
    proposals: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Artifact ID → its signed manifest. Content addressing names the *content* (§13.1): the
    #: same bytes may back several manifests (two WorkItems that produced identical output),
    #: each its own Artifact over one blob.
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Content hash → the IDs of the Artifacts over that content, in publication order.
    artifact_ids: dict[str, tuple[str, ...]] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    grants: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Lease ID → expiry (µs) of every lease still active: what timers have to watch.
    active_leases: dict[str, int] = field(default_factory=dict)
    _undo: list[tuple[str, Any, Any]] | None = field(default=None, repr=False)
    _touched: set[tuple[str, Any]] = field(default_factory=set, repr=False)
    #: The ID of every WorkItem ``put`` in order, one entry a write (never cleared): what lets
    #: an agent's policy look at the WorkItems changed since it last looked
    #: (``agents.coordinator.index.ChangedItems``) instead of at all of them.
    work_item_changes: list[str] = field(default_factory=list, repr=False, compare=False)

    # ------------------------------------------------------------------ writes

    def put(self, table: str, key: Any, value: Any) -> None:
        """Set ``table[key] = value`` (``value=None`` deletes), remembering the old value."""
        target: dict[Any, Any] = getattr(self, table)
        if self._undo is not None:
            self._undo.append((table, key, target.get(key, _MISSING)))
        if value is None:
            target.pop(key, None)
        else:
            target[key] = value
        self._touched.add((table, key))
        if table == "work_items":
            self.work_item_changes.append(key)

    def set_registry(self, registry: Registry) -> None:
        """Replace the Registry (it is itself immutable)."""
        if self._undo is not None:
            self._undo.append(("registry", None, self.registry))
        self.registry = registry
        self._touched.add(("registry", None))

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Undo every ``put`` made inside the block if the block raises."""
        outer = self._undo
        self._undo = [] if outer is None else outer
        mark = len(self._undo)
        try:
            yield
        except BaseException:
            self._rollback_to(mark)
            if outer is None:
                self._undo = None
            raise
        if outer is None:
            self._undo = None

    def begin_batch(self) -> None:
        """Start recording an undo log for a whole group-commit batch."""
        self._undo = []

    def extend_batch(self) -> None:
        """Start recording an undo log unless one is being recorded (several batches in
        flight: see ``undo_mark`` and ``forget_undo``)."""
        if self._undo is None:
            self._undo = []

    def undo_mark(self) -> int:
        """How many undo entries are recorded (0 when none): where the batch decided so far
        ends."""
        return 0 if self._undo is None else len(self._undo)

    def forget_undo(self, mark: int) -> None:
        """Forget the first ``mark`` undo entries (their batch was committed); stop recording
        when none remain."""
        if self._undo is not None:
            del self._undo[:mark]
            if not self._undo:
                self._undo = None

    def commit_batch(self) -> None:
        """Forget the batch's undo log (its commit succeeded)."""
        self._undo = None

    def rollback_batch(self) -> None:
        """Undo everything since :meth:`begin_batch` (its commit failed)."""
        if self._undo is not None:
            self._rollback_to(0)
        self._undo = None

    def _rollback_to(self, mark: int) -> None:
        assert self._undo is not None
        while len(self._undo) > mark:
            table, key, old = self._undo.pop()
            if table == "registry":
                self.registry = old
                continue
            target: dict[Any, Any] = getattr(self, table)
            if old is _MISSING:
                target.pop(key, None)
            else:
                target[key] = old

    def take_touched(self) -> set[tuple[str, Any]]:
        """The ``(table, key)`` pairs written since the last call."""
        touched, self._touched = self._touched, set()
        return touched

    # ------------------------------------------------------------------ reads

    def has_content(self, content_hash: str) -> bool:
        """Whether some published Artifact has this content hash."""
        return content_hash in self.artifact_ids

    def manifests_of(self, content_hash: str) -> list[dict[str, Any]]:
        """Every published manifest over ``content_hash``, in publication order."""
        return [self.artifacts[a] for a in self.artifact_ids.get(content_hash, ())]

    def manifest_of(
        self,
        content_hash: str,
        *,
        work_item_id: str | None = None,
        group_id: str | None = None,
        mission_id: str | None = None,
    ) -> dict[str, Any] | None:
        """The first manifest over ``content_hash`` published for the WorkItem, Group and
        Mission given (each ``None``: any), or None."""
        for manifest in self.manifests_of(content_hash):
            if work_item_id is not None and manifest["workItemId"] != work_item_id:
                continue
            if group_id is not None and manifest["groupId"] != group_id:
                continue
            if mission_id is not None and manifest["missionId"] != mission_id:
                continue
            return manifest
        return None

    def item_manifests(self, work_item_id: str) -> dict[str, dict[str, Any]]:
        """Content hash → the manifest published for ``work_item_id`` (what its reviews read)."""
        item = self.work_items[work_item_id]
        out = {}
        for h in item.artifact_hashes:
            manifest = self.manifest_of(h, work_item_id=work_item_id)
            if manifest is not None:
                out[h] = manifest
        return out

    def work_item_document(self, work_item_id: str) -> dict[str, Any]:
        """The wire WorkItem document (``work-item.schema.json``) of the current state."""
        item = self.work_items[work_item_id]
        doc: dict[str, Any] = {
            "workItemId": item.work_item_id,
            "missionId": item.mission_id,
            "groupId": item.group_id,
            "conversationId": item.conversation_id,
            "revision": item.revision,
            "state": str(item.state),
            "exclusive": item.exclusive,
            "contract": item.contract,
            "createdBy": item.created_by,
            "createdAt": item.created_at,
        }
        if item.offer_ids:
            doc["offers"] = [self.offers[o].to_document() for o in item.offer_ids]
        if item.owner is not None:
            doc["owner"] = item.owner
        if item.selection_basis is not None:
            doc["selectionBasis"] = item.selection_basis
        if item.schedule_estimate is not None:
            doc["scheduleEstimate"] = item.schedule_estimate
        if item.progress is not None:
            doc["progress"] = item.progress
        if item.submission is not None:
            doc["submission"] = item.submission
        if item.authorized_by is not None:
            doc["authorizedBy"] = item.authorized_by
        if item.updated_at is not None:
            doc["updatedAt"] = item.updated_at
        return doc
