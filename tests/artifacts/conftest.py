"""Every Event an Artifact test produces is valid against the official ``event.schema.json`` and
verifies against the Registry, as in the Authority tests; plus the fixtures of this package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.protocol.registry import Registry
from mwp_local.protocol.signing import profile_for, verify_parsed
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.memory import MemoryLogStore

from ..authority import world as world_module
from ..authority.world import LoggedWorld, World
from ..official_schemas import problems
from .scene import Scene


@pytest.fixture(autouse=True)
def every_event_is_official_and_verifies() -> Iterator[None]:
    world_module.CREATED.clear()
    yield
    for w in world_module.CREATED:
        exported = Registry.from_fixture(w.state.registry.to_fixture())
        for event in w.events:
            assert problems("event", event) == [], (event["kind"], problems("event", event))
            verified = verify_parsed(profile_for("event"), event, exported)
            assert verified.principal.id == w.org.authority.id


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
