"""What an assignment records (issue 21 points 2 and 3): the structured selection basis of §10.3
(MWP-WRK-006) and the schedule estimate of §11.2 (MWP-WRK-012), exactly as the specification
names them. A Coordinator that leaves the basis empty or writes its chain-of-thought into it,
and a Worker whose estimate discloses its global queue position or another Group's work, are
refused ``SCHEMA_VALIDATION_FAILED``, and nothing changes (``World.refuse``; on DuckDB also the
stored log and projections)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import assignment

from ..official_schemas import problems
from .world import WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
CODE = "SCHEMA_VALIDATION_FAILED"


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _offer(w: World, basis: dict[str, Any]) -> dict[str, Any]:
    return {
        "workItemId": WID,
        "agentId": w.org.get("worker-a").id,
        "expiresAt": w.at(300),
        "selectionBasis": basis,
    }


def _estimate(w: World, **extra: Any) -> dict[str, Any]:
    return {
        "estimatedStart": w.at(60),
        "estimatedCompletion": w.at(3600),
        "confidence": 0.7,
        "capacityStatus": "queued",
        "lastCalculatedAt": w.at(0),
        **extra,
    }


# --------------------------------------------------------------------------- §10.3


@pytest.mark.req("MWP-WRK-006")
def test_an_empty_selection_basis_is_refused(world: World) -> None:
    world.authorize(WID)
    rejected = world.refuse(CODE, "coordinator", "work.offer", _offer(world, {}))
    assert rejected.error.details["missing"] == list(assignment.STATED_BASIS)
    assert "§10.3" in str(rejected.error.rule)


@pytest.mark.req("MWP-WRK-006")
def test_a_selection_basis_carrying_chain_of_thought_is_refused(world: World) -> None:
    world.authorize(WID)
    basis = {**world.basis(), "chainOfThought": "worker-a seemed keen, and b was slow once"}
    rejected = world.refuse(CODE, "coordinator", "work.offer", _offer(world, basis))
    assert "private reasoning" in rejected.error.explanation
    assert rejected.error.details["members"] == ["chainOfThought"]


@pytest.mark.req("MWP-WRK-006")
@pytest.mark.parametrize("member", ["policyRulesApplied", "expectedCost", "availabilityEstimate"])
def test_a_selection_basis_lacking_one_member_is_refused(world: World, member: str) -> None:
    world.authorize(WID)
    basis = world.basis()
    del basis[member]
    rejected = world.refuse(CODE, "coordinator", "work.offer", _offer(world, basis))
    assert rejected.error.details["missing"] == [member]


@pytest.mark.req("MWP-WRK-006")
def test_a_selection_basis_with_an_unnamed_member_or_a_wrong_type_is_refused(
    world: World,
) -> None:
    world.authorize(WID)
    world.refuse(CODE, "coordinator", "work.offer", _offer(world, {**world.basis(), "rank": 1}))
    world.refuse(
        CODE, "coordinator", "work.offer", _offer(world, {**world.basis(), "expectedCost": -1})
    )
    world.refuse(
        CODE,
        "coordinator",
        "work.offer",
        _offer(world, {**world.basis(), "policyRulesApplied": []}),
    )


@pytest.mark.req("MWP-WRK-006")
def test_a_complete_selection_basis_is_recorded_with_the_verified_matches(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)
    document = world.state.work_item_document(WID)
    basis = document["selectionBasis"]
    assert set(basis) == {*assignment.STATED_BASIS, *assignment.VERIFIED_BASIS}
    assert basis["verifiedMatches"] == [{"id": "acme.software.python", "version": "2.1.0"}]
    assert problems("work-item", document) == []


# --------------------------------------------------------------------------- §11.2


def _offered(w: World) -> None:
    w.authorize(WID)
    w.offer(WID)


@pytest.mark.req("MWP-WRK-012")
@pytest.mark.parametrize(
    "extra",
    [
        {"globalQueuePosition": 3},
        {"otherGroups": [{"groupId": "urn:missionweaveprotocol:group:beta", "queued": 2}]},
        {"aheadOf": ["Migrate the billing ledger (Mission beta)"]},
    ],
    ids=["global-queue-position", "another-groups-work", "another-groups-names"],
)
def test_a_schedule_estimate_disclosing_more_than_section_11_2_is_refused(
    world: World, extra: dict[str, Any]
) -> None:
    _offered(world)
    rejected = world.refuse(
        CODE,
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID, "scheduleEstimate": _estimate(world, **extra)},
        expected_revision=world.state.work_items[WID].revision,
    )
    assert rejected.error.details["members"] == sorted(extra)
    assert "§11.2" in str(rejected.error.rule)
    assert world.state.work_items[WID].schedule_estimate is None  # never stored


@pytest.mark.req("MWP-WRK-012")
def test_a_malformed_schedule_estimate_is_refused(world: World) -> None:
    _offered(world)
    world.refuse(
        CODE,
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID, "scheduleEstimate": _estimate(world, confidence=1.5)},
        expected_revision=world.state.work_items[WID].revision,
    )


@pytest.mark.req("MWP-WRK-012")
def test_an_estimate_of_section_11_2_is_recorded_in_a_valid_work_item(world: World) -> None:
    _offered(world)
    estimate = _estimate(world)
    world.ok(
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID, "scheduleEstimate": estimate},
        expected_revision=world.state.work_items[WID].revision,
    )
    document = world.state.work_item_document(WID)
    assert document["scheduleEstimate"] == estimate
    assert problems("work-item", document) == []
