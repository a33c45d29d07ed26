"""Child Missions (§14): a mission-file WorkItem promoted to a child Mission with its own
Coordinator and WorkItems; the Parent Coordinator creates it, owns it, approves it, and the
approval verifies the parent WorkItem."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.naming import agent_id, group_id, mission_id, work_item_id
from mwp_local.drivers.mission_file import MissionFileError, parse
from mwp_local.drivers.sandbox import Sandbox

from .coordinator_harness import (
    SAMPLES,
    events,
    hand,
    make,
    mission_state,
    run_until,
    runtime_of,
)

CHILD = mission_id("payments-service")
PARENT_ITEM = work_item_id("storefront", "payments")


@pytest.fixture(scope="module")
def child_run(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One run of ``sample_missions/child.toml``, shared by the tests that read its log."""
    sandbox = make(tmp_path_factory.mktemp("child"), parse(_raw()))
    sandbox.run()
    return sandbox


def _raw() -> dict[str, Any]:
    return tomllib.loads((SAMPLES / "child.toml").read_text())


def test_a_promoted_work_item_becomes_a_child_mission_owned_by_the_parent_coordinator(
    child_run: Sandbox,
) -> None:
    state = child_run.log.state
    created = events(child_run, "mission.child.created")
    assert len(created) == 1 and created[0]["payload"]["workItemId"] == PARENT_ITEM
    assert created[0]["actor"]["id"] == agent_id("coord-storefront")
    child = state.missions[CHILD]
    assert child.parent_mission_id == mission_id("storefront")
    assert child.parent_work_item_id == PARENT_ITEM
    assert child.owner_id == agent_id("coord-storefront")
    assert child.coordinator_agent_id == agent_id("coord-payments")
    assert state.work_items[PARENT_ITEM].child_mission_id == CHILD
    # the child's budget is a subset of its parent WorkItem's
    parent_budget = state.work_items[PARENT_ITEM].contract["budget"]
    assert child.document["budget"]["financialLimit"] <= parent_budget["financialLimit"]
    # its own Coordinator planned its own WorkItems in its own Group
    child_items = [i for i in state.work_items.values() if i.mission_id == CHILD]
    assert child_items and all(i.group_id == group_id("payments-service") for i in child_items)
    assert all(i.authorized_by["id"] == agent_id("coord-payments") for i in child_items)  # type: ignore[index]


def test_the_parent_coordinator_approves_the_child_and_that_verifies_the_parent_item(
    child_run: Sandbox,
) -> None:
    docs = events(child_run)
    approved = [e for e in docs if e["kind"] == "mission.approved"]
    child_approval = next(e for e in approved if e["payload"]["missionId"] == CHILD)
    approval = child_approval["payload"]["approval"]
    assert approval["kind"] == "child_mission"
    assert approval["approver"] == {"type": "agent", "id": agent_id("coord-storefront")}
    verified = next(
        e
        for e in docs
        if e["kind"] == "work.result.accepted" and e["payload"]["workItemId"] == PARENT_ITEM
    )
    assert verified["payload"]["childMissionId"] == CHILD
    assert docs.index(child_approval) < docs.index(verified)
    launch = work_item_id("storefront", "launch")
    first_launch_offer = next(
        i
        for i, e in enumerate(docs)
        if e["kind"] == "work.offer.created" and e["payload"]["workItemId"] == launch
    )
    assert docs.index(verified) < first_launch_offer
    assert mission_state(child_run, "storefront") == "approved"
    assert mission_state(child_run, "payments-service") == "approved"
    # as child MissionOwner it read every review the child's Coordinator retained
    parent = runtime_of(child_run, "coord-storefront").policy
    reviews = parent.plans.child_reviews[CHILD]  # type: ignore[attr-defined]
    child_verified = {
        i.work_item_id
        for i in child_run.log.state.work_items.values()
        if i.mission_id == CHILD and str(i.state) == "verified"
    }
    assert {r["workItemId"] for r in reviews} == child_verified


def test_only_the_child_missionowner_may_approve_the_child(tmp_path: Path) -> None:
    sandbox = make(tmp_path, parse(_raw()))
    run_until(sandbox, lambda s: mission_state(s, "payments-service") == "awaiting_approval")
    child = sandbox.log.state.missions[CHILD]
    forged = runtime_of(sandbox, "coord-payments").view.sign(
        "approval",
        {
            "approvalId": "urn:mwp-local:approval:self",
            "kind": "child_mission",
            "decision": "approved",
            "missionId": CHILD,
            "groupId": child.group_id,
            "missionRevision": child.submitted_revision,
            "artifactHashes": sorted(child.submitted_artifacts),
            "acceptancePolicyVersion": "1.0.0",
            "approver": {"type": "agent", "id": agent_id("coord-payments")},
            "comments": "approving my own work",
            "conditions": [],
            "occurredAt": "2026-07-15T12:00:00Z",
        },
    )
    refused = hand(
        sandbox,
        "coord-payments",
        "mission.approve",
        {"approval": forged},
        group=child.group_id,
        expected_revision=child.revision,
    )
    assert refused.error.code.value == "AUTH_FORBIDDEN"  # type: ignore[union-attr]
    sandbox.run()
    assert mission_state(sandbox, "storefront") == "approved"


def test_a_child_budget_larger_than_its_parent_work_item_is_refused() -> None:
    raw = _raw()
    raw["missions"][0]["work"][1]["child"]["budget"]["financial"] = 1000
    with pytest.raises(MissionFileError, match="subset"):
        parse(raw)


def test_a_child_mission_is_listed_after_its_parent_and_owned_by_its_coordinator() -> None:
    spec = parse(_raw())
    assert [m.id for m in spec.missions] == ["storefront", "payments-service"]
    child = spec.missions[1]
    assert child.parent == ("storefront", "payments")
    assert child.owner == "coord-storefront"
    assert spec.humans == ("carol",)
    assert spec.roots == (spec.missions[0],)
    assert spec.missions[0].work_spec("payments").child == child  # type: ignore[union-attr]
