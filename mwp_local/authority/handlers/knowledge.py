"""Reusable knowledge and cross-Group forwarding of Artifacts (§13.3, MWP-WRK-028).

Group content stays in its Mission by default. Two Commands of the sandbox's own Extension
Profile (``protocol.profiles.SANDBOX_PROFILE``: the protocol names no knowledge API) widen that,
each after a permission check and each leaving auditable Events:

* ``ext.mwp-local.sandbox.knowledge_publish``: an Organization service approves a reviewed
  (``verified``) Artifact of this Group as reusable Organization knowledge. The classification
  is the one the producer signed into the manifest and must be ``public`` or ``internal``;
  confidential content becomes knowledge only as a derived, declassified Artifact. The Event
  carries the approval and the Artifact's provenance.
* ``ext.mwp-local.sandbox.knowledge_forward``: the source Mission's MissionOwner (or an
  Organization service, as policy) discloses one Artifact of this Group to another Group. A
  Coordinator or Worker may ask for it, but cannot do it. ``restricted`` content never leaves its
  Group. The source Group records ``…knowledge_forwarded`` (the permission) and the target Group
  records ``…knowledge_received`` (caused by that Event), so both logs show the disclosure.

Only references and provenance move; content stays in the blob store, and readers go through
``mwp_local.authority.isolation``. Every refusal changes nothing.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import Any

from ...protocol.documents.kinds import ExtensionCommandKind as XC
from ...protocol.documents.mission import GroupState
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.tables import GroupTransition, WorkItemState
from ..command import CommandView, Draft
from ..context import Context, forbidden, invalid, payload_field
from ..reducers.knowledge import FORWARDED, PUBLISHED, RECEIVED, forward_key, knowledge_key
from ..registry import command

PUBLISH = XC.KNOWLEDGE_PUBLISH
FORWARD = XC.KNOWLEDGE_FORWARD

#: Classifications that may become Organization-wide knowledge.
PUBLISHABLE = frozenset({"public", "internal"})
#: Classifications that may be forwarded to another Group with permission.
FORWARDABLE = frozenset({"public", "internal", "confidential"})

_RULE_KNOWLEDGE = (
    "§13.3 reusable knowledge is published explicitly as an Organization-approved, classified, "
    "provenance-bearing Artifact"
)
_RULE_FORWARD = "§13.3 cross-Group forwarding requires permission checks and an auditable Event"


def _artifact_of_group(ctx: Context, cmd: CommandView) -> dict[str, Any]:
    artifact_hash = payload_field(cmd, "artifactHash")
    manifest = ctx.state.manifest_of(artifact_hash, group_id=cmd.group_id)
    if manifest is None:
        raise invalid(f"No Artifact {artifact_hash} was published in this Group.")
    return manifest


def provenance(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """What an Event says about where an Artifact came from (never its content)."""
    return {
        "artifactId": manifest["artifactId"],
        "producer": {
            "agentId": manifest["producer"]["agentId"],
            "agentCardVersion": manifest["producer"]["agentCardVersion"],
        },
        "missionId": manifest["missionId"],
        "groupId": manifest["groupId"],
        "workItemId": manifest["workItemId"],
        "sourceArtifactHashes": list(manifest["sourceArtifactHashes"]),
        "classification": manifest["classification"],
        "createdAt": manifest["createdAt"],
    }


@command(PUBLISH, actors=("service",))
def publish(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """An Organization service approves a reviewed Artifact as reusable knowledge."""
    manifest = _artifact_of_group(ctx, cmd)
    artifact_hash = manifest["contentHash"]
    item = ctx.state.work_items[manifest["workItemId"]]
    if item.state is not WorkItemState.VERIFIED:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"Only a reviewed result becomes reusable knowledge: WorkItem {item.work_item_id} "
            f"that produced {artifact_hash} is {item.state}, not verified.",
            rule=_RULE_KNOWLEDGE,
        )
    classification = payload_field(cmd, "classification")
    if classification != manifest["classification"]:
        raise invalid(
            f"The producer classified {artifact_hash} as {manifest['classification']} in its "
            f"signed manifest; a publication cannot reclassify it as {classification}. Publish "
            "a derived Artifact with its own classification instead.",
            rule=_RULE_KNOWLEDGE,
        )
    if classification not in PUBLISHABLE:
        raise forbidden(
            f"{classification.capitalize()} content is not reusable Organization knowledge; "
            "publish a derived, declassified Artifact (public or internal) instead.",
            rule=_RULE_KNOWLEDGE,
        )
    if knowledge_key(artifact_hash) in ctx.state.meta:
        raise invalid(f"{artifact_hash} is already published as Organization knowledge.")
    yield Draft(
        kind=PUBLISHED,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "artifactHash": artifact_hash,
            "classification": classification,
            "approvedBy": cmd.actor,
            "reason": payload_field(cmd, "reason"),
            "provenance": provenance(manifest),
        },
    )


@command(FORWARD, actors=("human", "agent", "service"))
def forward(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The source MissionOwner (or Organization policy) discloses an Artifact to another Group."""
    manifest = _artifact_of_group(ctx, cmd)
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_type == "service":
        basis = "organization_policy"
    elif cmd.actor_id == mission.owner_id:
        basis = "mission_owner"
    else:
        raise forbidden(
            f"{cmd.actor_id} may not disclose this Mission's content to another Group: "
            "forwarding needs the source MissionOwner or Organization policy (a Coordinator or "
            "Worker may ask them).",
            rule=_RULE_FORWARD,
        )
    target_id = payload_field(cmd, "targetGroupId")
    target = ctx.group(target_id)
    if target_id == cmd.group_id:
        raise invalid("The Artifact already belongs to this Group; name another Group.")
    # The target Group records knowledge_received: the Group table's row for recording.
    ctx.tables.group.lookup(
        GroupState(target.state), GroupTransition.RECORD_EVENT, subject=target_id
    )
    artifact_hash = manifest["contentHash"]
    classification = manifest["classification"]
    if classification not in FORWARDABLE:
        raise forbidden(
            f"{artifact_hash} is classified {classification}: it never leaves its Group.",
            rule=_RULE_FORWARD,
        )
    if forward_key(target_id, artifact_hash) in ctx.state.meta:
        raise invalid(f"{artifact_hash} was already forwarded to {target_id}.")
    permission = {"basis": basis, "grantedBy": cmd.actor}
    reason = payload_field(cmd, "reason")
    forwarded = yield Draft(
        kind=FORWARDED,
        group_id=cmd.group_id,
        payload={
            "missionId": mission.mission_id,
            "artifactHash": artifact_hash,
            "artifactId": manifest["artifactId"],
            "classification": classification,
            "targetGroupId": target_id,
            "targetMissionId": target.mission_id,
            "permission": permission,
            "reason": reason,
        },
    )
    yield Draft(
        kind=RECEIVED,
        group_id=target_id,
        cause=("event", forwarded["eventId"]),
        payload={
            "missionId": target.mission_id,
            "artifactHash": artifact_hash,
            "sourceGroupId": cmd.group_id,
            "forwardedEventId": forwarded["eventId"],
            "permission": permission,
            "reason": reason,
            "provenance": provenance(manifest),
        },
    )
