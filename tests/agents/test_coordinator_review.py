"""The Coordinator reviews every submission in the order of §13.2 before accepting it, asks a
reviewer Agent for semantic criteria through a review WorkItem, is never the sole reviewer of
its own output, and keeps every review for the human's Approval (MWP-WRK-025)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.coordinator.contracts import ASSESSMENT_SCHEMA, review_of
from mwp_local.agents.naming import agent_id, mission_id, review_item_id, work_item_id
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.signing import profile_for, verify_parsed
from mwp_local.protocol.timestamps import format_utc

from .coordinator_harness import (
    base_file,
    blobs,
    events,
    hand,
    has_item,
    item,
    make,
    mission_state,
    run_until,
    runtime_of,
)

STAGES = ["integrity", "deterministic", "reviewer", "evaluation", "retention"]


def _reviewed_file(reject_rate: float = 0.0) -> dict[str, Any]:
    raw = base_file(
        work=[
            {
                "id": "a",
                "goal": "Build part A",
                "capability": "mwp.build@1.0.0",
                "duration": "20m",
                "budget": {"financial": 20},
                "reviewed_by": "rev",
            },
            {
                "id": "b",
                "goal": "Build part B",
                "capability": "mwp.build@1.0.0",
                "duration": "20m",
                "depends_on": ["a"],
                "budget": {"financial": 20},
            },
        ]
    )
    raw["agents"][3]["behaviour"] = {"reject_rate": reject_rate}
    return raw


def _position(docs: list[dict[str, Any]], kind: str, wid: str) -> int:
    return next(
        i for i, e in enumerate(docs) if e["kind"] == kind and e["payload"].get("workItemId") == wid
    )


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One run of the reviewed mission, shared by the tests that only read its log."""
    sandbox = make(tmp_path_factory.mktemp("reviewed"), _reviewed_file())
    sandbox.run()
    return sandbox


@pytest.mark.req("MWP-WRK-025")
def test_every_submission_is_reviewed_in_the_order_of_13_2_before_it_is_accepted(
    reviewed: Sandbox,
) -> None:
    sandbox = reviewed
    assert mission_state(sandbox) == "approved"
    docs = events(sandbox)
    accepted = [e for e in docs if e["kind"] == "work.result.accepted"]
    assert len(accepted) == 3  # a, its review WorkItem, b
    for event in accepted:
        wid = event["payload"]["workItemId"]
        review = event["payload"]["review"]
        assert [s["stage"] for s in review["stages"]] == STAGES
        assert all(s["status"] == "ran" for s in review["stages"])
        assert review["verdict"] == "accepted"
        assert review["reviewer"]["id"] == agent_id("coord")
        kinds = {e["type"] for e in event["payload"]["reviewEvidence"]}
        assert "artifact_integrity" in kinds
        assert _position(docs, "work.submitted", wid) < docs.index(event)


@pytest.mark.req("MWP-WRK-025")
def test_a_semantic_criterion_is_accepted_only_with_the_named_reviewers_assessment(
    reviewed: Sandbox,
) -> None:
    sandbox = reviewed
    a = item(sandbox, "a")
    review_wid = review_item_id(a.work_item_id, a.ownership_epoch)
    review = sandbox.log.state.work_items[review_wid]
    target = review_of(review.contract)
    assert target is not None and target["workItemId"] == a.work_item_id
    assert review.parent_work_item_id == a.work_item_id
    # offered to the named reviewer only, who is not the producer
    offers = [o for o in sandbox.log.state.offers.values() if o.work_item_id == review_wid]
    assert {o.agent_id for o in offers} == {agent_id("rev")}
    assert a.owner is not None and a.owner["agentId"] != agent_id("rev")
    # its deliverable is the reviewer's signed assessment, read back through verified content
    manifest = sandbox.log.state.item_manifests(review.work_item_id)[review.submitted_artifacts[0]]
    assert (
        manifest["schemaUri"] == ASSESSMENT_SCHEMA and manifest["mediaType"] == "application/json"
    )
    assessment = parse_strict(blobs(sandbox).get(manifest["contentHash"]))
    verified = verify_parsed(profile_for("evidence"), assessment, sandbox.log.state.registry)
    assert verified.principal.id == agent_id("rev")
    assert assessment["type"] == "reviewer_assessment"
    assert assessment["workItemId"] == a.work_item_id
    assert set(a.submitted_artifacts) <= set(assessment["artifactHashes"])
    # the reviewed WorkItem was accepted only after the review WorkItem, citing the assessment
    docs = events(sandbox)
    accepted = next(
        e
        for e in docs
        if e["kind"] == "work.result.accepted" and e["payload"]["workItemId"] == a.work_item_id
    )
    assert _position(docs, "work.result.accepted", review_wid) < docs.index(accepted)
    cited = {e["evidenceId"] for e in accepted["payload"]["reviewEvidence"]}
    assert assessment["evidenceId"] in cited
    criteria = {c["criterionId"]: c for c in accepted["payload"]["review"]["criteria"]}
    assert criteria["semantic-review"]["status"] == "satisfied"
    assert criteria["semantic-review"]["independent"]


@pytest.mark.req("MWP-WRK-025")
def test_a_reviewer_that_finds_the_result_lacking_fails_it_and_nothing_is_accepted(
    tmp_path: Path,
) -> None:
    sandbox = make(tmp_path, _reviewed_file(reject_rate=1.0))
    sandbox.run()
    a = item(sandbox, "a")
    assert str(a.state) == "failed"
    docs = events(sandbox)
    assert not any(
        e["kind"] == "work.result.accepted" and e["payload"]["workItemId"] == a.work_item_id
        for e in docs
    )
    failures = [
        e
        for e in docs
        if e["kind"] == "work.failed"
        and e["payload"]["workItemId"] == a.work_item_id
        and e["actor"]["id"] == agent_id("coord")
    ]
    assert len(failures) == 2  # one per attempt of the retry policy
    for failure in failures:
        report = failure["payload"]["evidence"][0]
        assert report["type"] == "failure_report"
        record = report["details"]["review"]
        assert record["verdict"] == "rejected"
        assert [s["stage"] for s in record["stages"]] == STAGES
        assessments = [
            e for e in failure["payload"]["evidence"] if e["type"] == "reviewer_assessment"
        ]
        assert assessments and assessments[0]["result"] == "failed"
    # the retries are exhausted: the Coordinator fails the Mission instead of accepting
    assert mission_state(sandbox) == "failed"


@pytest.mark.req("MWP-WRK-025")
def test_a_tampered_artifact_is_rejected_at_the_integrity_step_before_any_check(
    tmp_path: Path,
) -> None:
    sandbox = make(tmp_path, base_file())
    run_until(sandbox, lambda s: has_item(s, "a") and str(item(s, "a").state) == "submitted")
    store = blobs(sandbox)
    digest = item(sandbox, "a").submitted_artifacts[0]
    ref = store.verify(digest)
    path = sandbox.directory / "blobs" / ref.b3[:2] / ref.b3
    path.chmod(0o644)
    path.write_bytes(b"# something else entirely\n")
    run_until(sandbox, lambda s: str(item(s, "a").state) != "submitted")
    failure = events(sandbox, "work.failed")[0]
    record = failure["payload"]["evidence"][0]["details"]["review"]
    stages = {s["stage"]: s for s in record["stages"]}
    assert record["verdict"] == "rejected"
    assert stages["integrity"]["problems"]
    assert stages["deterministic"]["status"] == "skipped"
    assert stages["reviewer"]["status"] == "skipped"


def _publish_as_coordinator(sandbox: Any, wid: str, now_us: int) -> str:
    rt = runtime_of(sandbox, "coord")
    work = sandbox.log.state.work_items[wid]
    content = f"# {work.contract['goal']}\n\nDone by the Coordinator itself.\n".encode()
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    blobs(sandbox).put(content)
    manifest = rt.view.sign(
        "artifact",
        {
            "artifactId": f"urn:mwp-local:artifact:{digest[7:39]}",
            "contentHash": digest,
            "uri": f"mwp-local://blobs/{digest[7:]}",
            "sizeBytes": len(content),
            "mediaType": "text/markdown",
            "schemaUri": work.contract["requiredDeliverables"][0]["schema"],
            "producer": {
                "agentId": rt.member.id,
                "agentCardVersion": 1,
                "capabilities": [{"id": "mwp.coordination", "version": "1.0.0"}],
            },
            "missionId": work.mission_id,
            "groupId": work.group_id,
            "workItemId": wid,
            "sourceArtifactHashes": [],
            "toolVersions": [],
            "modelVersions": [],
            "classification": "internal",
            "createdAt": format_utc(now_us),
        },
    )
    lease = {"workItemId": wid, "ownershipEpoch": 1, "leaseId": work.execution_lease_id}
    assert hand(sandbox, "coord", "artifact.publish", {**lease, "artifact": manifest}).ok
    evidence = rt.view.sign(
        "evidence",
        {
            "evidenceId": "urn:mwp-local:evidence:coordinator-self-check",
            "missionId": work.mission_id,
            "groupId": work.group_id,
            "workItemId": wid,
            "type": "deterministic_test",
            "subject": {"type": "artifact", "id": digest},
            "criterionIds": ["deliverable-complete"],
            "method": "the Coordinator's own test run",
            "result": "passed",
            "artifactHashes": [digest],
            "generatedBy": rt.member.actor,
            "createdAt": format_utc(now_us),
        },
    )
    submit = {**lease, "artifactHashes": [digest], "evidence": [evidence]}
    assert hand(sandbox, "coord", "work.submit", submit).ok
    return digest


@pytest.mark.req("MWP-WRK-025")
def test_the_coordinator_is_never_the_sole_reviewer_of_its_own_output(tmp_path: Path) -> None:
    raw = base_file(
        work=[
            {
                "id": "fallback",
                "goal": "Exceptional fallback work only the Coordinator can do",
                "capability": "mwp.coordination@1.0.0",
                "duration": "10m",
                "budget": {"financial": 20},
            }
        ]
    )
    sandbox = make(tmp_path, raw)
    run_until(sandbox, lambda s: has_item(s, "fallback"))
    wid = work_item_id("m", "fallback")
    now = sandbox.clock.now_us()
    coordinator = agent_id("coord")
    basis = {
        "authorizationEligible": True,
        "availabilityEstimate": format_utc(now),
        "expectedCost": 20,
        "reliabilityEvidence": [],
        "policyRulesApplied": ["exceptional fallback: the Coordinator executes it itself"],
    }
    offer = {
        "workItemId": wid,
        "offers": [{"agentId": coordinator, "expiresAt": format_utc(now + 60_000_000)}],
        "selectionBasis": basis,
    }
    assert hand(sandbox, "coord", "work.offer", offer).ok
    revision = sandbox.log.state.work_items[wid].revision
    assert hand(
        sandbox, "coord", "work.accept_offer", {"workItemId": wid}, expected_revision=revision
    ).ok
    assert hand(sandbox, "coord", "work.start", {"workItemId": wid, "ownershipEpoch": 1}).ok
    _publish_as_coordinator(sandbox, wid, now)
    # the Authority refuses a self-accepted result without another reviewer's Evidence ...
    refused = hand(sandbox, "coord", "work.accept_result", {"workItemId": wid})
    assert not refused.ok and refused.error.code.value == "AUTH_FORBIDDEN"  # type: ignore[union-attr]
    # ... and the Coordinator's policy never proposes one: it asks an independent reviewer
    coordinator_rt = runtime_of(sandbox, "coord")
    wanted = coordinator_rt.intents(sandbox.clock.now_us())
    assert not any(i.kind == "work.accept_result" for i in wanted)
    ask = next(i for i in wanted if i.kind == "work.authorize")
    assert ask.payload["workItemId"] == review_item_id(wid, 1)
    assert ask.payload["contract"]["constraints"]["reviewOf"]["reviewer"] == agent_id("rev")
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    accepted = next(
        e for e in events(sandbox, "work.result.accepted") if e["payload"]["workItemId"] == wid
    )
    authors = {e["generatedBy"]["id"] for e in accepted["payload"]["reviewEvidence"]}
    assert agent_id("rev") in authors
    assert all(c["independent"] for c in accepted["payload"]["review"]["criteria"])


@pytest.mark.req("MWP-WRK-025")
def test_the_human_reads_every_retained_review_before_approving(reviewed: Sandbox) -> None:
    sandbox = reviewed
    owner = runtime_of(sandbox, "olga").policy
    reviews = owner.reviewed[mission_id("m")]  # type: ignore[attr-defined]
    verified = [
        i.work_item_id for i in sandbox.log.state.work_items.values() if str(i.state) == "verified"
    ]
    assert sorted(r["workItemId"] for r in reviews) == sorted(verified)
    assert all(r["review"]["verdict"] == "accepted" for r in reviews)
    approval = events(sandbox, "mission.approved")[0]["payload"]["approval"]
    assert f"{len(reviews)} retained review records" in approval["comments"]


def test_without_a_content_source_the_coordinator_never_accepts_a_result(tmp_path: Path) -> None:
    """A log-only review re-hashes nothing, so it is no §13.2 review: the Authority would refuse
    its acceptance (tests/authority/test_review_required.py) and the Coordinator waits."""
    sandbox = make(tmp_path, base_file(), cast=False)
    sandbox.run(until=lambda sb: bool(events(sb, "work.submitted")), max_steps=2_000)
    assert events(sandbox, "work.submitted")
    sandbox.run(max_steps=200)
    assert events(sandbox, "work.result.accepted") == []
    assert "submitted" in {str(i.state) for i in sandbox.log.state.work_items.values()}
