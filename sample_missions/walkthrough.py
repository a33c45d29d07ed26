"""A scripted Mission through the real Group Authority and its DuckDB log, Command by Command,
with no agents: every Command is signed by hand through ``mwp_local.client.Client``.

Run it with ``python sample_missions/walkthrough.py [DIR]``. It creates a
sandbox directory, lets a human create a Mission, a Coordinator plan two dependent WorkItems,
two Workers execute them under fenced Execution Leases (one delayed Command with an old Lease ID
is refused on the way), the Coordinator review the results, and the human approve the exact
revision and Artifact set. Then it verifies the whole log and queries it with SQL.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path
from typing import Any

from mwp_local.artifacts.context_packages import PackageScope, build_context_package
from mwp_local.artifacts.review import review_submission
from mwp_local.store.blobs import BlobStore
from mwp_local.client import Client
from mwp_local.protocol.timestamps import Timestamp, format_utc, parse_timestamp
from mwp_local.store.sandbox_dir import init_directory
from mwp_local.store.views import sql
from mwp_local.store.verify import verify_log

GROUP = "urn:mwp-local:group:walkthrough"
MISSION = "urn:mwp-local:mission:walkthrough"
ANALYSIS = "urn:mwp-local:work:requirements-analysis"
IMPLEMENT = "urn:mwp-local:work:implementation"
clock = parse_timestamp("2026-07-15T09:00:00Z").epoch_micros
history: list[dict[str, Any]] = []  # the accepted Events, for the Context Packages of offers


def now() -> Timestamp:
    return parse_timestamp(format_utc(clock))


def later(seconds: float) -> str:
    return format_utc(clock + int(seconds * 1_000_000))


def tick(seconds: float = 1) -> None:
    global clock
    clock += int(seconds * 1_000_000)


def show(step: str, outcome: Any) -> Any:
    if outcome.ok:
        history.extend(outcome.event_documents)
        kinds = ", ".join(e["kind"] for e in outcome.event_documents)
        print(f"  ✔ {step}: {kinds}")
    else:
        print(f"  ✘ {step}: REJECTED {outcome.error.code.value}")
        print(f"      {outcome.error.explanation}")
    tick()
    return outcome


def contract(goal: str, capability: str, deps: list[str]) -> dict[str, Any]:
    return {
        "contractVersion": 1,
        "goal": goal,
        "requiredDeliverables": [
            {"deliverableId": "doc", "description": goal, "mediaType": "text/markdown",
             "schema": "urn:mwp-local:schema:markdown"}
        ],
        "acceptanceCriteria": [
            {"criterionId": "complete", "description": "The deliverable is complete",
             "evidenceRequired": ["deterministic_test"]}
        ],
        "inputArtifacts": [],
        "dependencyWorkItemIds": deps,
        "allowedResources": [],
        "requiredCapabilities": [{"id": capability, "version": "1.0.0"}],
        "deadline": "2026-07-20T00:00:00Z",
        "requestedUrgency": "normal",
        "businessImpact": "Part of the walkthrough",
        "retryPolicy": {"maxAttempts": 2, "backoff": "fixed", "maxDelay": "PT1M",
                        "retryableFailures": ["TRANSIENT"]},
        "budget": {"currency": "EUR", "financialLimit": 20, "toolCallLimit": 20},
        "sideEffectRisk": "none",
        "executionApproval": "not_required",
    }


def main(directory: Path) -> int:
    print(f"Sandbox directory: {directory}")
    log = init_directory(directory, seed=42, now=now())
    org = log.org
    owner, coordinator = Client(log, org.get("mission-owner")), Client(log, org.get("coordinator"))
    workers = {name: Client(log, org.get(name)) for name in ("worker-1", "worker-2", "reviewer")}
    state = log.state

    def lease(wid: str) -> dict[str, Any]:
        item = state.work_items[wid]
        return {"workItemId": wid, "ownershipEpoch": item.ownership_epoch,
                "leaseId": item.execution_lease_id}

    def progress(phase: str) -> dict[str, Any]:
        return {"currentPhase": phase, "completedMilestones": [], "nextCheckpoint": "done",
                "blockers": [], "updatedCompletionEstimate": later(600), "evidenceIds": []}

    blobs = BlobStore(directory / "blobs")

    def deliver(worker: Client, wid: str, text: bytes) -> None:
        digest = blobs.put(text).sha256  # content lives beside the log, addressed by its hash
        agent = state.agents[worker.member.id]
        manifest = org.sign("artifact", worker.member, {
            "artifactId": f"urn:mwp-local:artifact:{digest[7:23]}", "contentHash": digest,
            "uri": f"file:///blobs/{digest[7:]}", "sizeBytes": len(text),
            "mediaType": "text/markdown", "schemaUri": "urn:mwp-local:schema:markdown",
            "producer": {"agentId": worker.member.id, "agentCardVersion": agent.card_version,
                         "capabilities": [{"id": c, "version": v} for c, v in agent.capabilities]},
            "missionId": MISSION, "groupId": GROUP, "workItemId": wid,
            "sourceArtifactHashes": list(state.artifact_ids)[:1], "toolVersions": [],
            "modelVersions": [], "classification": "internal", "createdAt": now().text,
        })
        show(f"{worker.member.id.rsplit(':', 1)[-1]} publishes an Artifact",
             worker.send("artifact.publish", {**lease(wid), "artifact": manifest}, now=now(), group=GROUP))
        evidence = org.sign("evidence", workers["reviewer"].member, {
            "evidenceId": f"urn:mwp-local:evidence:{digest[7:23]}", "missionId": MISSION,
            "groupId": GROUP, "workItemId": wid, "type": "deterministic_test",
            "subject": {"type": "artifact", "id": digest}, "criterionIds": ["complete"],
            "method": "checked every section is present", "result": "passed",
            "artifactHashes": [digest], "generatedBy": workers["reviewer"].member.actor,
            "createdAt": now().text,
        })
        show("…and submits it with Evidence for every acceptance criterion",
             worker.send("work.submit", {**lease(wid), "artifactHashes": [digest],
                                         "evidence": [evidence]}, now=now(), group=GROUP))

    print("\n1. A human MissionOwner creates the Mission (one Group, a Coordinator lease)")
    show("mission.create", owner.send("mission.create", {
        "missionId": MISSION, "groupId": GROUP, "coordinatorAgentId": coordinator.member.id,
        "objective": "Add an export button to the report page",
        "definitionOfDone": [{"criterionId": "shipped", "description": "Button works",
                              "evidenceRequired": ["human_review"]}],
        "budget": {"currency": "EUR", "financialLimit": 100, "toolCallLimit": 100},
        "deadline": "2026-08-01T00:00:00Z"}, now=now(), group=GROUP))

    print("\n2. The Coordinator plans an evolving DAG: analysis, then implementation")
    show("authorize analysis", coordinator.send("work.authorize", {"workItemId": ANALYSIS,
         "contract": contract("Write the requirements", "mwp.software.analyse", [])}, now=now(), group=GROUP))
    show("authorize implementation (depends on analysis)", coordinator.send("work.authorize", {
         "workItemId": IMPLEMENT, "contract": contract("Implement the button",
         "mwp.software.implement", [ANALYSIS])}, now=now(), group=GROUP))

    def package(wid: str) -> dict[str, Any]:
        """The signed Context Package a Worker joining the Group receives with its offer (§8)."""
        return build_context_package([e for e in history if e["groupId"] == GROUP],
            scope=PackageScope(mission_id=MISSION, group_id=GROUP, work_item_id=wid),
            generator=coordinator.member, generated_at=now().text)

    def reviewed(wid: str) -> dict[str, Any]:
        """work.accept_result's payload: the review's Evidence and its record (§13.2, in order:
        integrity, the signed test report the reviewer attached, evaluation, retention)."""
        return {"workItemId": wid, **review_submission(state.work_items[wid],
            manifests=state.item_manifests(wid), source=blobs, reviewer=coordinator.member,
            registry=state.registry, now=now().text, accept_submitted=True,
        ).accept_result_payload()}

    basis = {"authorizationEligible": True, "availabilityEstimate": later(60), "expectedCost": 3,
             "reliabilityEvidence": [], "policyRulesApplied": ["sequential-exclusive-offer"]}

    print("\n3. Offers, acceptance (a new Ownership Epoch), execution under an Execution Lease")
    show("offer analysis to worker-2", coordinator.send("work.offer", {"workItemId": ANALYSIS,
         "agentId": org.get("worker-2").id, "expiresAt": later(300), "selectionBasis": basis,
         "contextPackage": package(ANALYSIS)},
         now=now(), group=GROUP))
    w2 = workers["worker-2"]
    show("worker-2 accepts", w2.send("work.accept_offer", {"workItemId": ANALYSIS}, now=now(),
         group=GROUP, expected_revision=state.work_items[ANALYSIS].revision))
    show("worker-2 starts", w2.send("work.start", {"workItemId": ANALYSIS, "ownershipEpoch": 1},
         now=now(), group=GROUP))
    deliver(w2, ANALYSIS, b"# Requirements\n\nAn export button that downloads CSV.\n")
    show("the Coordinator accepts the reviewed result", coordinator.send("work.accept_result",
         reviewed(ANALYSIS), now=now(), group=GROUP))

    print("\n4. Implementation: a checkpoint, then a delayed Command with the old Lease ID")
    show("offer implementation to worker-1", coordinator.send("work.offer", {"workItemId": IMPLEMENT,
         "agentId": org.get("worker-1").id, "expiresAt": later(300), "selectionBasis": basis,
         "contextPackage": package(IMPLEMENT)},
         now=now(), group=GROUP))
    w1 = workers["worker-1"]
    show("worker-1 accepts", w1.send("work.accept_offer", {"workItemId": IMPLEMENT}, now=now(),
         group=GROUP, expected_revision=state.work_items[IMPLEMENT].revision))
    show("worker-1 starts", w1.send("work.start", {"workItemId": IMPLEMENT, "ownershipEpoch": 1},
         now=now(), group=GROUP))
    old = lease(IMPLEMENT)
    show("worker-1 checkpoints (releases its lease)", w1.send("work.checkpoint", {**old,
         "checkpoint": {"progress": progress("half done")}}, now=now(), group=GROUP))
    show("worker-1 starts again (a new Lease ID)", w1.send("work.start", {"workItemId": IMPLEMENT,
         "ownershipEpoch": 1}, now=now(), group=GROUP))
    show("a delayed renewal citing the OLD lease", w1.send(
         "ext.missionweaveprotocol.core.work_execution_lease_renew", old, now=now(), group=GROUP))
    show("the renewal citing the current lease", w1.send(
         "ext.missionweaveprotocol.core.work_execution_lease_renew", {**lease(IMPLEMENT),
         "progress": progress("almost done")}, now=now(), group=GROUP))
    show("worker-1 records usage (charged to the item and the Mission)", w1.send(
         "ext.missionweaveprotocol.core.resource_usage_record", {**lease(IMPLEMENT),
         "delta": {"toolCalls": 4, "financial": 1.5}}, now=now(), group=GROUP))
    deliver(w1, IMPLEMENT, b"<button>Export CSV</button>\n")
    show("the Coordinator accepts the reviewed result", coordinator.send("work.accept_result",
         reviewed(IMPLEMENT), now=now(), group=GROUP))

    print("\n5. Submission for approval, and the human's signed Approval")
    artifacts = sorted(state.work_items[IMPLEMENT].submitted_artifacts)
    show("submit for approval", coordinator.send("mission.submit_for_approval",
         {"artifactHashes": artifacts}, now=now(), group=GROUP))
    mission = state.missions[MISSION]
    approval = org.sign("approval", owner.member, {
        "approvalId": "urn:mwp-local:approval:walkthrough", "kind": "mission_final",
        "decision": "approved", "missionId": MISSION, "groupId": GROUP,
        "missionRevision": mission.submitted_revision, "artifactHashes": artifacts,
        "acceptancePolicyVersion": "1.0.0", "approver": owner.member.actor,
        "comments": "Looks good.", "conditions": [], "occurredAt": now().text})
    show("the MissionOwner approves", owner.send("mission.approve", {"approval": approval},
         now=now(), group=GROUP, expected_revision=mission.revision))

    print("\n6. The log is the truth: verify it, then ask it questions")
    report = verify_log(org, log.store, blobs=blobs)
    print(f"  verify-log: {'OK' if report.ok else report.problems} "
          f"({report.events} Events, {report.receipts} receipts)")
    for title, query in (
        ("WorkItem transitions", "SELECT sequence, work_item_id, from_state, to_state FROM "
         "work_item_transitions ORDER BY position"),
        ("Rejections", "SELECT code, kind, explanation FROM rejections"),
        ("Budget use", "SELECT scope_type, dimension, used_value, limit_value FROM budgets "
         "WHERE used_value > 0 ORDER BY scope_type, dimension"),
    ):
        table = sql(log.store, query)
        print(f"\n  {title}:")
        for row in table.to_pylist():
            print("    " + " | ".join(str(v)[:70] for v in row.values()))
    print(f"\nExplore it yourself:  mwp-local sql {directory} \"SELECT kind, count(*) FROM events GROUP BY kind\"")
    log.store.close()
    return 0 if report.ok and str(state.missions[MISSION].state) == "approved" else 1


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="mwp-demo-")) / "sandbox"
    sys.exit(main(target))
