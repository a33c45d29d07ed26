"""Extension criticality (§17, §18, §19): a Command that depends on a critical extension the
Authority cannot interpret is refused with ``UNKNOWN_CRITICAL_EXTENSION`` and changes nothing
(``World.refuse`` checks, on the Authority alone and through a GroupLog on a DuckDB file); an
unknown noncritical extension is accepted and kept as sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.extensions import Dependency, uninterpretable
from mwp_local.authority.offline import BINDING_MEMBERS, BOUNDED_OFFLINE

from .world import WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
RISK = "urn:example:extension:risk-score"


def _entry(critical: bool, data: Any = None) -> dict[str, Any]:
    return {"version": "1.2.0", "critical": critical, "data": data or {"score": 7}}


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _authorize(world: World) -> dict[str, Any]:
    return {"workItemId": WID, "contract": world.contract()}


def test_an_unknown_critical_extension_on_the_command_is_refused(world: World) -> None:
    rejected = world.refuse(
        "UNKNOWN_CRITICAL_EXTENSION",
        "coordinator",
        "work.authorize",
        _authorize(world),
        extra={"extensions": {RISK: _entry(True)}},
    )
    error = rejected.error
    assert error.details == {"extension": RISK, "at": "extensions"}
    assert RISK in error.explanation and "version 1.2.0" in error.explanation
    assert "nothing was changed" in error.explanation
    assert WID not in world.state.work_items


def test_an_unknown_noncritical_extension_is_accepted_and_kept_as_sent(world: World) -> None:
    accepted = world.ok(
        "coordinator",
        "work.authorize",
        _authorize(world),
        extra={"extensions": {RISK: _entry(False)}},
    )
    assert accepted.receipt is not None
    stored = json.loads(accepted.receipt.command_document)
    assert stored["extensions"] == {RISK: _entry(False)}
    assert WID in world.state.work_items


def test_a_critical_extension_inside_the_work_contract_is_refused(world: World) -> None:
    contract = world.contract()
    contract["extensions"] = {RISK: _entry(True)}
    rejected = world.refuse(
        "UNKNOWN_CRITICAL_EXTENSION",
        "coordinator",
        "work.authorize",
        {"workItemId": WID, "contract": contract},
    )
    assert rejected.error.details["at"] == "payload.contract.extensions"
    # noncritical in the same place: accepted, and the contract keeps it
    contract["extensions"] = {RISK: _entry(False)}
    accepted = world.ok("coordinator", "work.authorize", {"workItemId": WID, "contract": contract})
    authorized = accepted.event_documents[-1]["payload"]["workItem"]
    assert authorized["contract"]["extensions"] == {RISK: _entry(False)}


@pytest.mark.req("MWP-WRK-021")
def test_the_offline_binding_is_refused_where_it_cannot_be_interpreted(world: World) -> None:
    """The bounded-offline binding is read by ``work.checkpoint`` and ``message.post`` (the
    progress §11.5 lets a Worker buffer); on any other Command it would be ignored, so the
    critical binding refuses it instead."""
    world.authorize(WID)
    world.offer(WID)
    world.accept(WID)
    world.start(WID)
    binding = {member: "x" for member in BINDING_MEMBERS}
    rejected = world.refuse(
        "UNKNOWN_CRITICAL_EXTENSION",
        "worker-a",
        "ext.missionweaveprotocol.core.work_execution_lease_renew",
        world.lease(WID),
        extra={"extensions": {BOUNDED_OFFLINE: _entry(True, binding)}},
    )
    assert rejected.error.details == {"extension": BOUNDED_OFFLINE, "at": "extensions"}
    assert "execution_lease_renew" in rejected.error.explanation


def test_only_the_extension_entries_are_read_never_their_data() -> None:
    hidden = {"extensions": {RISK: _entry(True)}}  # inside opaque data: not an extension
    document = {
        "extensions": {"urn:example:extension:outer": _entry(False, hidden)},
        "payload": {"notes": [{"text": "a"}, {"extensions": {RISK: _entry(False, hidden)}}]},
    }
    assert uninterpretable(document, frozenset()) is None
    document["payload"]["notes"][1]["extensions"][RISK]["critical"] = True
    found = uninterpretable(document, frozenset())
    assert found == Dependency(("payload", "notes", 1, "extensions"), RISK, "1.2.0")
    assert found.where == "payload.notes[1].extensions"


def test_the_handler_declares_which_top_level_profiles_it_reads() -> None:
    document = {"extensions": {BOUNDED_OFFLINE: _entry(True)}, "payload": {}}
    assert uninterpretable(document, frozenset({BOUNDED_OFFLINE})) is None
    assert uninterpretable(document, frozenset()) == Dependency(
        ("extensions",), BOUNDED_OFFLINE, "1.2.0"
    )
