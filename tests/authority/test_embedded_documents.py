"""Every document an Event embeds conforms to its official schema (issue 21 point 5).

A provisional Membership names its ``contextPackageId`` and ``provisionalExpiresAt``
(membership.schema.json; the official invalid vector ``membership-provisional-without-context``),
so a Command that grants one (an offer to an Agent not yet in the Group, a provisional
``membership.change``) carries the signed Context Package the new member receives (§8), and the
Membership Event embeds it. A careless client that leaves it out, or sends one that is not
its own or not about this WorkItem, is refused and nothing changes. The Authority judges every
document it is about to append, so a handler that would write one that does not conform is
refused too (``SCHEMA_VALIDATION_FAILED``), and ``verify-log`` judges every stored document, so
a log written without these checks is caught. Documents are judged here with jsonschema over
the official schemas (``tests/official_schemas.py``), apart from the project's validators.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import embedded
from mwp_local.authority.handlers import offers as offer_handlers
from mwp_local.protocol.documents import errors
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.verify import verify_log

from ..conftest import PROTOCOL_ROOT
from ..official_schemas import embedded_problems, problems
from .world import GROUP, WHERE_REFUSED, LoggedWorld, World, mission_world

WID = "urn:mwp-local:work:impl"
OTHER = "urn:mwp-local:work:other"
VECTOR = PROTOCOL_ROOT / "conformance/vectors/invalid/membership-provisional-without-context.json"


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _offer(w: World, **extra: Any) -> dict[str, Any]:
    return {
        "workItemId": WID,
        "agentId": w.org.get("worker-a").id,
        "expiresAt": w.at(300),
        "selectionBasis": w.basis(),
        **extra,
    }


@pytest.mark.req("MWP-WRK-027")
def test_the_official_vector_of_a_provisional_membership_without_context_is_invalid() -> None:
    vector = json.loads(VECTOR.read_text())
    assert problems("membership", vector) != []
    assert errors("membership", vector) != []  # the project's validator agrees


@pytest.mark.req("MWP-WRK-027")
def test_an_offer_that_grants_a_provisional_membership_names_its_context_package(
    world: World,
) -> None:
    world.authorize(WID)
    accepted = world.offer(WID)
    (changed,) = [e for e in accepted.event_documents if e["kind"] == "membership.changed"]
    membership, package = changed["payload"]["membership"], changed["payload"]["contextPackage"]
    assert membership["state"] == "provisional"
    assert membership["contextPackageId"] == package["contextPackageId"]
    assert package["workItemId"] == WID and package["groupId"] == GROUP
    assert membership["provisionalExpiresAt"] == _offered_expiry(accepted)
    assert [p for e in accepted.event_documents for p in embedded_problems(e)] == []


def _offered_expiry(accepted: Any) -> str:
    (created,) = [e for e in accepted.event_documents if e["kind"] == "work.offer.created"]
    expiry: str = created["payload"]["offers"][0]["expiresAt"]
    return expiry


@pytest.mark.req("MWP-WRK-027")
def test_an_offer_to_a_non_member_without_a_context_package_is_refused(world: World) -> None:
    world.authorize(WID)
    rejected = world.refuse(
        "INVALID_COMMAND", "coordinator", "work.offer", _offer(world, contextPackage=None)
    )
    assert "contextPackageId" in rejected.error.explanation
    assert "§8" in str(rejected.error.rule)


@pytest.mark.req("MWP-WRK-027")
def test_a_context_package_signed_by_another_or_about_another_work_item_is_refused(
    world: World,
) -> None:
    world.authorize(WID)
    world.authorize(OTHER)
    theirs = world.context_package(WID, "worker-b")
    rejected = world.refuse(
        "INVALID_COMMAND", "coordinator", "work.offer", _offer(world, contextPackage=theirs)
    )
    assert "signed by" in rejected.error.explanation
    elsewhere = world.context_package(OTHER)
    rejected = world.refuse(
        "INVALID_COMMAND", "coordinator", "work.offer", _offer(world, contextPackage=elsewhere)
    )
    assert OTHER in rejected.error.explanation


@pytest.mark.req("MWP-WRK-027")
def test_a_provisional_membership_change_needs_its_expiry_and_context_package(
    world: World,
) -> None:
    worker = {"type": "agent", "id": world.org.get("worker-b").id}
    grant = {"member": worker, "role": "worker", "state": "provisional"}
    world.refuse("INVALID_COMMAND", "coordinator", "membership.change", grant)
    world.refuse(
        "INVALID_COMMAND",
        "coordinator",
        "membership.change",
        {**grant, "provisionalExpiresAt": world.at(600)},
    )
    package = world.context_package(None)
    accepted = world.ok(
        "coordinator",
        "membership.change",
        {**grant, "provisionalExpiresAt": world.at(600), "contextPackage": package},
    )
    assert [p for e in accepted.event_documents for p in embedded_problems(e)] == []


@pytest.mark.req("MWP-WRK-027")
def test_a_handler_that_would_append_a_nonconforming_document_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old bug, put back in this test only: the offer's provisional Membership loses its
    Context Package and expiry. The Authority judges the Event before appending it."""
    original = offer_handlers._membership_document

    def careless(*args: Any, **kwargs: Any) -> dict[str, Any]:
        doc = original(*args, **kwargs)
        doc.pop("contextPackageId", None)
        doc.pop("provisionalExpiresAt", None)
        return doc

    world.authorize(WID)
    monkeypatch.setattr(offer_handlers, "_membership_document", careless)
    rejected = world.refuse("SCHEMA_VALIDATION_FAILED", "coordinator", "work.offer", _offer(world))
    assert "membership.schema.json" in rejected.error.explanation
    assert "§21" in str(rejected.error.rule)


@pytest.mark.req("MWP-WRK-012")
def test_verify_log_finds_a_stored_document_that_fails_its_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log written by an Authority that did not check (simulated by taking the checks out in
    this test) holds a leaking schedule estimate in a signed Event: verify-log reports it."""
    store = DuckDBLogStore(tmp_path / "group.duckdb")
    w = LoggedWorld(store)
    w.bootstrap()
    w.create_mission()
    w.authorize(WID)
    w.offer(WID)
    monkeypatch.setattr(offer_handlers, "schedule_estimate", lambda estimate: estimate)
    monkeypatch.setattr(embedded, "check", lambda event, state: None)
    estimate = {
        "estimatedStart": w.at(60),
        "estimatedCompletion": w.at(3600),
        "confidence": 0.7,
        "capacityStatus": "queued",
        "lastCalculatedAt": w.at(0),
        "globalQueuePosition": 3,
    }
    w.ok(
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID, "scheduleEstimate": estimate},
        expected_revision=w.state.work_items[WID].revision,
    )
    monkeypatch.undo()
    assert problems("work-item", w.state.work_item_document(WID)) != []
    report = verify_log(w.org, store)
    assert not report.ok
    assert any("globalQueuePosition" in p for p in report.problems), report.problems
