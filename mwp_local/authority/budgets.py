"""The six-dimensional budget ledger (§12): allocation narrows downward, usage climbs up.

A WorkItem's or child Mission's allocation may not exceed what its parent still has unallocated
in any dimension the parent limits; usage is charged to the WorkItem and its whole ancestry
(WorkItem → Mission → parent WorkItem → parent Mission …) at once, and a single overflowing
dimension anywhere rejects the whole charge with ``BUDGET_EXCEEDED``. Pure functions over
``BudgetLedger`` records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from .model import BUDGET_DIMENSIONS, LIMIT_MEMBER, BudgetLedger
from .state import AuthorityState

#: Wire name of each dimension in usage deltas.
DELTA_MEMBER: dict[str, str] = {
    "financial": "financial",
    "modelTokens": "modelTokens",
    "toolCalls": "toolCalls",
    "computeSeconds": "computeSeconds",
    "wallClockSeconds": "wallClockSeconds",
    "externalSideEffects": "externalSideEffects",
}


def limits_of(budget: Mapping[str, Any]) -> dict[str, float]:
    """The per-dimension limits a Budget document declares."""
    return {dim: budget[member] for dim, member in LIMIT_MEMBER.items() if member in budget}


def new_ledger(
    scope_type: str, scope_id: str, parent: tuple[str, str] | None, budget: Mapping[str, Any]
) -> BudgetLedger:
    """A fresh ledger for a scope with the Budget document's limits."""
    return BudgetLedger(
        scope_type=scope_type,
        scope_id=scope_id,
        parent=parent,
        currency=budget.get("currency"),
        limits=limits_of(budget),
    )


def check_allocation(
    state: AuthorityState, parent_key: tuple[str, str], budget: Mapping[str, Any], what: str
) -> None:
    """Refuse an allocation that would exceed the parent's unallocated budget (§4.11, §12)."""
    parent = state.budgets[parent_key]
    if parent.currency and budget.get("currency") and budget["currency"] != parent.currency:
        raise ProtocolError(
            ErrorCode.BUDGET_EXCEEDED,
            f"{what} is budgeted in {budget['currency']}, but its parent is in {parent.currency}.",
            rule="§4.11 budgets narrow downward",
        )
    for dim, amount in limits_of(budget).items():
        limit = parent.limits.get(dim)
        if limit is None:
            continue
        free = limit - parent.allocated.get(dim, 0)
        if amount > free:
            raise ProtocolError(
                ErrorCode.BUDGET_EXCEEDED,
                f"{what} asks for {amount:g} {dim}, but {parent.scope_type} {parent.scope_id} "
                f"has only {free:g} left to allocate (limit {limit:g}).",
                details={"dimension": dim, "requested": amount, "available": free},
                rule="§4.11 budgets and permissions narrow downward",
            )


def allocate(ledger: BudgetLedger, budget: Mapping[str, Any]) -> BudgetLedger:
    """The parent ledger after allocating ``budget`` to a child."""
    allocated = dict(ledger.allocated)
    for dim, amount in limits_of(budget).items():
        allocated[dim] = allocated.get(dim, 0) + amount
    return replace(ledger, allocated=allocated)


def ancestry(state: AuthorityState, key: tuple[str, str]) -> list[BudgetLedger]:
    """The ledger at ``key`` and every ledger above it, nearest first."""
    chain: list[BudgetLedger] = []
    current: tuple[str, str] | None = key
    while current is not None and current in state.budgets:  # a replica may lack the top
        ledger = state.budgets[current]
        chain.append(ledger)
        current = ledger.parent
    return chain


def parse_delta(raw: Any) -> dict[str, float]:
    """A usage delta from its wire form; negative or non-numeric amounts are invalid."""
    if not isinstance(raw, Mapping):
        raise ProtocolError(ErrorCode.INVALID_COMMAND, "The usage delta must be an object.")
    delta: dict[str, float] = {}
    for dim in BUDGET_DIMENSIONS:
        value = raw.get(DELTA_MEMBER[dim], 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ProtocolError(
                ErrorCode.INVALID_COMMAND,
                f"Usage of {dim} must be a non-negative number, not {value!r}.",
            )
        if value:
            delta[dim] = value
    unknown = set(raw) - set(DELTA_MEMBER.values())
    if unknown:
        raise ProtocolError(
            ErrorCode.INVALID_COMMAND,
            f"Unknown usage dimensions: {', '.join(sorted(unknown))}.",
        )
    if not delta:
        raise ProtocolError(
            ErrorCode.INVALID_COMMAND, "A usage record needs a nonzero delta (§12)."
        )
    return delta


def charge(chain: list[BudgetLedger], delta: Mapping[str, float]) -> list[BudgetLedger]:
    """Every ledger of ``chain`` after charging ``delta``, or ``BUDGET_EXCEEDED``."""
    charged: list[BudgetLedger] = []
    for ledger in chain:
        used = dict(ledger.used)
        for dim, amount in delta.items():
            total = used.get(dim, 0) + amount
            limit = ledger.limits.get(dim)
            if limit is not None and total > limit:
                raise ProtocolError(
                    ErrorCode.BUDGET_EXCEEDED,
                    f"Charging {amount:g} {dim} would bring {ledger.scope_type} "
                    f"{ledger.scope_id} to {total:g}, over its limit of {limit:g}. Nothing was "
                    "charged; the work must pause and escalate.",
                    details={
                        "scope": ledger.scope_id,
                        "dimension": dim,
                        "limit": limit,
                        "used": used.get(dim, 0),
                        "requested": amount,
                    },
                    rule="§12 a one-dimension overflow rejects the whole transition",
                )
            used[dim] = total
        charged.append(replace(ledger, used=used))
    return charged


def ledger_summary(ledger: BudgetLedger) -> dict[str, Any]:
    """Cumulative usage and remaining budget of one scope, for Event payloads."""
    return {
        "scope": {"type": ledger.scope_type, "id": ledger.scope_id},
        "cumulative": {DELTA_MEMBER[d]: v for d, v in sorted(ledger.used.items())},
        "remaining": {
            DELTA_MEMBER[d]: ledger.limits[d] - ledger.used.get(d, 0) for d in sorted(ledger.limits)
        },
    }
