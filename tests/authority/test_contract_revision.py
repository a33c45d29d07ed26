"""A material revision of an owned WorkItem requires renewed acceptance (issue 21 point 4, §10.1,
MWP-WRK-002).

Inserting a dependency after acceptance moved the item to contract version 2 with
``renewedAcceptanceRequired: false`` and the owner kept it. A dependency changes the item's
inputs and when it can start, so it is material (``authority.revision``): the revision Event
requires renewed acceptance and revokes the owner's leases, the old acceptance no longer counts
(the owner's start is ``WORK_LEASE_EXPIRED``, an offer of version 1 cannot be accepted), and
the Coordinator offers version 2 again, accepted under a new Ownership Epoch.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.authority.revision import NOT_MATERIAL, material_changes
from mwp_local.examples import example_contract
from mwp_local.protocol.documents.kinds import ExtensionCommandKind as XC

from .world import WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
DEP = "urn:mwp-local:work:discovered"
INSERT = XC.WORK_DEPENDENCY_ADD.value


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _insert(w: World) -> dict[str, object]:
    accepted = w.ok("coordinator", INSERT, {"workItemId": WID, "dependsOn": [DEP]})
    (revised,) = [e for e in accepted.event_documents if e["kind"] == "work.contract.revised"]
    return revised


@pytest.mark.req("MWP-WRK-002")
def test_which_members_are_material() -> None:
    old = example_contract()
    assert material_changes(old, {**old, "requestedUrgency": "high", "contractVersion": 2}) == []
    assert material_changes(old, {**old, "dependencyWorkItemIds": [DEP]}) == [
        "dependencyWorkItemIds"
    ]
    assert material_changes(old, {**old, "deadline": "2026-07-19T00:00:00Z"}) == ["deadline"]
    assert {"contractVersion", "requestedUrgency", "businessImpact"} == NOT_MATERIAL


@pytest.mark.req("MWP-WRK-002")
def test_a_dependency_inserted_after_acceptance_requires_renewed_acceptance(
    world: World,
) -> None:
    world.authorize(DEP)
    world.authorize(WID)
    world.offer(WID)
    world.accept(WID)
    epoch = world.state.work_items[WID].ownership_epoch
    revised = _insert(world)
    payload = revised["payload"]
    assert isinstance(payload, dict)
    assert payload["renewedAcceptanceRequired"] is True
    assert {lease["state"] for lease in payload["leases"]} == {"revoked"}
    item = world.state.work_items[WID]
    assert item.contract_version == 2
    # The old acceptance no longer counts: the owner cannot start under it.
    world.refuse(
        "WORK_LEASE_EXPIRED",
        "worker-a",
        "work.start",
        {"workItemId": WID, "ownershipEpoch": epoch},
    )
    # The Coordinator offers version 2; its acceptance is a new Ownership Epoch.
    world.offer(WID, "worker-b")
    world.accept(WID, "worker-b")
    item = world.state.work_items[WID]
    assert item.ownership_epoch == epoch + 1 and item.owner is not None
    assert item.owner["agentId"] == world.org.get("worker-b").id


@pytest.mark.req("MWP-WRK-002")
def test_an_offer_of_the_old_version_cannot_be_accepted_after_a_material_revision(
    world: World,
) -> None:
    world.authorize(DEP)
    world.authorize(WID)
    world.offer(WID)
    _insert(world)
    world.refuse(
        "WORK_OFFER_EXPIRED",
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID},
        expected_revision=world.state.work_items[WID].revision,
    )


@pytest.mark.req("MWP-WRK-002")
def test_a_revision_of_an_item_nobody_owns_fences_nobody(world: World) -> None:
    world.authorize(DEP)
    world.authorize(WID)
    payload = _insert(world)["payload"]
    assert isinstance(payload, dict)
    assert payload["renewedAcceptanceRequired"] is False and "leases" not in payload
