"""Your own MissionOwner and reviewer (issue 22.3): the hooks of ``MissionOwnerPolicy``
(approve, approve_execution, request_changes, cancel) and ``ReviewerPolicy`` (assess) decide,
the same Authority referees; a hook that breaks a rule is refused with its section-19 code and
the log and projections stay as they were."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mwp_local import Sandbox, Scenario
from mwp_local.agents.base import Intent, View
from mwp_local.agents.naming import agent_id, group_id
from mwp_local.agents.owner import MissionOwnerPolicy
from mwp_local.agents.reviewer import ReviewerPolicy, assessment_evidence
from mwp_local.authority.model import MissionRecord, WorkItemRecord
from mwp_local.authority.records import RejectionRecord
from mwp_local.drivers.scenario import Agent
from mwp_local.protocol.tables import MissionState, WorkItemState
from mwp_local.store.projection_rows import projection_rows

LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


def reviewed_learn() -> Scenario:
    """learn.toml with a reviewer Agent (rita) assessing the implementation, and tests that need
    the MissionOwner's execution approval."""
    scenario = Scenario.load(LEARN)
    scenario.agents.append(Agent(name="rita", capabilities=["mwp.software.review@1.0.0"]))
    for work in scenario.missions[0].work:
        if work.id == "implementation":
            work.reviewed_by = "rita"
        if work.id == "tests":
            work.approval = "human_required"
    return scenario


def _snapshot(sandbox: Sandbox) -> Any:
    state = sandbox.log.state
    return (
        sandbox.log.store.event_count(),
        copy.deepcopy(projection_rows(state)),
        {t: sandbox.log.store.projection_rows(t) for t in ("proj_missions", "proj_work_items")},
    )


def step_until_refused(sandbox: Sandbox, kind: str, steps: int = 2000) -> RejectionRecord:
    """Step until a Command of ``kind`` is refused; the step that was refused changed nothing."""
    for _ in range(steps):
        before = _snapshot(sandbox)
        sandbox.step()
        refused = [r for r in sandbox.log.store.rejections() if r.kind == kind]
        if refused:
            assert _snapshot(sandbox) == before, "a refused Command changed the log"
            return refused[0]
    raise AssertionError(f"no {kind} was refused in {steps} steps")


def events_of(sandbox: Sandbox, kind: str) -> list[dict[str, Any]]:
    return [json.loads(e.document) for e in sandbox.log.store.events() if e.kind == kind]


# --------------------------------------------------------------------------- MissionOwner


class Particular(MissionOwnerPolicy):
    """An owner of one's own: asks for one change in its own words, withholds the execution
    approval of 'tests' for an hour, then approves as the built-in does."""

    calls: ClassVar[list[str]] = []

    def request_changes(
        self, view: View, mission: MissionRecord, reviews: list[dict[str, Any]], now_us: int
    ) -> Intent | None:
        Particular.calls.append("request_changes")
        if self.changes_requested:
            return None
        return Intent(
            kind="mission.request_changes",
            group=mission.group_id,
            why="I want a changelog entry",
            payload={"reason": "Add a changelog entry, please."},
            tag="mine",
        )

    def approve_execution(
        self, view: View, mission: MissionRecord, item: WorkItemRecord, now_us: int
    ) -> Intent | None:
        Particular.calls.append("approve_execution")
        first = Particular.calls.index("approve_execution")
        if len(Particular.calls) - first < 3:  # withhold it the first two times
            return None
        return super().approve_execution(view, mission, item, now_us)

    def approve(
        self, view: View, mission: MissionRecord, reviews: list[dict[str, Any]], now_us: int
    ) -> Intent:
        Particular.calls.append("approve")
        return super().approve(view, mission, reviews, now_us)


def test_owner_hooks_decide_and_the_mission_is_approved(tmp_path: Path) -> None:
    Particular.calls.clear()
    sandbox = Sandbox(
        tmp_path / "s", reviewed_learn(), worker_files=False, policies={"mission-owner": Particular}
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}, summary
    assert {"request_changes", "approve_execution", "approve"} <= set(Particular.calls)
    changes = events_of(sandbox, "mission.changes_requested")
    assert [e["payload"]["reason"] for e in changes] == ["Add a changelog entry, please."]
    granted = events_of(sandbox, "approval.execution.granted")
    assert granted  # withheld twice, then granted
    assert Particular.calls.count("approve_execution") >= 2 + len(granted)
    assert summary.rejections == {}


class Impatient(MissionOwnerPolicy):
    """Cancels as soon as the requirements are verified."""

    def cancel(self, view: View, mission: MissionRecord, now_us: int) -> Intent | None:
        done = [
            w
            for w in view.state.work_items.values()
            if w.mission_id == mission.mission_id and w.state is WorkItemState.VERIFIED
        ]
        if done:
            return self.cancel_intent(mission, "the requirements were enough for me")
        return super().cancel(view, mission, now_us)


def test_an_owner_cancel_hook_cancels_under_the_same_authority(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"mission-owner": Impatient}
    )
    summary = sandbox.run()
    assert set(summary.missions.values()) == {"cancelled"}
    (cancelled,) = events_of(sandbox, "mission.cancelled")
    assert "the requirements were enough for me" in json.dumps(cancelled["payload"])
    states = {str(w.state) for w in sandbox.log.state.work_items.values()}
    assert "verified" in states and states <= {"verified", "cancelled"}


class ApprovesLess(MissionOwnerPolicy):
    """A careless approval: signs off on all but one of the submitted Artifacts."""

    def approve(
        self, view: View, mission: MissionRecord, reviews: list[dict[str, Any]], now_us: int
    ) -> Intent:
        intent = super().approve(view, mission, reviews, now_us)
        approval = dict(intent.payload["approval"])
        approval.pop("signature")
        approval["artifactHashes"] = approval["artifactHashes"][1:]
        return dataclasses.replace(intent, payload={"approval": view.sign("approval", approval)})


@pytest.mark.req("MWP-WRK-033")
def test_an_owner_approving_other_artifacts_than_submitted_is_refused(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"mission-owner": ApprovesLess}
    )
    refused = step_until_refused(sandbox, "mission.approve")
    assert refused.code == "INVALID_COMMAND", refused
    assert sandbox.log.state.missions[next(iter(sandbox.log.state.missions))].state is (
        MissionState.AWAITING_APPROVAL
    )
    assert not events_of(sandbox, "mission.approved")


def two_owners() -> Scenario:
    """learn.toml's Mission twice: 'export-button' owned by mission-owner, 'other' by bob."""
    scenario = Scenario.load(LEARN)
    other = copy.deepcopy(scenario.missions[0])
    other.id, other.owner = "other", "bob"
    scenario.missions.append(other)
    return scenario


class Meddler(MissionOwnerPolicy):
    """Bob cancels a Mission he does not own (export-button: he is not even in its Group, so
    he addresses it by its ID and claims a Membership Epoch)."""

    def cancel(self, view: View, mission: MissionRecord, now_us: int) -> Intent | None:
        return Intent(
            kind="mission.cancel",
            group=group_id("export-button"),
            why="I do not like this Mission",
            payload={"reason": "I do not like this Mission"},
            overrides={"membership_epoch": 1},
        )


def test_an_owner_cancelling_a_mission_it_does_not_own_is_refused(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", two_owners(), worker_files=False, policies={"bob": Meddler})
    refused = step_until_refused(sandbox, "mission.cancel")
    assert refused.code == "MEMBERSHIP_REQUIRED", refused  # §8: not even in its Group
    theirs = sandbox.log.state.missions["urn:mwp-local:mission:export-button"]
    assert theirs.state is MissionState.ACTIVE
    assert refused.actor_id is not None and refused.actor_id.endswith(":human:bob")
    assert not events_of(sandbox, "mission.cancelled")


# --------------------------------------------------------------------------- reviewer


class Thorough(ReviewerPolicy):
    """A reviewer of one's own: reads the submitted Artifacts and says so."""

    assessed: ClassVar[list[str]] = []

    def assess(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        Thorough.assessed.append(item.work_item_id)
        return assessment_evidence(
            view, item, now_us, passed=True, finding="read every line; the export is right"
        )


def test_a_reviewer_hook_assesses_and_the_mission_is_approved(tmp_path: Path) -> None:
    Thorough.assessed.clear()
    sandbox = Sandbox(
        tmp_path / "s", reviewed_learn(), worker_files=False, policies={"rita": Thorough}
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}, summary
    assert len(Thorough.assessed) == 1
    accepted = events_of(sandbox, "work.result.accepted")
    implementation = [e for e in accepted if e["payload"]["workItemId"].endswith(":implementation")]
    (record,) = implementation
    assessments = [
        e for e in record["payload"]["reviewEvidence"] if e["type"] == "reviewer_assessment"
    ]
    assert [a["details"]["finding"] for a in assessments] == [
        "read every line; the export is right"
    ]
    assert assessments[0]["generatedBy"]["id"] == agent_id("rita")


class Fabricates(ReviewerPolicy):
    """A hostile reviewer: claims its assessment rests on an Artifact that does not exist."""

    def assess(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        evidence = dict(super().assess(view, item, now_us))
        evidence.pop("signature")
        evidence["artifactHashes"] = ["sha256:" + "0" * 64]
        return view.sign("evidence", evidence)


def test_a_reviewer_assessing_an_artifact_that_does_not_exist_is_refused(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        tmp_path / "s",
        reviewed_learn(),
        worker_files=False,
        policies={"rita": Fabricates},
        stall_after="2h",
    )
    refused = step_until_refused(sandbox, "artifact.publish")
    assert refused.code == "INVALID_COMMAND", refused
    assert "provenance must resolve" in refused.explanation
    assert refused.actor_id == agent_id("rita")
    implementation = next(
        w
        for w in sandbox.log.state.work_items.values()
        if w.work_item_id.endswith(":implementation")
    )
    assert implementation.state is WorkItemState.SUBMITTED  # not verified on a made-up review
