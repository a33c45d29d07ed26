"""A WorkItem and a Mission from creation to human Approval, through the real pipeline."""

from __future__ import annotations

from mwp_local.authority import Accepted
from mwp_local.store.projection_rows import projection_rows

from .world import GROUP, MISSION, World


def test_a_mission_runs_from_creation_to_human_approval() -> None:
    w = World()
    w.bootstrap()
    w.create_mission()
    artifact = w.run_to_submitted("urn:mwp-local:work:impl")
    w.accept_result("urn:mwp-local:work:impl")
    submitted = w.ok("coordinator", "mission.submit_for_approval", {"artifactHashes": [artifact]})
    mission = w.state.missions[MISSION]
    approval = w.org.sign(
        "approval",
        "mission-owner",
        {
            "approvalId": "urn:mwp-local:approval:1",
            "kind": "mission_final",
            "decision": "approved",
            "missionId": MISSION,
            "groupId": GROUP,
            "missionRevision": mission.submitted_revision,
            "artifactHashes": [artifact],
            "acceptancePolicyVersion": "1.0.0",
            "approver": w.org.get("mission-owner").actor,
            "comments": "Reviewed.",
            "conditions": [],
            "occurredAt": submitted.event_documents[0]["occurredAt"],
        },
    )
    w.ok(
        "mission-owner",
        "mission.approve",
        {"approval": approval},
        expected_revision=mission.revision,
    )
    assert str(w.state.missions[MISSION].state) == "approved"
    assert str(w.state.work_items["urn:mwp-local:work:impl"].state) == "verified"
    sequences = [e["sequence"] for e in w.events if e.get("groupId") == GROUP]
    assert sequences == list(range(1, len(sequences) + 1))


def test_an_identical_retry_returns_the_original_receipt_and_appends_nothing() -> None:
    w = World()
    w.bootstrap()
    data = w.command(
        "mission-owner",
        "mission.create",
        {
            "missionId": MISSION,
            "groupId": GROUP,
            "coordinatorAgentId": w.org.get("coordinator").id,
            "objective": "x",
            "definitionOfDone": [
                {"criterionId": "d", "description": "d", "evidenceRequired": ["human_review"]}
            ],
            "budget": {"toolCallLimit": 5},
            "deadline": "2026-08-01T00:00:00Z",
        },
    )
    first = w.deliver(data)
    assert isinstance(first, Accepted)
    count = len(w.events)
    again = w.deliver(data)
    assert isinstance(again, Accepted) and again.duplicate
    assert again.receipt == first.receipt
    assert len(w.events) == count


def test_every_event_is_schema_valid_and_verifies_against_the_registry() -> None:
    from mwp_local.protocol.signing import profile_for, verify_parsed

    from ..official_schemas import problems

    w = World()
    w.bootstrap()
    w.create_mission()
    w.run_to_submitted("urn:mwp-local:work:impl")
    assert w.events
    for event in w.events:
        assert problems("event", event) == [], event["kind"]
        verified = verify_parsed(profile_for("event"), event, w.state.registry)
        assert verified.principal.id == w.org.authority.id


def test_projected_work_item_lease_mission_and_membership_documents_are_schema_valid() -> None:
    import json

    from ..official_schemas import problems

    w = World()
    w.bootstrap()
    w.create_mission()
    w.run_to_submitted("urn:mwp-local:work:impl")
    rows = projection_rows(w.state)
    for row in rows["proj_work_items"]:
        assert problems("work-item", json.loads(row["document"])) == []
    for row in rows["proj_leases"]:
        assert problems("lease", json.loads(row["document"])) == []
    for mission in w.state.missions.values():
        assert problems("mission", mission.document) == []
    for membership in w.state.memberships.values():
        assert problems("membership", membership.document) == []
