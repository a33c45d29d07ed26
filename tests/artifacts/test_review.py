"""The Coordinator's ordered review (§13.2): integrity first, then deterministic checks, reviewer
Evidence, evaluation and retention; never the sole reviewer of its own output (MWP-WRK-025);
Evidence signed, official and free of private reasoning (MWP-WRK-026)."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.artifacts.checks import DEFAULT_CHECKS, CheckOutcome, ReviewInput
from mwp_local.artifacts.evidence import build_evidence, private_reasoning_paths
from mwp_local.artifacts.review import ReviewStage, Verdict, review_submission, reviews_for_approval
from mwp_local.protocol.documents import EvidenceResult
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.signing import profile_for, verify_parsed

from ..official_schemas import problems
from .scene import MISSION, Scene

WID = "urn:mwp-local:work:reviewed"
CRITERIA = [
    {
        "criterionId": "tests-pass",
        "description": "Tests pass",
        "evidenceRequired": ["deterministic_test"],
    },
    {
        "criterionId": "readable",
        "description": "The code is readable",
        "evidenceRequired": ["reviewer_assessment"],
    },
]


class Spy:
    """A content source that records every read, around the real blob store."""

    def __init__(self, scene: Scene, log: list[str]) -> None:
        self.blobs, self.log = scene.blobs, log

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        self.log.append("get")
        return self.blobs.get(sha256, name=name)

    def verify(self, sha256: str, *, name: str | None = None) -> Any:
        self.log.append("verify")
        return self.blobs.verify(sha256, name=name)


def _checks(log: list[str], result: EvidenceResult = EvidenceResult.PASSED) -> Any:
    checks = DEFAULT_CHECKS.copy()

    @checks.register("patch-applies", evidence_type="deterministic_test")
    def patch_applies(review: ReviewInput) -> CheckOutcome:
        log.append("check")
        content = [review.content(h) for h in review.artifact_hashes]
        return CheckOutcome(
            result=result, method="apply the patch", details={"bytes": sum(map(len, content))}
        )

    return checks


def _submitted(scene: Scene, agent: str = "worker-a", content: bytes = b"+x = 2\n") -> None:
    scene.to_active(WID, agent=agent, acceptanceCriteria=CRITERIA)
    scene.publish(WID, content, agent)
    scene.submit(WID, agent)


def _review(scene: Scene, log: list[str], reviewer: str = "coordinator", **kw: Any) -> Any:
    kw.setdefault("checks", _checks(log))
    return review_submission(
        scene.item(WID),
        manifests=scene.w.state.item_manifests(WID),
        source=Spy(scene, log),
        reviewer=scene.w.org.get(reviewer),
        registry=scene.w.state.registry,
        now=scene.w.now().text,
        **kw,
    )


def _assessment(scene: Scene, agent: str = "reviewer", **kw: Any) -> dict[str, Any]:
    kw.setdefault("criteria", ["readable"])
    return scene.evidence(WID, agent, kind="reviewer_assessment", **kw)


@pytest.mark.req("MWP-WRK-025")
def test_the_review_runs_the_five_steps_in_order_and_keeps_every_result(scene: Scene) -> None:
    _submitted(scene)
    log: list[str] = []
    record = _review(scene, log, reviewer_evidence=[_assessment(scene)])
    assert [s.stage for s in record.stages] == list(ReviewStage)
    assert all(s.ran for s in record.stages)
    assert log.index("check") > max(i for i, step in enumerate(log) if step == "verify")
    assert record.verdict is Verdict.ACCEPTED
    assert {c.criterion_id: c.status for c in record.criteria} == {
        "tests-pass": "satisfied",
        "readable": "satisfied",
    }
    kinds = [e["type"] for e in record.evidence]
    assert kinds == [
        "artifact_integrity",
        "schema_validation",
        "deterministic_test",
        "reviewer_assessment",
    ]
    assert len(record.submitted_evidence) == 1
    as_json = record.to_json()
    assert [s["stage"] for s in as_json["stages"]] == [str(s) for s in ReviewStage]
    assert as_json["submittedEvidenceIds"] == [record.submitted_evidence[0]["evidenceId"]]


@pytest.mark.req("MWP-WRK-025")
def test_the_retained_review_reaches_the_log_and_the_human_at_approval(logged: Scene) -> None:
    _submitted(logged)
    record = _review(logged, [], reviewer_evidence=[_assessment(logged)])
    payload = record.accept_result_payload()
    logged.w.ok("coordinator", "work.accept_result", payload)
    assert str(logged.item(WID).state) == "verified"
    (shown,) = reviews_for_approval(logged.w.events, MISSION)
    assert shown["review"] == record.to_json()
    assert [e["evidenceId"] for e in shown["reviewEvidence"]] == [
        e["evidenceId"] for e in record.evidence
    ]


@pytest.mark.req("MWP-WRK-025")
def test_a_tampered_artifact_ends_the_review_before_any_check_touches_it(scene: Scene) -> None:
    _submitted(scene)
    ref = scene.blobs.ref(scene.item(WID).submitted_artifacts[0])
    path = scene.blobs.blob_path(ref.b3)
    path.write_bytes(path.read_bytes()[:-1] + b"!")
    log: list[str] = []
    record = _review(scene, log, reviewer_evidence=[_assessment(scene)])
    assert record.verdict is Verdict.REJECTED
    assert "check" not in log and "get" not in log
    assert [s.ran for s in record.stages] == [True, False, False, True, True]
    integrity = record.evidence[0]
    assert integrity["type"] == "artifact_integrity" and integrity["result"] == "failed"
    assert "PROTOCOL_VIOLATION" in integrity["details"]["problem"]
    with pytest.raises(ProtocolError) as caught:
        record.accept_result_payload()
    assert caught.value.code is ErrorCode.INVALID_COMMAND


@pytest.mark.req("MWP-WRK-025")
def test_a_failing_deterministic_check_rejects_the_submission(scene: Scene) -> None:
    _submitted(scene)
    log: list[str] = []
    record = _review(
        scene,
        log,
        checks=_checks(log, EvidenceResult.FAILED),
        reviewer_evidence=[_assessment(scene)],
    )
    assert record.verdict is Verdict.REJECTED
    assert {c.criterion_id: c.status for c in record.criteria}["tests-pass"] == "failed"


@pytest.mark.req("MWP-WRK-025")
def test_a_semantic_criterion_without_reviewer_evidence_is_incomplete(scene: Scene) -> None:
    _submitted(scene)
    record = _review(scene, [])
    assert record.verdict is Verdict.INCOMPLETE
    assert record.reviewer_requests == ("readable",)
    with pytest.raises(ProtocolError) as caught:
        record.accept_result_payload()
    assert caught.value.code is ErrorCode.INVALID_COMMAND


@pytest.mark.req("MWP-WRK-025")
def test_the_workers_own_claim_does_not_satisfy_a_criterion(scene: Scene) -> None:
    _submitted(scene)
    checks = DEFAULT_CHECKS.copy()  # no test runs for "tests-pass"
    record = _review(scene, [], checks=checks, reviewer_evidence=[_assessment(scene)])
    assert record.verdict is Verdict.INCOMPLETE
    assert {c.criterion_id: c.status for c in record.criteria}["tests-pass"] == "missing"
    trusted = _review(
        scene, [], checks=checks, reviewer_evidence=[_assessment(scene)], accept_submitted=True
    )
    assert trusted.verdict is Verdict.ACCEPTED


@pytest.mark.req("MWP-WRK-025")
def test_a_submission_without_evidence_for_every_criterion_is_refused(scene: Scene) -> None:
    scene.to_active(WID, acceptanceCriteria=CRITERIA)
    scene.publish(WID, b"+x = 2\n")
    partial = scene.evidence(WID, "worker-a", ["tests-pass"])
    rejected = scene.refuse(
        "INVALID_COMMAND",
        "worker-a",
        "work.submit",
        {
            **scene.w.lease(WID),
            "artifactHashes": list(scene.item(WID).artifact_hashes),
            "evidence": [partial],
        },
    )
    assert "readable" in rejected.error.explanation


@pytest.mark.req("MWP-WRK-025")
def test_the_coordinator_is_never_the_sole_reviewer_of_its_own_output(scene: Scene) -> None:
    _submitted(scene, agent="coordinator")
    alone = _review(scene, [])
    assert alone.verdict is Verdict.NEEDS_INDEPENDENT_REVIEW
    with pytest.raises(ProtocolError) as caught:
        alone.accept_result_payload()
    assert caught.value.code is ErrorCode.AUTH_FORBIDDEN
    own = {"workItemId": WID, "reviewEvidence": list(alone.evidence)}
    scene.refuse("AUTH_FORBIDDEN", "coordinator", "work.accept_result", own)
    independent = _assessment(scene, criteria=["tests-pass", "readable"])
    record = _review(scene, [], reviewer_evidence=[independent])
    assert record.verdict is Verdict.ACCEPTED
    scene.w.ok("coordinator", "work.accept_result", record.accept_result_payload())


@pytest.mark.req("MWP-WRK-025")
def test_the_producer_cannot_review_its_own_result(scene: Scene) -> None:
    _submitted(scene)
    record = _review(scene, [], reviewer_evidence=[_assessment(scene, agent="worker-a")])
    assert record.verdict is Verdict.INCOMPLETE
    (reviewer_stage,) = [s for s in record.stages if s.stage is ReviewStage.REVIEWER]
    assert any("produced the result" in p for p in reviewer_stage.problems)


@pytest.mark.req("MWP-WRK-026")
def test_review_evidence_is_official_signed_and_holds_no_private_reasoning(scene: Scene) -> None:
    _submitted(scene)
    record = _review(scene, [], reviewer_evidence=[_assessment(scene)])
    for doc in record.evidence:
        assert problems("evidence", doc) == []
        verified = verify_parsed(profile_for("evidence"), doc, scene.w.state.registry)
        assert verified.principal.id == doc["generatedBy"]["id"]
        assert private_reasoning_paths(doc) == []
        for member in ("subject", "criterionIds", "method", "result", "generatedBy", "createdAt"):
            assert doc[member]
        assert "artifactHashes" in doc
    assert private_reasoning_paths(record.to_json()) == []


@pytest.mark.req("MWP-WRK-026")
def test_evidence_with_private_reasoning_is_not_built(scene: Scene) -> None:
    _submitted(scene)
    with pytest.raises(ProtocolError) as caught:
        build_evidence(
            scene.w.org.get("reviewer"),
            mission_id=MISSION,
            group_id=scene.item(WID).group_id,
            work_item_id=WID,
            type="reviewer_assessment",
            subject=("work_item", WID),
            criteria=["readable"],
            method="read it",
            result="passed",
            artifact_hashes=[],
            created_at=scene.w.now().text,
            details={"score": 4, "notes": {"chain_of_thought": "first I..."}},
        )
    assert caught.value.code is ErrorCode.INVALID_COMMAND
    assert caught.value.details["paths"] == ["/notes/chain_of_thought"]
    with pytest.raises(ProtocolError):
        CheckOutcome(result=EvidenceResult.PASSED, method="x", details={"Reasoning": "..."})


@pytest.mark.req("MWP-WRK-026")
def test_reviewer_evidence_carrying_private_reasoning_is_refused_and_kept_out(scene: Scene) -> None:
    _submitted(scene)
    item = scene.item(WID)
    doc = {
        "evidenceId": "urn:mwp-local:evidence:leaky",
        "missionId": MISSION,
        "groupId": item.group_id,
        "workItemId": WID,
        "type": "reviewer_assessment",
        "subject": {"type": "work_item", "id": WID},
        "criterionIds": ["readable"],
        "method": "read it",
        "result": "passed",
        "details": {"thoughts": ["hmm", "looks fine"]},
        "artifactHashes": list(item.submitted_artifacts),
        "generatedBy": scene.w.org.get("reviewer").actor,
        "createdAt": scene.w.now().text,
    }
    leaky = scene.w.org.sign("evidence", "reviewer", doc)
    record = _review(scene, [], reviewer_evidence=[leaky])
    assert record.verdict is Verdict.INCOMPLETE
    assert all(e["evidenceId"] != "urn:mwp-local:evidence:leaky" for e in record.evidence)
    assert private_reasoning_paths(record.to_json()) == []


@pytest.mark.req("MWP-WRK-026")
def test_a_check_that_attaches_its_reasoning_yields_inconclusive_evidence_without_it(
    scene: Scene,
) -> None:
    _submitted(scene)
    checks = DEFAULT_CHECKS.copy()

    @checks.register("chatty", evidence_type="deterministic_test")
    def chatty(review: ReviewInput) -> CheckOutcome:
        return CheckOutcome(result=EvidenceResult.PASSED, method="m", details={"scratchpad": "..."})

    record = _review(scene, [], checks=checks, reviewer_evidence=[_assessment(scene)])
    (doc,) = [e for e in record.evidence if e["type"] == "deterministic_test"]
    assert doc["result"] == "inconclusive" and private_reasoning_paths(doc) == []
    assert record.verdict is Verdict.INCOMPLETE


@pytest.mark.req("MWP-WRK-025")
def test_forged_reviewer_evidence_is_refused(scene: Scene) -> None:
    _submitted(scene)
    forged = dict(_assessment(scene), result="passed", criterionIds=["readable", "tests-pass"])
    record = _review(scene, [], reviewer_evidence=[forged])
    assert record.verdict is Verdict.INCOMPLETE
    (reviewer_stage,) = [s for s in record.stages if s.stage is ReviewStage.REVIEWER]
    assert any("AUTH_INVALID_SIGNATURE" in p for p in reviewer_stage.problems)
