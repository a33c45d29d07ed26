"""Every Event any Authority test produces is checked after the test: valid against the official
``event.schema.json`` (jsonschema, format assertion on) and verified against the Registry as
exported in the Registry-fixture format and read back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mwp_local.protocol.registry import Registry
from mwp_local.protocol.signing import profile_for, verify_parsed

from ..official_schemas import problems
from . import world as world_module


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
