"""A result is verified only on a §13.2 review the Command carries (issue 21 point 1, MWP-WRK-025).

A hand-written Coordinator sent ``work.accept_result`` with no review at all, with the review
stages in the wrong order, with a ``rejected`` verdict, and with only a failed reviewer
assessment, and all four ended ``verified``. Now the table's ``review_passed`` guard
(``authority.review_rules``) refuses each ``INVALID_COMMAND``, and nothing changes: the review's
signed Evidence (``reviewEvidence``) and its record (``review``) must show the five stages in
order, an ``accepted`` verdict with every criterion satisfied, passing Evidence only, and a
passing reviewer assessment for a criterion that needs one; the submission's Evidence must cover
every acceptance criterion.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.review_rules import REVIEW_STAGES

from .world import GROUP, MISSION, WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
CODE = "INVALID_COMMAND"
READABLE = [
    {
        "criterionId": "readable",
        "description": "Readable",
        "evidenceRequired": ["reviewer_assessment"],
    }
]


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _payload(w: World, **options: Any) -> dict[str, Any]:
    return {"workItemId": WID, **w.review(WID, **options).accept_result_payload()}


def _refused(w: World, payload: dict[str, Any]) -> Any:
    rejected = w.refuse(CODE, "coordinator", "work.accept_result", payload)
    assert w.state.work_items[WID].state == "submitted"
    assert "§13.2" in str(rejected.error.rule)
    return rejected


@pytest.mark.req("MWP-WRK-025")
def test_accepting_a_result_with_no_review_is_refused(world: World) -> None:
    world.run_to_submitted(WID)
    rejected = _refused(world, {"workItemId": WID})
    assert "carries no review" in rejected.error.explanation
    _refused(world, {**_payload(world), "reviewEvidence": []})
    _refused(world, {k: v for k, v in _payload(world).items() if k != "review"})


@pytest.mark.req("MWP-WRK-025")
def test_a_review_whose_stages_ran_out_of_order_is_refused(world: World) -> None:
    world.run_to_submitted(WID)
    payload = _payload(world)
    stages = payload["review"]["stages"]
    swapped = [stages[1], stages[0], *stages[2:]]
    rejected = _refused(world, {**payload, "review": {**payload["review"], "stages": swapped}})
    assert rejected.error.details["stages"] == ["deterministic", "integrity", *REVIEW_STAGES[2:]]
    skipped = [{**s, "status": "skipped"} if s["stage"] == "integrity" else s for s in stages]
    _refused(world, {**payload, "review": {**payload["review"], "stages": skipped}})


@pytest.mark.req("MWP-WRK-025")
def test_a_review_that_ended_rejected_is_refused(world: World) -> None:
    world.run_to_submitted(WID)
    payload = _payload(world)
    rejected = _refused(world, {**payload, "review": {**payload["review"], "verdict": "rejected"}})
    assert rejected.error.details["verdict"] == "rejected"


def _submitted_for_review(w: World) -> None:
    w.authorize(WID, acceptanceCriteria=READABLE)
    w.offer(WID)
    w.accept(WID)
    w.start(WID)
    manifest = w.artifact(WID, "worker-a", content=b"readable text")
    w.ok("worker-a", "artifact.publish", {**w.lease(WID), "artifact": manifest})
    claim = w.evidence(WID, manifest["contentHash"], criteria=["readable"])
    w.ok(
        "worker-a",
        "work.submit",
        {**w.lease(WID), "artifactHashes": [manifest["contentHash"]], "evidence": [claim]},
    )


def _assessment(w: World, result: str) -> dict[str, Any]:
    item = w.state.work_items[WID]
    reviewer = w.org.get("reviewer")
    return w.org.sign(
        "evidence",
        reviewer,
        {
            "evidenceId": f"urn:mwp-local:evidence:assessment-{result}",
            "missionId": MISSION,
            "groupId": GROUP,
            "workItemId": WID,
            "type": "reviewer_assessment",
            "subject": {"type": "artifact", "id": item.submitted_artifacts[0]},
            "criterionIds": ["readable"],
            "method": "read the text against the criterion",
            "result": result,
            "artifactHashes": list(item.submitted_artifacts),
            "generatedBy": reviewer.actor,
            "createdAt": w.at(0),
        },
    )


@pytest.mark.req("MWP-WRK-025")
def test_a_result_resting_on_a_failed_reviewer_assessment_is_refused(world: World) -> None:
    _submitted_for_review(world)
    good = _payload(world, reviewer_evidence=[_assessment(world, "passed")])
    failed = _assessment(world, "failed")
    rejected = _refused(world, {**good, "reviewEvidence": [failed]})
    assert rejected.error.details["evidenceIds"] == [failed["evidenceId"]]
    # Without the assessment at all, the criterion that needs one has none.
    others = [e for e in good["reviewEvidence"] if e["type"] != "reviewer_assessment"]
    rejected = _refused(world, {**good, "reviewEvidence": others})
    assert rejected.error.details["unassessed"] == ["readable"]
    world.ok("coordinator", "work.accept_result", good)
    assert world.state.work_items[WID].state == "verified"


@pytest.mark.req("MWP-WRK-025")
def test_a_result_with_its_ordered_passing_review_is_verified(world: World) -> None:
    world.run_to_submitted(WID)
    accepted = world.accept_result(WID)
    (event,) = accepted.event_documents
    assert [s["stage"] for s in event["payload"]["review"]["stages"]] == list(REVIEW_STAGES)
    assert world.state.work_items[WID].state == "verified"
