"""Child Missions (§14) and terminal-state propagation (§7.1, last rows of §10.2)."""

from __future__ import annotations

from typing import Any

import pytest

from .world import GROUP, MISSION, World

PARENT_ITEM = "urn:mwp-local:work:big"
CHILD = "urn:mwp-local:mission:child"
CHILD_GROUP = "urn:mwp-local:group:child"
CHILD_ITEM = "urn:mwp-local:work:child-part"


def _with_child(policy: str = "block", budget: float = 5) -> World:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.authorize(PARENT_ITEM)
    w.ok(
        "coordinator",
        "mission.create_child",
        {
            "parentWorkItemId": PARENT_ITEM,
            "missionId": CHILD,
            "childGroupId": CHILD_GROUP,
            "coordinatorAgentId": w.org.get("reviewer").id,
            "objective": "A sub-problem",
            "definitionOfDone": [
                {"criterionId": "c", "description": "c", "evidenceRequired": ["human_review"]}
            ],
            "budget": {"currency": "EUR", "financialLimit": budget},
            "deadline": "2026-07-19T00:00:00Z",
            "childFailurePolicy": policy,
        },
    )
    return w


def test_creating_a_child_links_both_ways_and_blocks_the_parent_item() -> None:
    w = _with_child()
    child = w.state.missions[CHILD]
    assert child.parent_mission_id == MISSION and child.parent_work_item_id == PARENT_ITEM
    assert child.owner_id == w.org.get("coordinator").id  # the Parent Coordinator owns it
    assert str(w.state.work_items[PARENT_ITEM].state) == "blocked"
    assert w.state.work_items[PARENT_ITEM].child_mission_id == CHILD
    assert w.state.budgets[("work_item", PARENT_ITEM)].allocated == {"financial": 5}


def test_a_child_budget_above_its_parent_items_budget_is_refused() -> None:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.authorize(PARENT_ITEM)
    w.refuse(
        "BUDGET_EXCEEDED",
        "coordinator",
        "mission.create_child",
        {
            "parentWorkItemId": PARENT_ITEM,
            "missionId": CHILD,
            "childGroupId": CHILD_GROUP,
            "coordinatorAgentId": w.org.get("reviewer").id,
            "objective": "Too big",
            "definitionOfDone": [
                {"criterionId": "c", "description": "c", "evidenceRequired": ["human_review"]}
            ],
            "budget": {"currency": "EUR", "financialLimit": 50},
            "deadline": "2026-07-19T00:00:00Z",
        },
    )


def _child_approval(w: World) -> dict[str, Any]:
    child = w.state.missions[CHILD]
    return w.org.sign(
        "approval",
        "coordinator",
        {
            "approvalId": "urn:mwp-local:approval:child",
            "kind": "child_mission",
            "decision": "approved",
            "missionId": CHILD,
            "groupId": CHILD_GROUP,
            "missionRevision": child.submitted_revision,
            "artifactHashes": list(child.submitted_artifacts),
            "acceptancePolicyVersion": "1.0.0",
            "approver": w.org.get("coordinator").actor,
            "comments": "ok",
            "conditions": [],
            "occurredAt": w.at(0),
        },
    )


def test_a_child_approval_verifies_the_parent_work_item() -> None:
    w = _with_child()
    # the child Coordinator (reviewer) runs the child's WorkItem with worker-a
    contract = w.contract(
        budget={"currency": "EUR", "financialLimit": 2},
        requiredCapabilities=[{"id": "acme.software.python", "version": "2.0.0"}],
        deadline="2026-07-18T00:00:00Z",
    )
    w.ok(
        "reviewer",
        "work.authorize",
        {"workItemId": CHILD_ITEM, "contract": contract},
        group=CHILD_GROUP,
    )
    w.ok(
        "reviewer",
        "work.offer",
        {
            "workItemId": CHILD_ITEM,
            "agentId": w.org.get("worker-a").id,
            "expiresAt": w.at(300),
            "selectionBasis": w.basis(),
        },
        group=CHILD_GROUP,
    )
    item = w.state.work_items[CHILD_ITEM]
    w.ok(
        "worker-a",
        "work.accept_offer",
        {"workItemId": CHILD_ITEM},
        group=CHILD_GROUP,
        expected_revision=item.revision,
    )
    w.ok(
        "worker-a", "work.start", {"workItemId": CHILD_ITEM, "ownershipEpoch": 1}, group=CHILD_GROUP
    )
    manifest = w.artifact(CHILD_ITEM)
    manifest = w.org.sign(
        "artifact",
        "worker-a",
        {
            **{k: v for k, v in manifest.items() if k != "signature"},
            "missionId": CHILD,
            "groupId": CHILD_GROUP,
        },
    )
    w.ok(
        "worker-a",
        "artifact.publish",
        {**w.lease(CHILD_ITEM), "artifact": manifest},
        group=CHILD_GROUP,
    )
    evidence = w.evidence(CHILD_ITEM, manifest["contentHash"])
    evidence = w.org.sign(
        "evidence",
        "worker-a",
        {
            **{k: v for k, v in evidence.items() if k != "signature"},
            "missionId": CHILD,
            "groupId": CHILD_GROUP,
        },
    )
    w.ok(
        "worker-a",
        "work.submit",
        {
            **w.lease(CHILD_ITEM),
            "artifactHashes": [manifest["contentHash"]],
            "evidence": [evidence],
        },
        group=CHILD_GROUP,
    )
    w.accept_result(CHILD_ITEM, "reviewer", group=CHILD_GROUP)
    w.ok(
        "reviewer",
        "mission.submit_for_approval",
        {"artifactHashes": [manifest["contentHash"]]},
        group=CHILD_GROUP,
    )
    approved = w.ok(
        "coordinator",
        "mission.approve",
        {"approval": _child_approval(w)},
        group=CHILD_GROUP,
        expected_revision=w.state.missions[CHILD].revision,
    )
    kinds = [(e["groupId"], e["kind"]) for e in approved.event_documents]
    assert kinds == [(CHILD_GROUP, "mission.approved"), (GROUP, "work.result.accepted")]
    assert approved.event_documents[1]["cause"] == {
        "type": "event",
        "id": approved.event_documents[0]["eventId"],
    }
    assert str(w.state.work_items[PARENT_ITEM].state) == "verified"


@pytest.mark.parametrize(("policy", "parent_state"), [("block", "blocked"), ("fail", "failed")])
def test_a_failed_child_blocks_or_fails_the_parent_item_as_declared(
    policy: str, parent_state: str
) -> None:
    w = _with_child(policy)
    w.ok("reviewer", "mission.terminate", {"reason": "cannot be done"}, group=CHILD_GROUP)
    assert str(w.state.missions[CHILD].state) == "failed"
    assert str(w.state.work_items[PARENT_ITEM].state) == parent_state
    assert (
        str(w.state.missions[MISSION].state) == "active"
    )  # a failed child never fails its parent by itself


def test_cancelling_a_mission_cancels_its_unfinished_items_and_its_children() -> None:
    w = _with_child()
    w.authorize("urn:mwp-local:work:other")
    w.ok("mission-owner", "mission.cancel", {"reason": "priorities changed"})
    assert str(w.state.missions[MISSION].state) == "cancelled"
    assert str(w.state.missions[CHILD].state) == "cancelled"
    assert {str(i.state) for i in w.state.work_items.values()} == {"cancelled"}
    cancelled = [e for e in w.events if e["kind"] == "work.cancelled"]
    assert all(e["cause"]["type"] == "event" for e in cancelled)


def test_an_approved_mission_is_never_reopened() -> None:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.ok("mission-owner", "mission.cancel", {"reason": "stop"})
    w.refuse("INVALID_STATE_TRANSITION", "mission-owner", "mission.cancel", {"reason": "again"})
