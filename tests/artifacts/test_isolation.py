"""Mission isolation (MWP-WRK-028): another Mission's Principals cannot read a Group's content or
build context from it; forwarding needs permission and leaves Events in both Groups; reusable
knowledge is an Organization-approved, classified, provenance-bearing Artifact; the Scheduler
sees scheduling metadata only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mwp_local.artifacts.context_packages import (
    PackageScope,
    build_context_package,
    fetch_cited_events,
)
from mwp_local.artifacts.manifests import read_artifact
from mwp_local.artifacts.review import review_submission
from mwp_local.authority.handlers.knowledge import FORWARD, PUBLISH
from mwp_local.authority.isolation import (
    AccessBasis,
    artifact_access,
    check_group_artifacts,
    scheduling_metadata,
)
from mwp_local.authority.reducers.knowledge import FORWARDED, PUBLISHED, RECEIVED
from mwp_local.protocol.errors import ProtocolError

from .scene import GROUP, GROUP_B, MISSION, MISSION_B, Scene

WA = "urn:mwp-local:work:alpha-secret"
WB = "urn:mwp-local:work:beta-task"
SECRET = b"alpha's confidential findings"


class NoBlobs:
    """Fails the test if anything reads content."""

    def ref(self, *_: Any, **__: Any) -> Any:
        raise AssertionError("the gate let a read through")

    get = verify = ref


def _two_missions(scene: Scene, classification: str = "internal") -> dict[str, Any]:
    scene.to_active(WA)
    manifest = scene.publish(WA, SECRET, classification=classification)
    scene.second_mission()
    scene.to_active(WB, agent="worker-b", group=GROUP_B)
    return manifest


def _forbidden(scene: Scene, who: str, artifact_hash: str) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        read_artifact(scene.w.state, NoBlobs(), scene.id(who), artifact_hash)  # type: ignore[arg-type]
    assert caught.value.code.value == "AUTH_FORBIDDEN"
    return caught.value


@pytest.mark.req("MWP-WRK-028")
def test_another_missions_principals_cannot_read_the_content(scene: Scene) -> None:
    manifest = _two_missions(scene)
    h = manifest["contentHash"]
    error = _forbidden(scene, "worker-b", h)
    assert GROUP not in error.explanation and MISSION not in error.explanation
    _forbidden(scene, "reviewer", h)  # beta's Coordinator
    assert read_artifact(scene.w.state, scene.blobs, scene.id("worker-a"), h) == SECRET
    assert read_artifact(scene.w.state, scene.blobs, scene.id("coordinator"), h) == SECRET
    unknown = _forbidden(scene, "worker-b", "sha256:" + "6" * 64)
    assert unknown.explanation.replace("6" * 64, h[7:]) == error.explanation


@pytest.mark.req("MWP-WRK-028")
def test_a_work_scoped_worker_reads_only_what_its_work_item_covers(scene: Scene) -> None:
    manifest = _two_missions(scene)
    scene.to_active("urn:mwp-local:work:alpha-other", agent="worker-b")
    _forbidden(scene, "worker-b", manifest["contentHash"])


@pytest.mark.req("MWP-WRK-028")
def test_another_missions_events_never_enter_a_context_package(logged: Scene) -> None:
    _two_missions(logged)
    alpha = [e for e in logged.w.events if e.get("groupId") == GROUP]
    beta = [e for e in logged.w.events if e.get("groupId") == GROUP_B]
    with pytest.raises(ProtocolError) as caught:
        build_context_package(
            [*beta, alpha[0]],
            scope=PackageScope(mission_id=MISSION_B, group_id=GROUP_B),
            generator=logged.w.org.get("reviewer"),
            generated_at=logged.w.now().text,
        )
    assert caught.value.code.value == "AUTH_FORBIDDEN"
    package = build_context_package(
        beta,
        scope=PackageScope(mission_id=MISSION_B, group_id=GROUP_B),
        generator=logged.w.org.get("reviewer"),
        generated_at=logged.w.now().text,
    )
    assert package["artifactHashes"] == []
    alpha_package = build_context_package(
        alpha,
        scope=PackageScope(mission_id=MISSION, group_id=GROUP),
        generator=logged.w.org.get("coordinator"),
        generated_at=logged.w.now().text,
    )
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(logged.w.state, logged.w.log.store, alpha_package, logged.id("reviewer"))
    assert caught.value.code.value == "MEMBERSHIP_REQUIRED"


def _forward(h: str, **extra: Any) -> dict[str, Any]:
    return {
        "artifactHash": h,
        "targetGroupId": GROUP_B,
        "reason": "beta needs the findings",
        **extra,
    }


@pytest.mark.req("MWP-WRK-028")
@pytest.mark.parametrize("who", ["coordinator", "worker-a"])
def test_forwarding_without_permission_is_refused_and_changes_nothing(
    scene: Scene, who: str
) -> None:
    manifest = _two_missions(scene)
    h = manifest["contentHash"]
    rejected = scene.refuse("AUTH_FORBIDDEN", who, FORWARD, _forward(h))
    assert "MissionOwner" in rejected.error.explanation
    _forbidden(scene, "reviewer", h)
    with pytest.raises(ProtocolError):
        check_group_artifacts(scene.w.state, GROUP_B, [h])


@pytest.mark.req("MWP-WRK-028")
def test_restricted_content_is_never_forwarded(scene: Scene) -> None:
    manifest = _two_missions(scene, classification="restricted")
    scene.refuse("AUTH_FORBIDDEN", "mission-owner", FORWARD, _forward(manifest["contentHash"]))


@pytest.mark.req("MWP-WRK-028")
def test_forwarding_to_an_unknown_group_is_refused(scene: Scene) -> None:
    manifest = _two_missions(scene)
    scene.refuse(
        "GROUP_NOT_FOUND",
        "mission-owner",
        FORWARD,
        _forward(manifest["contentHash"], targetGroupId="urn:missionweaveprotocol:group:nowhere"),
    )


@pytest.mark.req("MWP-WRK-028")
def test_permitted_forwarding_leaves_an_auditable_event_in_both_groups(logged: Scene) -> None:
    manifest = _two_missions(logged)
    h = manifest["contentHash"]
    accepted = logged.w.ok("mission-owner", FORWARD, _forward(h))
    forwarded, received = accepted.event_documents
    assert (forwarded["kind"], forwarded["groupId"]) == (FORWARDED, GROUP)
    assert forwarded["payload"]["permission"] == {
        "basis": "mission_owner",
        "grantedBy": logged.w.org.get("mission-owner").actor,
    }
    assert (received["kind"], received["groupId"]) == (RECEIVED, GROUP_B)
    assert received["cause"] == {"type": "event", "id": forwarded["eventId"]}
    assert received["payload"]["provenance"]["workItemId"] == WA
    access = artifact_access(logged.w.state, logged.id("reviewer"), h)
    assert access.basis is AccessBasis.FORWARDED and access.grant_event_id == forwarded["eventId"]
    assert read_artifact(logged.w.state, logged.blobs, logged.id("reviewer"), h) == SECRET
    check_group_artifacts(logged.w.state, GROUP_B, [h])
    _forbidden(logged, "worker-b", h)  # work-scoped: not an input of its WorkItem
    logged.refuse("INVALID_COMMAND", "mission-owner", FORWARD, _forward(h))


@pytest.mark.req("MWP-WRK-028")
def test_reusable_knowledge_is_approved_classified_and_provenance_bearing(scene: Scene) -> None:
    manifest = _two_missions(scene)
    h = manifest["contentHash"]
    publish = {"artifactHash": h, "classification": "internal", "reason": "reusable analysis"}
    refused = scene.refuse("INVALID_STATE_TRANSITION", "control-plane", PUBLISH, publish)
    assert "reviewed" in refused.error.explanation
    scene.submit(WA)
    reviewed = review_submission(
        scene.item(WA),
        manifests=scene.w.state.item_manifests(WA),
        source=scene.blobs,
        reviewer=scene.w.org.get("coordinator"),
        registry=scene.w.state.registry,
        now=scene.w.now().text,
        accept_submitted=True,
    )
    scene.w.ok("coordinator", "work.accept_result", reviewed.accept_result_payload())
    _forbidden(scene, "worker-b", h)
    scene.refuse("AUTH_FORBIDDEN", "mission-owner", PUBLISH, publish)
    scene.refuse(
        "INVALID_COMMAND", "control-plane", PUBLISH, {**publish, "classification": "public"}
    )
    accepted = scene.w.ok("control-plane", PUBLISH, publish)
    (event,) = accepted.event_documents
    assert event["kind"] == PUBLISHED and event["payload"]["classification"] == "internal"
    assert event["payload"]["approvedBy"] == scene.w.org.get("control-plane").actor
    assert event["payload"]["provenance"]["producer"]["agentId"] == scene.id("worker-a")
    access = artifact_access(scene.w.state, scene.id("worker-b"), h)
    assert access.basis is AccessBasis.ORGANIZATION_KNOWLEDGE
    assert read_artifact(scene.w.state, scene.blobs, scene.id("worker-b"), h) == SECRET


@pytest.mark.req("MWP-WRK-028")
def test_confidential_content_does_not_become_organization_knowledge(scene: Scene) -> None:
    manifest = _two_missions(scene, classification="confidential")
    scene.submit(WA)
    reviewed = review_submission(
        scene.item(WA),
        manifests=scene.w.state.item_manifests(WA),
        source=scene.blobs,
        reviewer=scene.w.org.get("coordinator"),
        registry=scene.w.state.registry,
        now=scene.w.now().text,
        accept_submitted=True,
    )
    scene.w.ok("coordinator", "work.accept_result", reviewed.accept_result_payload())
    publish = {
        "artifactHash": manifest["contentHash"],
        "classification": "confidential",
        "reason": "try",
    }
    refused = scene.refuse("AUTH_FORBIDDEN", "control-plane", PUBLISH, publish)
    assert "declassified" in refused.error.explanation


@pytest.mark.req("MWP-WRK-028")
def test_the_scheduler_sees_scheduling_metadata_only(scene: Scene) -> None:
    scene.to_active(
        WA,
        goal="Migrate the payroll ledger of ACME",
        businessImpact="Avoids a regulatory fine for ACME",
        extensions={
            "urn:mwp-local:extension:scheduling": {
                "version": "1.0.0",
                "critical": False,
                "data": {"impactRank": 7},
            }
        },
    )
    item = scene.item(WA)
    meta = scheduling_metadata(item)
    text = json.dumps(meta.to_json())
    assert meta.impact_rank == 7 and meta.group_id == GROUP and meta.work_item_id == WA
    assert meta.state == "active" and meta.urgency == "normal" and meta.approval_gate == "none"
    for secret in (
        "payroll",
        "ACME",
        "regulatory",
        "Tests pass",
        "The patch",
        item.conversation_id,
    ):
        assert secret not in text
    assert set(meta.to_json()) <= {
        "group_id",
        "work_item_id",
        "state",
        "urgency",
        "deadline",
        "impact_rank",
        "risk_class",
        "approval_gate",
        "attempts",
        "max_attempts",
        "estimated_start",
        "estimated_completion",
        "estimate_confidence",
        "wall_clock_budget_seconds",
        "compute_budget_seconds",
    }


@pytest.mark.req("MWP-WRK-028")
def test_without_a_rank_the_impact_follows_urgency(scene: Scene) -> None:
    scene.to_active(WA, requestedUrgency="critical")
    assert scheduling_metadata(scene.item(WA)).impact_rank == 3
