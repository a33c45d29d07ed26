"""The documents a Worker writes: structured progress (§11.4, MWP-WRK-016), signed Artifact
manifests (§13.1), signed Evidence (§13.2), its Presence Record (§6.2, MWP-WRK-011), and its
replies to an offer in the WorkItem Conversation (a question or a structured decline).

Progress is structured around the current phase, completed milestones, the next checkpoint,
blockers, a revised completion estimate and Evidence references. It never carries a
percentage: milestones are named, and the estimate is an instant, not a fraction.

Pure code: the View's signer signs; nothing here reads a clock or draws randomness.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ...authority.model import WorkItemRecord
from ...protocol.timestamps import format_utc
from ..base import Intent, View
from ..naming import short
from .lifecycle import SlotState
from .slots import Execution


def progress(
    slot: Execution,
    phase: str,
    now_us: int,
    *,
    blockers: list[str] | None = None,
    checkpoint: bool = False,
) -> dict[str, Any]:
    """A structured progress report of the work in ``slot`` (the six members of §11.4)."""
    done = slot.checkpoints_done + (1 if checkpoint and not blockers else 0)
    milestones = ["started"] + [f"checkpoint {n}" for n in range(1, done + 1)]
    if slot.state in (SlotState.PRODUCING, SlotState.PUBLISHING):
        milestones.append("deliverable produced")
    if slot.published:
        milestones.append("deliverable published")
    remaining = max(0, slot.finish_us - now_us)
    if blockers:
        upcoming = "resume once the blocker is resolved"
    elif slot.checkpoint_at_us is not None and slot.checkpoint_at_us > now_us:
        upcoming = f"checkpoint {done + 1}"
    else:
        upcoming = "deliverable published"
    return {
        "currentPhase": phase,
        "completedMilestones": milestones,
        "nextCheckpoint": upcoming,
        "blockers": list(blockers or []),
        "updatedCompletionEstimate": format_utc(now_us + remaining),
        "evidenceIds": [],
    }


def manifest(
    view: View,
    item: WorkItemRecord,
    content: bytes,
    capabilities: dict[str, str],
    now_us: int,
    media_type: str = "text/markdown",
    schema: str | None = None,
) -> dict[str, Any]:
    """The signed Artifact manifest of a deliverable (every field of §13.1).

    Its ID derives from the content; when the same bytes already back another WorkItem's
    Artifact, from the content and this WorkItem (one blob, two manifests: §13.1 names content
    by its hash, an Artifact ID names a manifest)."""
    digest = "sha256:" + hashlib.sha256(content).hexdigest()
    artifact_id = f"urn:mwp-local:artifact:{digest[7:39]}"
    if view.state.has_content(digest) or artifact_id in view.state.artifacts:
        salted = hashlib.sha256(f"{item.work_item_id}|{digest}".encode()).hexdigest()
        artifact_id = f"urn:mwp-local:artifact:{salted[:32]}"
    agent = view.state.agents[view.me]
    sources = sorted(
        h for dep in item.dependencies for h in view.state.work_items[dep].submitted_artifacts
    )
    return view.sign(
        "artifact",
        {
            "artifactId": artifact_id,
            "contentHash": digest,
            "uri": f"mwp-local://blobs/{digest[7:]}",
            "sizeBytes": len(content),
            "mediaType": media_type,
            "schemaUri": schema or item.contract["requiredDeliverables"][0]["schema"],
            "producer": {
                "agentId": view.me,
                "agentCardVersion": agent.card_version,
                "capabilities": [{"id": c, "version": v} for c, v in sorted(capabilities.items())],
            },
            "missionId": item.mission_id,
            "groupId": item.group_id,
            "workItemId": item.work_item_id,
            "sourceArtifactHashes": sources,
            "toolVersions": [{"name": "mwp-local-simulator", "version": "0.1.0"}],
            "modelVersions": [],
            "classification": "internal",
            "createdAt": format_utc(now_us),
        },
    )


def evidence(
    view: View,
    item: WorkItemRecord,
    slot: Execution,
    now_us: int,
    *,
    failed: bool = False,
    details: dict[str, Any] | None = None,
    criteria: list[str] | None = None,
    claim: Any = None,
    number: int = 0,
) -> dict[str, Any]:
    """Signed Evidence: the passing checks of a submission (for ``criteria``, default all the
    contract's), one a work function claimed (``claim``, a ``work.Evidence``; ``number``
    tells several apart), or the report of a failure."""
    subject: dict[str, str] = (
        {"type": "artifact", "id": slot.published[0]}
        if slot.published and not failed
        else {"type": "work_item", "id": item.work_item_id}
    )
    document: dict[str, Any] = {
        "evidenceId": f"urn:mwp-local:evidence:{short(item.work_item_id)}:"
        f"{slot.ownership_epoch}.{slot.attempt}.{'f' if failed else 'p'}",
        "missionId": item.mission_id,
        "groupId": item.group_id,
        "workItemId": item.work_item_id,
        "type": "failure_report" if failed else "deterministic_test",
        "subject": subject,
        "criterionIds": criteria or [c["criterionId"] for c in item.contract["acceptanceCriteria"]],
        "method": (
            "the Worker's report of a failed attempt"
            if failed
            else "simulated checks of the deliverable against its schema"
        ),
        "result": "failed" if failed else "passed",
        "artifactHashes": list(slot.published) if slot.published and not failed else [],
        "generatedBy": view.member.actor,
        "createdAt": format_utc(now_us),
    }
    if claim is not None:
        document["evidenceId"] += f"{number}"
        document.update(
            type=claim.type,
            criterionIds=list(dict.fromkeys(claim.criteria)),
            method=claim.method,
            result=claim.result,
        )
        details = dict(claim.details) if claim.details else None
    if details:
        document["details"] = details
    return view.sign("evidence", document)


def presence_record(
    view: View,
    now_us: int,
    *,
    max_slots: int,
    active: int,
    queued: int,
    capabilities: dict[str, str],
    unavailable: frozenset[str],
) -> dict[str, Any]:
    """A Presence Record: current capacity and capability availability, nothing of any Group."""
    agent = view.state.agents[view.me]
    return {
        "agentId": view.me,
        "sessionEpoch": max(1, agent.session_epoch),
        "status": "busy" if active >= max_slots else "online",
        "capacity": {
            "maxSlots": max(1, max_slots),
            "activeSlots": active,
            "availableSlots": max(0, max_slots - active),
            "queuedItems": queued,
        },
        "capabilityAvailability": [
            {
                "capability": {"id": cap, "version": version},
                "status": "unavailable" if cap in unavailable else "available",
            }
            for cap, version in sorted(capabilities.items())
        ],
        "lastHeartbeat": format_utc(now_us),
        "expiresAt": format_utc(now_us + 60_000_000),
    }


def offer_reply(
    item: WorkItemRecord,
    offer_id: str,
    *,
    why: str,
    text: str,
    schema: str,
    data: dict[str, Any],
) -> Intent:
    """A message in the WorkItem Conversation answering offer ``offer_id``: plain text for
    people and a ``data_ref`` of ``schema`` for agents (a question or a decline)."""
    return Intent(
        kind="message.post",
        group=item.group_id,
        why=why,
        payload={
            "conversationId": item.conversation_id,
            "workItemId": item.work_item_id,
            "content": [
                {"type": "text", "text": text},
                {"type": "data_ref", "schema": schema, "data": data},
            ],
        },
        tag=offer_id,
    )
