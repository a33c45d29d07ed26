"""The human MissionOwner's script: it grants execution approval to risky work, cancels,
requests changes once (the Coordinator then adds corrective work without deleting earlier
submissions) and approves the exact submitted revision and Artifact set (§7.1, §7.3, §12)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mwp_local.agents.naming import human_id, work_item_id

from .coordinator_harness import (
    base_file,
    events,
    hand,
    has_item,
    item,
    make,
    mission_state,
    run_until,
    runtime_of,
)


def _risky_file() -> dict[str, Any]:
    return base_file(
        work=[
            {
                "id": "deploy",
                "goal": "Deploy to production",
                "capability": "mwp.build@1.0.0",
                "duration": "15m",
                "risk": "high_risk",
                "approval": "human_required",
            }
        ]
    )


def test_the_owner_grants_execution_approval_once_risky_work_is_queued(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _risky_file())
    run_until(sandbox, lambda s: has_item(s, "deploy") and item(s, "deploy").execution_approved)
    deploy = item(sandbox, "deploy")
    event = events(sandbox, "approval.execution.granted")[0]
    assert event["actor"] == {"type": "human", "id": human_id("olga")}
    approval = event["payload"]["approval"]
    assert approval["kind"] == "work_execution" and approval["decision"] == "approved"
    assert approval["workItemId"] == deploy.work_item_id
    assert approval["approvalId"].endswith(f":e{deploy.ownership_epoch}")
    # the signed gate is what lets its owner start it under an Execution Lease
    owner = deploy.owner["agentId"].rsplit(":", 1)[-1]  # type: ignore[index]
    started = hand(
        sandbox,
        owner,
        "work.start",
        {"workItemId": deploy.work_item_id, "ownershipEpoch": deploy.ownership_epoch},
    )
    assert started.ok


def test_risky_work_cannot_start_before_the_human_approves(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _risky_file())
    run_until(sandbox, lambda s: has_item(s, "deploy") and str(item(s, "deploy").state) == "queued")
    deploy = item(sandbox, "deploy")
    assert not deploy.execution_approved
    owner = deploy.owner["agentId"].rsplit(":", 1)[-1]  # type: ignore[index]
    early = hand(
        sandbox, owner, "work.start", {"workItemId": deploy.work_item_id, "ownershipEpoch": 1}
    )
    assert early.error.code.value == "APPROVAL_REQUIRED"  # type: ignore[union-attr]
    # an Agent may not stand in for the human the contract requires
    approval = {
        "approvalId": "urn:mwp-local:approval:by-agent",
        "kind": "work_execution",
        "decision": "approved",
        "missionId": deploy.mission_id,
        "groupId": deploy.group_id,
        "workItemId": deploy.work_item_id,
        "missionRevision": 1,
        "artifactHashes": [],
        "acceptancePolicyVersion": "1.0.0",
        "approver": {"type": "agent", "id": deploy.owner["agentId"]},  # type: ignore[index]
        "comments": "",
        "conditions": [],
        "occurredAt": "2026-07-15T09:00:00Z",
    }
    signed = runtime_of(sandbox, "coord").view.sign("approval", approval)
    forged = hand(
        sandbox,
        "coord",
        "approval.grant_execution",
        {"workItemId": deploy.work_item_id, "approval": signed},
        expected_revision=deploy.revision,
    )
    assert forged.error.code.value == "AUTH_FORBIDDEN"  # type: ignore[union-attr]


def test_the_owner_cancels_on_schedule_and_it_reaches_every_unfinished_work_item(
    tmp_path: Path,
) -> None:
    raw = base_file(
        cancel_after="30m",
        work=[
            {"id": "a", "goal": "A", "capability": "mwp.build@1.0.0", "duration": "15m"},
            {
                "id": "b",
                "goal": "B",
                "capability": "mwp.build@1.0.0",
                "duration": "2h",
                "depends_on": ["a"],
            },
            {
                "id": "c",
                "goal": "C",
                "capability": "mwp.build@1.0.0",
                "duration": "1h",
                "depends_on": ["b"],
            },
        ],
    )
    sandbox = make(tmp_path, raw)
    summary = sandbox.run()
    assert summary.finished and mission_state(sandbox) == "cancelled"
    cancelled = events(sandbox, "mission.cancelled")[0]
    assert cancelled["actor"] == {"type": "human", "id": human_id("olga")}
    assert str(item(sandbox, "a").state) == "verified"  # finished work stays as it was
    assert str(item(sandbox, "b").state) == "cancelled"
    assert str(item(sandbox, "c").state) == "cancelled"
    later = [e for e in events(sandbox) if e["occurredAt"] > cancelled["occurredAt"]]
    assert not [e for e in later if e["kind"] in ("work.started", "work.offer.created")]


def test_the_owner_can_cancel_instead_of_approving(tmp_path: Path) -> None:
    sandbox = make(tmp_path, base_file(approval="cancel"))
    sandbox.run()
    assert mission_state(sandbox) == "cancelled"
    docs = events(sandbox)
    kinds = [e["kind"] for e in docs]
    assert kinds.index("mission.submitted_for_approval") < kinds.index("mission.cancelled")
    assert "mission.approved" not in kinds
    assert str(item(sandbox, "a").state) == "verified"


def test_a_change_request_adds_corrective_work_and_keeps_earlier_submissions(
    tmp_path: Path,
) -> None:
    sandbox = make(tmp_path, base_file(approval="request_changes_once"))
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    submissions = events(sandbox, "mission.submitted_for_approval")
    assert len(submissions) == 2
    first, second = (set(s["payload"]["artifactHashes"]) for s in submissions)
    assert first < second  # the earlier submission is kept, the correction added
    rework = item(sandbox, "a-rework-1")
    assert rework.dependencies == (work_item_id("m", "a"),)
    assert str(item(sandbox, "a").state) == "verified"
    kinds = [e["kind"] for e in events(sandbox)]
    assert kinds.index("mission.changes_requested") < kinds.index("mission.approved")
    approval = events(sandbox, "mission.approved")[0]["payload"]["approval"]
    assert sorted(approval["artifactHashes"]) == sorted(second)
    assert approval["missionRevision"] == submissions[1]["payload"]["missionRevision"]


def test_the_owner_reappoints_a_lapsed_coordinator_and_gives_up_on_one_that_never_renews(
    tmp_path: Path,
) -> None:
    raw = base_file(coordinator_fails_after="25m")
    raw["missions"][0]["work"][0]["duration"] = "3h"
    sandbox = make(tmp_path, raw)
    sandbox.run()
    assigned = events(sandbox, "mission.coordinator.assigned")
    # no standby: the same Agent is appointed again under a higher epoch, three times
    assert [e["payload"]["coordinator"]["coordinatorEpoch"] for e in assigned] == [2, 3, 4]
    assert {e["payload"]["coordinator"]["agentId"] for e in assigned} == {
        e["payload"]["previousCoordinatorAgentId"] for e in assigned
    }
    # none of those leases was ever renewed: the MissionOwner cancels instead of a fourth
    assert mission_state(sandbox) == "cancelled"
    reason = events(sandbox, "mission.cancelled")[0]["payload"]["reason"]
    assert "never renewed" in reason
