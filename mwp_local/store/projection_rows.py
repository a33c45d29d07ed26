"""The projection rows a log store keeps beside the Events, rendered from the Authority's state.

``projection_rows(state, touched)`` turns the aggregate records an ``AuthorityState`` holds into
rows of the declared projection tables (``store.records.PROJECTIONS``): all of them, or only
those of the ``(table, key)`` pairs a batch touched. The storage side owns this rendering; the
Authority knows nothing of tables and columns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..authority.model import (
    BUDGET_DIMENSIONS,
    AgentRecord,
    BudgetLedger,
    LeaseRecord,
    MembershipRecord,
    MissionRecord,
    OfferRecord,
)
from ..authority.state import AuthorityState


def projection_rows(
    state: AuthorityState, touched: set[tuple[str, Any]] | None = None
) -> dict[str, list[Any]]:
    """Rows of every projection table (all of them, or only those ``touched``).

    Returns ``{table: [row | ("delete", key)]}`` where a row is a mapping of columns.
    """
    out: dict[str, list[Any]] = {}

    def emit(name: str, row: Mapping[str, Any]) -> None:
        out.setdefault(name, []).append(dict(row))

    def delete(name: str, key: tuple[Any, ...]) -> None:
        out.setdefault(name, []).append(("delete", key))

    keys = touched if touched is not None else _all_keys(state)
    work_items_to_render: set[str] = set()
    for table, key in keys:
        if table == "missions":
            m = state.missions.get(key)
            if m is None:
                delete("proj_missions", (key,))
            else:
                emit("proj_missions", _mission_row(m))
        elif table == "work_items":
            work_items_to_render.add(key)
        elif table == "offers":
            o = state.offers.get(key)
            if o is None:
                delete("proj_offers", (key,))
            else:
                emit("proj_offers", _offer_row(o))
                work_items_to_render.add(o.work_item_id)
        elif table == "leases":
            lease = state.leases.get(key)
            if lease is None:
                delete("proj_leases", (key,))
            else:
                emit("proj_leases", _lease_row(lease))
        elif table == "budgets":
            ledger = state.budgets.get(key)
            for dim in BUDGET_DIMENSIONS:
                if ledger is None:
                    delete("proj_budgets", (key[0], key[1], dim))
                else:
                    emit("proj_budgets", _budget_row(ledger, dim))
        elif table == "memberships":
            mem = state.memberships.get(key)
            if mem is None:
                delete("proj_memberships", key)
            else:
                emit("proj_memberships", _membership_row(mem))
        elif table == "agents":
            agent = state.agents.get(key)
            if agent is None:
                delete("proj_agents", (key,))
            else:
                emit("proj_agents", _agent_row(agent))
        elif table == "registry":
            for binding in state.registry.bindings:
                emit("proj_signing_keys", _key_row(binding))
    for wid in sorted(work_items_to_render):
        if wid in state.work_items:
            emit("proj_work_items", _work_item_row(state, wid))
        else:
            delete("proj_work_items", (wid,))
    return out


def comparable_rows(state: AuthorityState) -> dict[str, list[str]]:
    """Every projection row of ``state``, each as canonical JSON text, order-free: two states
    hold the same projections exactly when these are equal (to compare replicas)."""
    return {
        t: sorted(json.dumps(r, sort_keys=True, default=str) for r in v)
        for t, v in projection_rows(state).items()
    }


def _all_keys(state: AuthorityState) -> set[tuple[str, Any]]:
    keys: set[tuple[str, Any]] = {("registry", None)}
    for table in ("missions", "work_items", "offers", "leases", "budgets"):
        keys.update((table, k) for k in getattr(state, table))
    keys.update(("memberships", k) for k in state.memberships)
    keys.update(("agents", k) for k in state.agents)
    return keys


def _work_item_row(state: AuthorityState, wid: str) -> dict[str, Any]:
    item = state.work_items[wid]
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
        "document": _dumps(state.work_item_document(wid)),
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
