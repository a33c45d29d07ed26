"""A World with a blob store beside it, and the steps the Artifact tests repeat: run a WorkItem
to active, put content and publish its signed manifest, submit with Evidence, create a second
Mission with its own Coordinator and Worker."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mwp_local.artifacts.evidence import build_evidence
from mwp_local.artifacts.manifests import (
    ModelVersionRef,
    Producer,
    ToolVersionRef,
    build_manifest,
)
from mwp_local.authority import Accepted, Rejected
from mwp_local.store.blobs import BlobStore

from ..authority.world import CAP, GROUP, MISSION, World

GROUP_B = "urn:missionweaveprotocol:group:beta"
MISSION_B = "urn:missionweaveprotocol:mission:beta"
MEDIA = "text/x-diff"
SCHEMA = "urn:mwp-local:schema:patch"


class Scene:
    """One World (plain or logged) and the sandbox's blob directory."""

    def __init__(self, world: World, blob_dir: Path) -> None:
        self.w = world
        self.blobs = BlobStore(blob_dir, durable=False)
        world.bootstrap()
        world.create_mission()

    # ------------------------------------------------------------------ helpers

    def id(self, name: str) -> str:
        return self.w.org.get(name).id

    def item(self, wid: str) -> Any:
        return self.w.state.work_items[wid]

    def to_active(
        self, wid: str, agent: str = "worker-a", group: str = GROUP, **contract: Any
    ) -> None:
        w = self.w
        w.ok(
            self.coordinator_of(group),
            "work.authorize",
            {"workItemId": wid, "contract": w.contract(**contract)},
            group=group,
        )
        w.ok(
            self.coordinator_of(group),
            "work.offer",
            {
                "workItemId": wid,
                "agentId": self.id(agent),
                "expiresAt": w.at(300),
                "selectionBasis": w.basis(),
            },
            group=group,
        )
        item = self.item(wid)
        w.ok(
            agent,
            "work.accept_offer",
            {"workItemId": wid},
            group=group,
            expected_revision=item.revision,
        )
        w.ok(
            agent,
            "work.start",
            {"workItemId": wid, "ownershipEpoch": self.item(wid).ownership_epoch},
            group=group,
        )

    def coordinator_of(self, group: str) -> str:
        mission = self.w.state.missions[self.w.state.groups[group].mission_id]
        assert mission.coordinator_agent_id is not None
        return mission.coordinator_agent_id.rsplit(":", 1)[-1]

    def manifest(
        self,
        wid: str,
        content: bytes,
        agent: str = "worker-a",
        *,
        sources: Sequence[str] = (),
        classification: str = "internal",
        media_type: str = MEDIA,
        schema: str = SCHEMA,
        artifact_id: str | None = None,
    ) -> dict[str, Any]:
        item = self.item(wid)
        ref = self.blobs.put(content)
        return build_manifest(
            ref,
            producer=Producer(
                signer=self.w.org.get(agent), agent_card_version=1, capabilities=(CAP,)
            ),
            mission_id=item.mission_id,
            group_id=item.group_id,
            work_item_id=wid,
            media_type=media_type,
            schema_uri=schema,
            created_at=self.w.now().text,
            uri=self.blobs.uri(ref),
            classification=classification,
            sources=sources,
            tools=(ToolVersionRef(name="ruff", version="0.6.0"),),
            models=(ModelVersionRef(provider="sandbox", model="scripted", version="1"),),
            artifact_id=artifact_id,
        )

    def publish(
        self, wid: str, content: bytes, agent: str = "worker-a", **kw: Any
    ) -> dict[str, Any]:
        manifest = self.manifest(wid, content, agent, **kw)
        self.w.ok(
            agent,
            "artifact.publish",
            {**self.w.lease(wid), "artifact": manifest},
            group=self.item(wid).group_id,
        )
        return manifest

    def evidence(
        self,
        wid: str,
        agent: str,
        criteria: Sequence[str],
        *,
        kind: str = "deterministic_test",
        result: str = "passed",
        details: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        item = self.item(wid)
        hashes = list(item.submitted_artifacts or item.artifact_hashes)
        return build_evidence(
            self.w.org.get(agent),
            mission_id=item.mission_id,
            group_id=item.group_id,
            work_item_id=wid,
            type=kind,
            subject=("work_item", wid),
            criteria=criteria,
            method=f"{kind} by {agent}",
            result=result,
            artifact_hashes=hashes,
            created_at=self.w.now().text,
            details=details,
        )

    def submit(self, wid: str, agent: str = "worker-a") -> None:
        item = self.item(wid)
        criteria = [c["criterionId"] for c in item.contract["acceptanceCriteria"]]
        self.w.ok(
            agent,
            "work.submit",
            {
                **self.w.lease(wid),
                "artifactHashes": list(item.artifact_hashes),
                "evidence": [self.evidence(wid, agent, criteria)],
            },
            group=item.group_id,
        )

    def second_mission(self, coordinator: str = "reviewer") -> None:
        """Mission beta with its own Coordinator (so no Principal of alpha is a member)."""
        w = self.w
        w.ok(
            "mission-owner",
            "mission.create",
            {
                "missionId": MISSION_B,
                "groupId": GROUP_B,
                "coordinatorAgentId": self.id(coordinator),
                "objective": "Another Mission",
                "definitionOfDone": [
                    {
                        "criterionId": "done",
                        "description": "Done",
                        "evidenceRequired": ["human_review"],
                    }
                ],
                "budget": {"currency": "EUR", "financialLimit": 100, "toolCallLimit": 50},
                "deadline": "2026-08-01T00:00:00Z",
            },
            group=GROUP_B,
        )

    def refuse(
        self, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
    ) -> Rejected:
        """``World.refuse`` that also proves ``meta`` and the Artifacts unchanged."""
        before = (copy.deepcopy(self.w.state.meta), copy.deepcopy(self.w.state.artifacts))
        rejected = self.w.refuse(code, who, kind, payload, **over)
        assert (self.w.state.meta, self.w.state.artifacts) == before
        return rejected

    def accepted(self, outcome: Any) -> Accepted:
        assert isinstance(outcome, Accepted), outcome
        return outcome


__all__ = ["GROUP", "GROUP_B", "MEDIA", "MISSION", "MISSION_B", "SCHEMA", "Scene"]
