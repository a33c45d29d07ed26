"""The Authority's current state: tables of aggregate records, changed only through ``put``.

``AuthorityState`` is the in-memory fold of every accepted Event (the log stays the truth). Its
tables are plain dicts of frozen records; every write goes through :meth:`AuthorityState.put`,
which records the previous value while a transaction is open, so a Command whose later Event
fails a check, or a batch whose commit fails, can be undone exactly (:meth:`rollback`).
It also renders the projection rows the log store keeps beside the Events.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..protocol.registry import Registry
from ..store.records import ReceiptRecord
from .model import (
    BUDGET_DIMENSIONS,
    AgentRecord,
    BudgetLedger,
    GroupRecord,
    LeaseRecord,
    MembershipRecord,
    MissionRecord,
    OfferRecord,
    WorkItemRecord,
)

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
    artifacts: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    grants: dict[str, dict[str, Any]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    #: Lease ID → expiry (µs) of every lease still active: what timers have to watch.
    active_leases: dict[str, int] = field(default_factory=dict)
    _undo: list[tuple[str, Any, Any]] | None = field(default=None, repr=False)
    _touched: set[tuple[str, Any]] = field(default_factory=set, repr=False)

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

    def projection_rows(self, touched: set[tuple[str, Any]] | None = None) -> dict[str, list[Any]]:
        """Rows of every projection table (all of them, or only those ``touched``).

        Returns ``{table: [row | ("delete", key)]}`` where a row is a mapping of columns.
        """
        out: dict[str, list[Any]] = {}

        def emit(name: str, row: Mapping[str, Any]) -> None:
            out.setdefault(name, []).append(dict(row))

        def delete(name: str, key: tuple[Any, ...]) -> None:
            out.setdefault(name, []).append(("delete", key))

        keys = touched if touched is not None else self._all_keys()
        work_items_to_render: set[str] = set()
        for table, key in keys:
            if table == "missions":
                m = self.missions.get(key)
                if m is None:
                    delete("proj_missions", (key,))
                else:
                    emit("proj_missions", _mission_row(m))
            elif table == "work_items":
                work_items_to_render.add(key)
            elif table == "offers":
                o = self.offers.get(key)
                if o is None:
                    delete("proj_offers", (key,))
                else:
                    emit("proj_offers", _offer_row(o))
                    work_items_to_render.add(o.work_item_id)
            elif table == "leases":
                lease = self.leases.get(key)
                if lease is None:
                    delete("proj_leases", (key,))
                else:
                    emit("proj_leases", _lease_row(lease))
            elif table == "budgets":
                ledger = self.budgets.get(key)
                for dim in BUDGET_DIMENSIONS:
                    if ledger is None:
                        delete("proj_budgets", (key[0], key[1], dim))
                    else:
                        emit("proj_budgets", _budget_row(ledger, dim))
            elif table == "memberships":
                mem = self.memberships.get(key)
                if mem is None:
                    delete("proj_memberships", key)
                else:
                    emit("proj_memberships", _membership_row(mem))
            elif table == "agents":
                agent = self.agents.get(key)
                if agent is None:
                    delete("proj_agents", (key,))
                else:
                    emit("proj_agents", _agent_row(agent))
            elif table == "registry":
                for binding in self.registry.bindings:
                    emit("proj_signing_keys", _key_row(binding))
        for wid in sorted(work_items_to_render):
            if wid in self.work_items:
                emit("proj_work_items", self._work_item_row(wid))
            else:
                delete("proj_work_items", (wid,))
        return out

    def _all_keys(self) -> set[tuple[str, Any]]:
        keys: set[tuple[str, Any]] = {("registry", None)}
        for table in ("missions", "work_items", "offers", "leases", "budgets"):
            keys.update((table, k) for k in getattr(self, table))
        keys.update(("memberships", k) for k in self.memberships)
        keys.update(("agents", k) for k in self.agents)
        return keys

    def _work_item_row(self, wid: str) -> dict[str, Any]:
        item = self.work_items[wid]
        return {
            "work_item_id": item.work_item_id,
            "mission_id": item.mission_id,
            "group_id": item.group_id,
            "state": str(item.state),
            "revision": item.revision,
            "contract_version": item.contract_version,
            "exclusive": item.exclusive,
            "owner_agent_id": item.owner["agentId"] if item.owner else None,
            "ownership_epoch": item.ownership_epoch,
            "execution_lease_id": item.execution_lease_id,
            "urgency": item.contract.get("requestedUrgency"),
            "deadline": item.contract.get("deadline"),
            "attempts": item.attempts,
            "last_sequence": item.last_sequence,
            "document": _dumps(self.work_item_document(wid)),
        }


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _mission_row(m: MissionRecord) -> dict[str, Any]:
    return {
        "mission_id": m.mission_id,
        "group_id": m.group_id,
        "state": str(m.state),
        "revision": m.revision,
        "objective": m.objective,
        "owner_type": m.owner_type,
        "owner_id": m.owner_id,
        "coordinator_agent_id": m.coordinator_agent_id,
        "coordinator_epoch": m.coordinator_epoch,
        "parent_mission_id": m.parent_mission_id,
        "parent_work_item_id": m.parent_work_item_id,
        "deadline": m.deadline,
        "last_sequence": m.last_sequence,
    }


def _offer_row(o: OfferRecord) -> dict[str, Any]:
    return {
        "offer_id": o.offer_id,
        "work_item_id": o.work_item_id,
        "group_id": o.group_id,
        "agent_id": o.agent_id,
        "contract_version": o.contract_version,
        "status": o.status,
        "expires_at": o.expires_at,
        "decline_reason": o.decline_reason,
        "last_sequence": None,
    }


def _lease_row(lease: LeaseRecord) -> dict[str, Any]:
    return {
        "lease_id": lease.lease_id,
        "lease_type": lease.lease_type,
        "group_id": lease.group_id,
        "mission_id": lease.mission_id,
        "work_item_id": lease.work_item_id,
        "holder_agent_id": lease.holder_agent_id,
        "session_epoch": lease.session_epoch,
        "ownership_epoch": lease.ownership_epoch,
        "coordinator_epoch": lease.coordinator_epoch,
        "state": lease.state,
        "issued_at": lease.issued_at,
        "expires_at": lease.expires_at,
        "renewal_count": lease.renewal_count,
        "closed_at": lease.closed_at,
        "closure_reason": lease.closure_reason,
        "document": _dumps(lease.to_document()),
    }


def _budget_row(ledger: BudgetLedger, dim: str) -> dict[str, Any]:
    limit = ledger.limits.get(dim)
    used = ledger.used.get(dim, 0.0)
    return {
        "scope_type": ledger.scope_type,
        "scope_id": ledger.scope_id,
        "dimension": dim,
        "limit_value": None if limit is None else float(limit),
        "used_value": float(used),
        "remaining_value": None if limit is None else float(limit - used),
    }


def _membership_row(mem: MembershipRecord) -> dict[str, Any]:
    return {
        "group_id": mem.group_id,
        "principal_id": mem.principal_id,
        "principal_type": mem.principal_type,
        "role": mem.role,
        "epoch": mem.epoch,
        "state": mem.state,
    }


def _agent_row(agent: AgentRecord) -> dict[str, Any]:
    return {
        "agent_id": agent.agent_id,
        "agent_card_version": agent.card_version,
        "session_epoch": agent.session_epoch,
        "max_concurrency": agent.max_concurrency,
        "capabilities": _dumps([{"id": c, "version": v} for c, v in agent.capabilities]),
    }


def _key_row(binding: Any) -> dict[str, Any]:
    fixture = binding.to_fixture()
    interval = binding.interval
    return {
        "key_id": fixture["keyId"],
        "principal_type": fixture["principal"]["type"],
        "principal_id": fixture["principal"]["id"],
        "algorithm": fixture["algorithm"],
        "public_key": fixture["publicKey"],
        "valid_from": fixture["validFrom"],
        "valid_until": interval.valid_until.text if interval.valid_until else None,
        "revoked_at": interval.revoked_at.text if interval.revoked_at else None,
    }
