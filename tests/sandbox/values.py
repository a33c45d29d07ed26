"""Helpers for the tests that hold what leaves the core to being a value: a picture of a state to
compare before and after, a vandal that changes every object it is handed, and a census of the
mutable objects a state is made of."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from mwp_local.authority.state import AuthorityState
from mwp_local.drivers.sandbox import Sandbox

#: The fields of ``AuthorityState`` that are not tables of folded facts.
#: Fields of the state that are not tables (``work_item_changes``: the journal of WorkItem
#: writes the agents' indexes read, ``agents.coordinator.index``).
_NOT_TABLES = frozenset({"registry", "organization_id", "_undo", "_touched", "work_item_changes"})


def tables(state: AuthorityState) -> dict[str, Any]:
    """Every table of ``state`` (a deep copy: a picture to compare with later)."""
    return {
        f.name: copy.deepcopy(getattr(state, f.name))
        for f in dataclasses.fields(state)
        if f.name not in _NOT_TABLES
    }


def pictures(sandbox: Sandbox) -> dict[str, Any]:
    """The Authority's state, every agent's replica and the log's texts, as deep copies."""
    store = sandbox.log.store
    return {
        "authority": tables(sandbox.log.state),
        **{f"agent {r.name}": tables(r.replica) for r in sandbox.runtimes},
        "log": [e.document for e in store.events()],
        "receipts": [r.command_document for r in store.receipts()],
    }


def vandalize(value: Any) -> None:
    """Change, in place, every dict and list reachable from ``value``: each string member or
    item becomes ``"vandalized"``, each dict gains a member and each list an item."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            vandalize(getattr(value, f.name))
    elif isinstance(value, dict):
        for key, item in list(value.items()):
            if isinstance(item, str):
                value[key] = "vandalized"
            else:
                vandalize(item)
        value["vandalized"] = True
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                value[index] = "vandalized"
            else:
                vandalize(item)
        value.append("vandalized")
    elif isinstance(value, tuple):
        for item in value:
            vandalize(item)


def mutable_parts(value: Any) -> dict[int, Any]:
    """Every dict, list and set reachable from ``value`` (records and tuples looked into), by
    ``id``: two holders share an object exactly when their censuses share a key."""
    found: dict[int, Any] = {}
    seen: set[int] = set()

    def walk(item: Any) -> None:
        if id(item) in seen:
            return
        seen.add(id(item))
        if isinstance(item, dict):
            found[id(item)] = item
            for key, member in item.items():
                walk(key)
                walk(member)
        elif isinstance(item, list | set):
            found[id(item)] = item
            for member in item:
                walk(member)
        elif isinstance(item, tuple):
            for member in item:
                walk(member)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            for f in dataclasses.fields(item):
                walk(getattr(item, f.name))

    walk(value)
    return found


def state_parts(state: AuthorityState) -> dict[int, Any]:
    """The mutable objects the tables of ``state`` are made of (the tables themselves not)."""
    found: dict[int, Any] = {}
    for f in dataclasses.fields(state):
        if f.name not in _NOT_TABLES:
            for record in getattr(state, f.name).values():
                found.update(mutable_parts(record))
    return found
