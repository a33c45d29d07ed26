"""A Worker that misses its start-by deadline or stops renewing is replaced from the latest
checkpoint under a higher Ownership Epoch; the old owner's late result is kept for audit in the
rejections table and never completes the WorkItem (MWP-WRK-019)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.naming import agent_id
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
    rejections,
    run_until,
    runtime_of,
)


def _late_result(sandbox: Any, lease_id: str) -> list[Any]:
    """The old owner publishes and submits under its old lease and Ownership Epoch 1."""
    a = item(sandbox, "a")
    w1 = runtime_of(sandbox, "w1")
    now = sandbox.clock.now_us()
    content = b"# Build part A\n\nThe late result of the first owner.\n"
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    blobs(sandbox).put(content)
    manifest = w1.view.sign(
        "artifact",
        {
            "artifactId": f"urn:mwp-local:artifact:{digest[7:39]}",
            "contentHash": digest,
            "uri": f"mwp-local://blobs/{digest[7:]}",
            "sizeBytes": len(content),
            "mediaType": "text/markdown",
            "schemaUri": a.contract["requiredDeliverables"][0]["schema"],
            "producer": {
                "agentId": w1.member.id,
                "agentCardVersion": 1,
                "capabilities": [{"id": "mwp.build", "version": "1.2.0"}],
            },
            "missionId": a.mission_id,
            "groupId": a.group_id,
            "workItemId": a.work_item_id,
            "sourceArtifactHashes": [],
            "toolVersions": [],
            "modelVersions": [],
            "classification": "internal",
            "createdAt": format_utc(now),
        },
    )
    evidence = w1.view.sign(
        "evidence",
        {
            "evidenceId": "urn:mwp-local:evidence:late",
            "missionId": a.mission_id,
            "groupId": a.group_id,
            "workItemId": a.work_item_id,
            "type": "deterministic_test",
            "subject": {"type": "artifact", "id": digest},
            "criterionIds": ["deliverable-complete"],
            "method": "tests",
            "result": "passed",
            "artifactHashes": [digest],
            "generatedBy": w1.member.actor,
            "createdAt": format_utc(now),
        },
    )
    ref = {"workItemId": a.work_item_id, "ownershipEpoch": 1, "leaseId": lease_id}
    return [
        hand(sandbox, "w1", "artifact.publish", {**ref, "artifact": manifest}),
        hand(
            sandbox,
            "w1",
            "work.submit",
            {**ref, "artifactHashes": [digest], "evidence": [evidence]},
        ),
    ]


@pytest.mark.req("MWP-WRK-019")
def test_an_owner_that_stops_renewing_is_replaced_and_its_late_result_is_only_audited(
    tmp_path: Path,
) -> None:
    raw = base_file()
    raw["missions"][0]["work"][0]["duration"] = "1h"
    raw["faults"] = [{"agent": "w1", "kind": "pause", "at": "10m", "for": "3h"}]
    sandbox = make(tmp_path, raw)
    # until the new owner executes it: the table then allows a submission, and the old owner's
    # Ownership Epoch is what refuses its late one
    run_until(
        sandbox,
        lambda s: (
            has_item(s, "a")
            and item(s, "a").ownership_epoch == 2
            and str(item(s, "a").state) == "active"
        ),
    )
    a = item(sandbox, "a")
    assert a.owner is not None and a.owner["agentId"] == agent_id("w2")
    started = events(sandbox, "work.started")[0]
    assert started["actor"]["id"] == agent_id("w1")
    old_lease = started["payload"]["executionLeaseId"]
    expired = [
        e
        for e in events(sandbox, "ext.mwp-local.sandbox.lease_expired")
        if e["payload"]["leaseId"] == old_lease
    ]
    assert expired, "the first owner's Execution Lease ran out"
    reoffer = [e for e in events(sandbox, "work.offer.created") if e["payload"]["fencedOwner"]]
    assert len(reoffer) == 1
    payload = reoffer[0]["payload"]
    assert payload["fencedOwner"] == {"agentId": agent_id("w1"), "ownershipEpoch": 1}
    assert [o["agentId"] for o in payload["offers"]] == [agent_id("w2")]
    assert any(
        "reassign from the latest checkpoint under Ownership Epoch 2" in rule
        for rule in payload["selectionBasis"]["policyRulesApplied"]
    )
    # the first owner's checkpoint is the point the new owner resumes from
    assert a.last_checkpoint is None or "progress" in a.last_checkpoint

    before = (a.state, a.revision, a.owner, a.submitted_artifacts)
    outcomes = _late_result(sandbox, old_lease)
    assert [o.error.code.value for o in outcomes] == ["WORK_STALE_OWNERSHIP"] * 2  # type: ignore[union-attr]
    after = item(sandbox, "a")
    assert (after.state, after.revision, after.owner, after.submitted_artifacts) == before
    audited = [r for r in rejections(sandbox) if r["actor_id"] == agent_id("w1")]
    assert [r["kind"] for r in audited] == ["artifact.publish", "work.submit"]
    assert json.loads(audited[1]["command_text"])["payload"]["leaseId"] == old_lease

    sandbox.run()
    assert mission_state(sandbox) == "approved"
    final = item(sandbox, "a")
    assert str(final.state) == "verified" and final.owner["agentId"] == agent_id("w2")  # type: ignore[index]
    producers = {
        sandbox.log.state.item_manifests(final.work_item_id)[h]["producer"]["agentId"]
        for h in final.submitted_artifacts
    }
    assert producers == {agent_id("w2")}


@pytest.mark.req("MWP-WRK-019")
def test_an_owner_that_misses_its_start_by_deadline_is_replaced(tmp_path: Path) -> None:
    raw = base_file()
    raw["faults"] = [{"agent": "w1", "kind": "pause", "at": 0, "for": "2h"}]
    sandbox = make(tmp_path, raw)
    run_until(sandbox, lambda s: has_item(s, "a") and str(item(s, "a").state) == "offered")
    a = item(sandbox, "a")
    assert sandbox.log.state.offers[a.offer_ids[-1]].agent_id == agent_id("w1")
    # it accepts (a durable commitment) but then never starts
    assert hand(
        sandbox,
        "w1",
        "work.accept_offer",
        {"workItemId": a.work_item_id},
        expected_revision=a.revision,
    ).ok
    accepted_at = sandbox.clock.now_us()
    run_until(sandbox, lambda s: item(s, "a").ownership_epoch == 2)
    reoffer = next(e for e in events(sandbox, "work.offer.created") if e["payload"]["fencedOwner"])
    start_by = sandbox.log.state.leases[
        events(sandbox, "work.offer.accepted")[0]["payload"]["owner"]["ownershipLeaseId"]
    ].start_by
    assert start_by is not None and reoffer["occurredAt"] >= start_by
    assert sandbox.clock.now_us() - accepted_at >= 300_000_000
    late = hand(sandbox, "w1", "work.start", {"workItemId": a.work_item_id, "ownershipEpoch": 1})
    assert late.error.code.value == "WORK_STALE_OWNERSHIP"  # type: ignore[union-attr]
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    starters = {e["actor"]["id"] for e in events(sandbox, "work.started")}
    assert starters == {agent_id("w2")}


@pytest.mark.req("MWP-WRK-019")
def test_a_live_owner_is_never_reassigned(tmp_path: Path) -> None:
    sandbox = make(tmp_path, base_file())
    sandbox.run()
    assert not [e for e in events(sandbox, "work.offer.created") if e["payload"]["fencedOwner"]]
    assert {
        e["payload"]["owner"]["ownershipEpoch"] for e in events(sandbox, "work.offer.accepted")
    } == {1}
