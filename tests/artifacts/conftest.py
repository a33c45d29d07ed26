"""The fixtures of the Artifact tests; every Event they produce is checked after each test, as in
the Authority tests (``authority.world``'s shared fixture)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.memory import MemoryLogStore

from ..authority.world import (
    LoggedWorld,
    World,
    every_event_is_official_and_verifies,  # noqa: F401  (autouse)
)
from .scene import Scene


@pytest.fixture
def scene(tmp_path: Path) -> Scene:
    """A World on the Authority alone, with a blob store."""
    return Scene(World(), tmp_path / "blobs")


@pytest.fixture(params=["memory", "duckdb"])
def logged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Scene]:
    """A World whose Commands go through a GroupLog, on each store."""
    store = MemoryLogStore() if request.param == "memory" else DuckDBLogStore(tmp_path / "g.duckdb")
    yield Scene(LoggedWorld(store), tmp_path / "blobs")
    store.close()
