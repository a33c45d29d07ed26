"""Signed Artifact manifests with every field of §13.1, published under the current Execution
Lease, content outside the log, and identity by content hash only (MWP-WRK-023, MWP-WRK-024)."""

from __future__ import annotations

import json

import pytest

from mwp_local.artifacts.manifests import Producer, build_manifest, fetch_artifact, verify_manifest
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.store.blobs import ArtifactIntegrityError

from ..authority.world import CAP
from ..official_schemas import problems
from .scene import Scene

SECTION_13_1 = {
    "contentHash",
    "mediaType",
    "schemaUri",
    "producer",
    "missionId",
    "groupId",
    "workItemId",
    "sourceArtifactHashes",
    "toolVersions",
    "modelVersions",
    "createdAt",
    "classification",
    "sizeBytes",
    "uri",
    "signature",
}
CONTENT = b"--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.mark.req("MWP-WRK-023")
def test_a_manifest_holds_every_section_13_1_field_is_official_and_signed_by_its_producer(
    scene: Scene,
) -> None:
    scene.to_active("urn:mwp-local:work:m1")
    manifest = scene.manifest("urn:mwp-local:work:m1", CONTENT)
    assert set(manifest) >= SECTION_13_1
    assert problems("artifact", manifest) == []
    assert manifest["producer"] == {
        "agentId": scene.id("worker-a"),
        "agentCardVersion": 1,
        "capabilities": [{"id": CAP[0], "version": CAP[1]}],
    }
    assert manifest["toolVersions"] and manifest["modelVersions"]
    verified = verify_manifest(manifest, scene.w.state.registry)
    assert verified.principal.id == scene.id("worker-a")


@pytest.mark.req("MWP-WRK-023")
def test_publication_citing_the_current_lease_keeps_content_out_of_the_log(
    logged: Scene,
) -> None:
    wid = "urn:mwp-local:work:m2"
    logged.to_active(wid)
    manifest = logged.publish(wid, CONTENT)
    assert logged.w.state.artifacts[manifest["artifactId"]] == manifest
    assert logged.w.state.manifests_of(manifest["contentHash"]) == [manifest]
    (event,) = [e for e in logged.w.events if e["kind"] == "artifact.published"]
    assert event["payload"]["leaseId"] == logged.item(wid).execution_lease_id
    stored = [r.document for r in logged.w.log.store.events()]
    assert not any(
        CONTENT.decode() in text or json.dumps(CONTENT.decode()) in text for text in stored
    )
    assert fetch_artifact(logged.blobs, manifest) == CONTENT


@pytest.mark.req("MWP-WRK-023")
def test_publication_with_an_old_lease_id_is_refused_and_changes_nothing(scene: Scene) -> None:
    wid = "urn:mwp-local:work:m3"
    scene.to_active(wid)
    old = scene.w.lease(wid)
    scene.w.ok(
        "worker-a",
        "work.checkpoint",
        {**old, "checkpoint": {"reason": "pause", "progress": scene.w.progress()}},
    )
    scene.w.ok(
        "worker-a", "work.start", {"workItemId": wid, "ownershipEpoch": old["ownershipEpoch"]}
    )
    manifest = scene.manifest(wid, CONTENT)
    scene.refuse(
        "WORK_LEASE_EXPIRED", "worker-a", "artifact.publish", {**old, "artifact": manifest}
    )


@pytest.mark.req("MWP-WRK-023")
def test_a_manifest_signed_by_someone_other_than_the_producer_is_refused(scene: Scene) -> None:
    wid = "urn:mwp-local:work:m4"
    scene.to_active(wid)
    manifest = scene.manifest(wid, CONTENT)
    forged = dict(manifest, signature=scene.manifest(wid, CONTENT, "worker-b")["signature"])
    scene.refuse(
        "AUTH_INVALID_SIGNATURE",
        "worker-a",
        "artifact.publish",
        {**scene.w.lease(wid), "artifact": forged},
    )


@pytest.mark.req("MWP-WRK-023")
def test_a_manifest_missing_a_field_is_not_built(scene: Scene) -> None:
    scene.to_active("urn:mwp-local:work:m5")
    ref = scene.blobs.put(CONTENT)
    with pytest.raises(ProtocolError) as caught:
        build_manifest(
            ref,
            producer=Producer(
                signer=scene.w.org.get("worker-a"), agent_card_version=1, capabilities=(CAP,)
            ),
            mission_id="urn:x:m",
            group_id="urn:x:g",
            work_item_id="urn:x:w",
            media_type="not a media type",
            schema_uri="urn:x:s",
            created_at=scene.w.now().text,
            uri=scene.blobs.uri(ref),
        )
    assert caught.value.code is ErrorCode.SCHEMA_VALIDATION_FAILED
    with pytest.raises(ProtocolError) as caught:
        scene.manifest("urn:mwp-local:work:m5", CONTENT, sources=[ref.sha256])
    assert caught.value.code is ErrorCode.INVALID_COMMAND


@pytest.mark.req("MWP-WRK-024")
def test_the_uri_is_never_identity_content_is_found_by_hash(scene: Scene) -> None:
    wid = "urn:mwp-local:work:m6"
    scene.to_active(wid)
    manifest = scene.manifest(wid, CONTENT)
    decoy = scene.blobs.put(b"something else")
    pointing_elsewhere = dict(manifest, uri=scene.blobs.uri(decoy))
    assert fetch_artifact(scene.blobs, pointing_elsewhere) == CONTENT
    assert fetch_artifact(scene.blobs, dict(manifest, uri="https://example.invalid/x")) == CONTENT


@pytest.mark.req("MWP-WRK-024")
def test_a_uri_pointing_at_real_content_does_not_rescue_a_missing_hash(scene: Scene) -> None:
    wid = "urn:mwp-local:work:m7"
    scene.to_active(wid)
    manifest = scene.manifest(wid, CONTENT)
    elsewhere = scene.blobs.put(b"the file the URI names")
    unknown = dict(manifest, contentHash="sha256:" + "3" * 64, uri=scene.blobs.uri(elsewhere))
    with pytest.raises(ArtifactIntegrityError) as caught:
        fetch_artifact(scene.blobs, unknown)
    assert manifest["artifactId"] in caught.value.explanation
    assert caught.value.reason == "blob-missing"


@pytest.mark.req("MWP-WRK-024")
def test_fetch_refuses_a_size_other_than_the_manifest_declares(scene: Scene) -> None:
    wid = "urn:mwp-local:work:m8"
    scene.to_active(wid)
    manifest = scene.manifest(wid, CONTENT)
    with pytest.raises(ArtifactIntegrityError) as caught:
        fetch_artifact(scene.blobs, dict(manifest, sizeBytes=len(CONTENT) + 1))
    assert caught.value.reason == "size-mismatch"
    assert manifest["artifactId"] in caught.value.explanation


@pytest.mark.req("MWP-WRK-023", "MWP-WRK-024")
def test_identical_bytes_from_two_work_items_are_two_manifests_over_one_blob(
    logged: Scene,
) -> None:
    first, second = "urn:mwp-local:work:same-1", "urn:mwp-local:work:same-2"
    logged.to_active(first)
    logged.to_active(second, agent="worker-b")
    a = logged.publish(first, CONTENT)
    b = logged.publish(second, CONTENT, agent="worker-b")
    assert a["contentHash"] == b["contentHash"] and a["artifactId"] != b["artifactId"]
    state = logged.w.state
    assert state.manifests_of(a["contentHash"]) == [a, b]
    assert state.manifest_of(a["contentHash"], work_item_id=second) == b
    assert len([r for r in logged.blobs.refs() if r.sha256 == a["contentHash"]]) == 1
    # each WorkItem submits its own manifest; the review reads that one
    logged.submit(first)
    logged.submit(second, agent="worker-b")
    assert state.item_manifests(second) == {b["contentHash"]: b}
    assert state.work_items[second].submitted_artifacts == (b["contentHash"],)


@pytest.mark.req("MWP-WRK-023")
def test_a_second_manifest_with_an_artifact_id_already_published_is_refused(
    logged: Scene,
) -> None:
    first, second = "urn:mwp-local:work:id-1", "urn:mwp-local:work:id-2"
    logged.to_active(first)
    logged.to_active(second)
    a = logged.publish(first, CONTENT)
    again = logged.manifest(second, b"other bytes", artifact_id=a["artifactId"])
    refused = logged.refuse(
        "INVALID_COMMAND",
        "worker-a",
        "artifact.publish",
        {**logged.w.lease(second), "artifact": again},
    )
    assert a["artifactId"] in refused.error.explanation
