"""Store fixtures: the shared contract suite runs once per ``LogStore`` implementation."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.store.base import LogStore
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.records import PROJECTION_BY_NAME

from .factory import LogFactory

StoreMaker = Callable[[], LogStore]


@pytest.fixture(params=["memory", "duckdb", "duckdb-plain"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreMaker]:
    """A maker of fresh, empty stores of one implementation (closed after the test)."""
    made: list[LogStore] = []

    def make() -> LogStore:
        store: LogStore
        if request.param == "memory":
            store = MemoryLogStore()
        else:  # "duckdb-plain": projection rows written in the commit's transaction
            store = DuckDBLogStore(
                tmp_path / f"log{len(made)}.duckdb",
                defer_projections=request.param == "duckdb",
            )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: StoreMaker) -> LogStore:
    """A fresh, empty store of one implementation."""
    return make_store()


@pytest.fixture
def factory() -> LogFactory:
    """A record factory starting from an empty log."""
    return LogFactory()


def snapshot(store: LogStore) -> dict[str, Any]:
    """Everything a store can be asked, for before/after comparisons."""
    return {
        "count": store.event_count(),
        "head": store.chain_head(),
        "entries": list(store.entries()),
        "receipts": list(store.receipts()),
        "rejections": store.rejections(),
        "projections": {name: store.projection_rows(name) for name in PROJECTION_BY_NAME},
    }
