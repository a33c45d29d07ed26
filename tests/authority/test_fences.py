"""Every epoch and lease fence, idempotency, optimistic concurrency and budgets: each rejection
carries its section-19 code and leaves the state exactly as it was (``World.refuse`` checks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.authority import Accepted

from .world import GROUP, MISSION, WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    """Each fence test runs twice: on the Authority alone, and through a GroupLog on a DuckDB
    file, where ``refuse`` also proves the stored log and projections byte-identical."""
    return mission_world(request.param, tmp_path)


def _active(w: World, agent: str = "worker-a") -> None:
    w.authorize(WID)
    w.offer(WID, agent)
    w.accept(WID, agent)
    w.start(WID, agent)


@pytest.mark.req("MWP-WRK-014")
def test_a_command_from_a_replaced_session_is_stale(world: World) -> None:
    _active(world)
    old_epoch = world.state.agents[world.org.get("worker-a").id].session_epoch
    world.ok(
        "control-plane",
        "ext.missionweaveprotocol.identity.session_open",
        {"agentId": world.org.get("worker-a").id},
        group=None,
    )
    world.refuse(
        "AUTH_STALE_SESSION",
        "worker-a",
        "ext.missionweaveprotocol.core.work_execution_lease_renew",
        world.lease(WID),
        session_epoch=old_epoch,
    )


@pytest.mark.req("MWP-WRK-014")
def test_opening_a_replacement_session_revokes_leases_and_requeues_items(world: World) -> None:
    _active(world)
    lease_id = world.state.work_items[WID].execution_lease_id
    accepted = world.ok(
        "control-plane",
        "ext.missionweaveprotocol.identity.session_open",
        {"agentId": world.org.get("worker-a").id},
        group=None,
    )
    kinds = [e["kind"] for e in accepted.event_documents]
    assert kinds == [
        "ext.missionweaveprotocol.identity.session_opened",
        "ext.missionweaveprotocol.core.work_execution_lease_revoked",
    ]
    item = world.state.work_items[WID]
    assert str(item.state) == "queued" and item.execution_lease_id is None
    assert world.state.leases[lease_id].state == "revoked"
    # the new runtime may start it again, under a new lease
    world.start(WID)
    assert world.state.work_items[WID].execution_lease_id not in (None, lease_id)


def test_a_stale_membership_epoch_is_fenced(world: World) -> None:
    world.refuse(
        "MEMBERSHIP_STALE",
        "mission-owner",
        "message.post",
        {"content": [{"type": "text", "text": "hi"}]},
        membership_epoch=7,
    )


def test_a_non_member_needs_a_membership(world: World) -> None:
    world.refuse(
        "MEMBERSHIP_REQUIRED",
        "reviewer",
        "message.post",
        {"content": [{"type": "text", "text": "hi"}]},
        membership_epoch=1,
    )


def test_a_replaced_coordinator_is_stale(world: World) -> None:
    world.ok(
        "mission-owner",
        "mission.assign_coordinator",
        {"coordinatorAgentId": world.org.get("reviewer").id},
    )
    world.refuse(
        "AUTH_STALE_COORDINATOR",
        "coordinator",
        "work.authorize",
        {"workItemId": WID, "contract": world.contract()},
        coordinator_epoch=1,
    )


@pytest.mark.req("MWP-WRK-019")
def test_a_reassigned_items_old_owner_is_fenced_by_ownership_epoch(world: World) -> None:
    _active(world)
    old = world.lease(WID)
    world.advance(world.authority.config.execution_lease_us / 1e6 + 1)  # lease runs out
    world.offer(WID, "worker-b")
    world.accept(WID, "worker-b")
    world.start(WID, "worker-b")  # active again: the table allows a checkpoint, the fence decides
    assert world.state.work_items[WID].ownership_epoch == 2
    world.refuse(
        "WORK_STALE_OWNERSHIP",
        "worker-a",
        "work.checkpoint",
        {**old, "checkpoint": {"progress": world.progress()}},
    )


@pytest.mark.req("MWP-WRK-013")
def test_a_delayed_command_with_an_older_lease_id_is_rejected_under_the_same_epoch(
    world: World,
) -> None:
    _active(world)
    first = world.lease(WID)
    world.ok("worker-a", "work.checkpoint", {**first, "checkpoint": {"progress": world.progress()}})
    world.start(WID)
    second = world.lease(WID)
    assert second["ownershipEpoch"] == first["ownershipEpoch"]
    assert second["leaseId"] != first["leaseId"]
    rejected = world.refuse(
        "WORK_LEASE_EXPIRED",
        "worker-a",
        "ext.missionweaveprotocol.core.work_execution_lease_renew",
        first,
    )
    assert first["leaseId"] in rejected.error.explanation
    world.ok("worker-a", "ext.missionweaveprotocol.core.work_execution_lease_renew", second)


@pytest.mark.req("MWP-WRK-013")
def test_an_expired_execution_lease_cannot_be_used(world: World) -> None:
    _active(world)
    world.advance(world.authority.config.execution_lease_us / 1e6)
    world.refuse(
        "WORK_LEASE_EXPIRED",
        "worker-a",
        "ext.missionweaveprotocol.core.work_execution_lease_renew",
        world.lease(WID),
    )


def test_reusing_an_action_id_with_different_content_is_a_collision(world: World) -> None:
    action = "urn:uuid:00000000-0000-4000-8000-0000000000aa"
    world.ok(
        "mission-owner",
        "message.post",
        {"content": [{"type": "text", "text": "one"}]},
        action_id=action,
    )
    world.refuse(
        "ACTION_ID_COLLISION",
        "mission-owner",
        "message.post",
        {"content": [{"type": "text", "text": "two"}]},
        action_id=action,
    )


@pytest.mark.req("MWP-WRK-003")
def test_a_stale_expected_revision_is_a_conflict(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)
    world.refuse(
        "REVISION_CONFLICT",
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID},
        expected_revision=1,
    )


def test_first_accept_is_compare_and_set(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)
    world.refuse("INVALID_COMMAND", "worker-a", "work.accept_offer", {"workItemId": WID})


def test_budget_overflow_rejects_the_whole_charge(world: World) -> None:
    _active(world)
    world.ok(
        "worker-a",
        "ext.missionweaveprotocol.core.resource_usage_record",
        {**world.lease(WID), "delta": {"toolCalls": 3}},
    )
    rejected = world.refuse(
        "BUDGET_EXCEEDED",
        "worker-a",
        "ext.missionweaveprotocol.core.resource_usage_record",
        {**world.lease(WID), "delta": {"toolCalls": 3, "financial": 1}},
    )
    assert rejected.error.details["dimension"] == "toolCalls"
    ledger = world.state.budgets[("work_item", WID)]
    assert ledger.used == {"toolCalls": 3}
    assert world.state.budgets[("mission", MISSION)].used == {"toolCalls": 3}


def test_an_allocation_above_the_missions_budget_is_refused(world: World) -> None:
    world.refuse(
        "BUDGET_EXCEEDED",
        "coordinator",
        "work.authorize",
        {
            "workItemId": WID,
            "contract": world.contract(budget={"currency": "EUR", "financialLimit": 1000}),
        },
    )


@pytest.mark.req("MWP-WRK-001")
def test_an_incomplete_work_contract_is_refused(world: World) -> None:
    contract = world.contract()
    del contract["acceptanceCriteria"]
    rejected = world.refuse(
        "WORK_CONTRACT_INCOMPLETE",
        "coordinator",
        "work.authorize",
        {"workItemId": WID, "contract": contract},
    )
    assert "acceptanceCriteria" in rejected.error.explanation


@pytest.mark.req("MWP-WRK-001")
def test_a_complete_work_contract_is_accepted(world: World) -> None:
    assert isinstance(world.authorize(WID), Accepted)


def test_a_stale_command_fails_freshness(world: World) -> None:
    data = world.command(
        "mission-owner", "message.post", {"content": [{"type": "text", "text": "hi"}]}
    )
    world.advance(3600)
    before = world.snapshot()
    outcome = world.deliver(data)
    assert not outcome.ok and outcome.error.code.value == "AUTH_INVALID_SIGNATURE"
    assert outcome.error.stage == "freshness"
    assert world.snapshot() == before


def test_a_tampered_command_fails_the_signature_check(world: World) -> None:
    data = world.command(
        "mission-owner", "message.post", {"content": [{"type": "text", "text": "hi"}]}
    )
    tampered = data.replace(b'"hi"', b'"ho"')
    before = world.snapshot()
    outcome = world.deliver(tampered)
    assert not outcome.ok and outcome.error.code.value == "AUTH_INVALID_SIGNATURE"
    assert outcome.error.stage == "signature"
    assert world.snapshot() == before


def test_an_unknown_group_is_not_disclosed(world: World) -> None:
    world.refuse(
        "GROUP_NOT_FOUND",
        "mission-owner",
        "message.post",
        {"content": [{"type": "text", "text": "x"}]},
        group="urn:mwp-local:group:nope",
        membership_epoch=1,
    )


def test_a_message_never_authorizes_anything(world: World) -> None:
    world.ok(
        "mission-owner",
        "message.post",
        {"content": [{"type": "text", "text": "deploy immediately"}]},
    )
    assert world.state.work_items == {}
    message = world.events[-1]["payload"]["message"]
    assert message["authority"] is False


def test_a_worker_cannot_authorize_work(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)
    world.accept(WID)
    world.refuse(
        "AUTH_FORBIDDEN",
        "worker-a",
        "work.authorize",
        {"workItemId": "urn:mwp-local:work:x", "contract": world.contract()},
    )


@pytest.mark.req("MWP-WRK-007")
def test_dependency_cycles_are_rejected(world: World) -> None:
    world.authorize("urn:mwp-local:work:a")
    world.authorize("urn:mwp-local:work:b", dependencyWorkItemIds=["urn:mwp-local:work:a"])
    world.refuse(
        "INVALID_COMMAND",
        "coordinator",
        "ext.missionweaveprotocol.core.work_dependency_add",
        {"workItemId": "urn:mwp-local:work:a", "dependsOn": ["urn:mwp-local:work:b"]},
    )


@pytest.mark.req("MWP-WRK-007")
def test_dependencies_can_be_added_as_discoveries_occur(world: World) -> None:
    world.authorize("urn:mwp-local:work:a")
    world.authorize("urn:mwp-local:work:b")
    world.ok(
        "coordinator",
        "ext.missionweaveprotocol.core.work_dependency_add",
        {"workItemId": "urn:mwp-local:work:b", "dependsOn": ["urn:mwp-local:work:a"]},
    )
    assert world.state.work_items["urn:mwp-local:work:b"].dependencies == ("urn:mwp-local:work:a",)
    assert world.state.work_items["urn:mwp-local:work:b"].contract_version == 2


@pytest.mark.req("MWP-WRK-007")
def test_an_item_is_not_eligible_before_its_dependencies_are_verified(world: World) -> None:
    world.authorize("urn:mwp-local:work:a")
    world.authorize("urn:mwp-local:work:b", dependencyWorkItemIds=["urn:mwp-local:work:a"])
    world.offer("urn:mwp-local:work:b")
    world.accept("urn:mwp-local:work:b")
    item = world.state.work_items["urn:mwp-local:work:b"]
    world.refuse(
        "INVALID_STATE_TRANSITION",
        "worker-a",
        "work.start",
        {"workItemId": item.work_item_id, "ownershipEpoch": 1},
    )


@pytest.mark.req("MWP-WRK-004")
def test_urgent_offer_race_has_exactly_one_winner(world: World) -> None:
    world.authorize(WID, requestedUrgency="critical")
    world.ok(
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "offers": [
                {"agentId": world.org.get("worker-a").id, "expiresAt": world.at(60)},
                {"agentId": world.org.get("worker-b").id, "expiresAt": world.at(60)},
            ],
            "selectionBasis": world.basis(),
        },
    )
    revision = world.state.work_items[WID].revision
    world.ok("worker-b", "work.accept_offer", {"workItemId": WID}, expected_revision=revision)
    world.refuse(
        "WORK_ALREADY_OWNED",
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID},
        expected_revision=revision,
    )
    statuses = sorted(world.state.offers[o].status for o in world.state.work_items[WID].offer_ids)
    assert statuses == ["accepted", "lost_race"]
    world.refuse(
        "AUTH_FORBIDDEN", "worker-a", "work.start", {"workItemId": WID, "ownershipEpoch": 1}
    )


@pytest.mark.req("MWP-WRK-004")
def test_exclusive_routine_work_goes_to_one_candidate_at_a_time(world: World) -> None:
    world.authorize(WID)
    world.refuse(
        "INVALID_COMMAND",
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "offers": [
                {"agentId": world.org.get("worker-a").id, "expiresAt": world.at(60)},
                {"agentId": world.org.get("worker-b").id, "expiresAt": world.at(60)},
            ],
            "selectionBasis": world.basis(),
        },
    )


@pytest.mark.req("MWP-WRK-004")
def test_an_expired_offer_cannot_be_accepted_and_expiry_appends_nothing(world: World) -> None:
    world.authorize(WID)
    world.offer(WID, seconds=10)
    count = len(world.events)
    world.advance(11)
    assert len(world.events) == count
    world.refuse(
        "WORK_OFFER_EXPIRED",
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID},
        expected_revision=world.state.work_items[WID].revision,
    )


@pytest.mark.req("MWP-WRK-002")
def test_a_revised_contract_needs_renewed_acceptance(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)
    old = world.state.work_items[WID]
    revised = world.contract(contractVersion=2, goal="Implement the feature, with a clearer scope")
    world.ok(
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "agentId": world.org.get("worker-a").id,
            "expiresAt": world.at(300),
            "selectionBasis": world.basis(),
            "contract": revised,
        },
    )
    item = world.state.work_items[WID]
    assert item.contract_version == 2 and item.revision > old.revision
    assert [world.state.offers[o].status for o in item.offer_ids] == ["withdrawn", "pending"]
    world.accept(WID)


@pytest.mark.req("MWP-WRK-025")
def test_submission_without_evidence_for_every_criterion_is_refused(world: World) -> None:
    world.authorize(
        WID,
        acceptanceCriteria=[
            {
                "criterionId": "tests-pass",
                "description": "Tests pass",
                "evidenceRequired": ["deterministic_test"],
            },
            {
                "criterionId": "reviewed",
                "description": "Reviewed",
                "evidenceRequired": ["reviewer_assessment"],
            },
        ],
    )
    world.offer(WID)
    world.accept(WID)
    world.start(WID)
    manifest = world.artifact(WID)
    world.ok("worker-a", "artifact.publish", {**world.lease(WID), "artifact": manifest})
    ev = world.evidence(WID, manifest["contentHash"])
    rejected = world.refuse(
        "INVALID_COMMAND",
        "worker-a",
        "work.submit",
        {**world.lease(WID), "artifactHashes": [manifest["contentHash"]], "evidence": [ev]},
    )
    assert "reviewed" in rejected.error.explanation


def test_approval_requires_the_exact_submitted_revision(world: World) -> None:
    artifact = world.run_to_submitted(WID)
    world.accept_result(WID)
    world.ok("coordinator", "mission.submit_for_approval", {"artifactHashes": [artifact]})
    mission = world.state.missions[MISSION]
    approval = world.org.sign(
        "approval",
        "mission-owner",
        {
            "approvalId": "urn:mwp-local:approval:x",
            "kind": "mission_final",
            "decision": "approved",
            "missionId": MISSION,
            "groupId": GROUP,
            "missionRevision": mission.revision - 1,
            "artifactHashes": [artifact],
            "acceptancePolicyVersion": "1.0.0",
            "approver": world.org.get("mission-owner").actor,
            "comments": "ok",
            "conditions": [],
            "occurredAt": world.at(0),
        },
    )
    world.refuse(
        "INVALID_COMMAND",
        "mission-owner",
        "mission.approve",
        {"approval": approval},
        expected_revision=mission.revision,
    )


@pytest.mark.req("MWP-WRK-013")
def test_lease_expiry_is_an_event_caused_by_a_timer(world: World) -> None:
    _active(world)
    lease_id = world.state.work_items[WID].execution_lease_id
    assert world.authority.expire(world.now()) == []
    world.advance(world.authority.config.execution_lease_us / 1e6)
    expired = world.authority.expire(world.now())
    assert len(expired) == 1
    event = expired[0].event_documents[0]
    assert event["kind"] == "ext.mwp-local.sandbox.lease_expired"
    assert event["cause"] == {"type": "timer", "id": lease_id}
    assert world.state.leases[lease_id].state == "expired"
    assert str(world.state.work_items[WID].state) == "active"
    assert world.authority.expire(world.now()) == []
