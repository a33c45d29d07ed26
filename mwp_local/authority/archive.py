"""Group archival (§7.4, §15.2): the final state a Group Snapshot attests, its policy log, and
the checks the Authority runs on the snapshot an archival service presents.

An Organization archival service (one of the Organization's control services) archives a Group
whose Mission has ended by sending ``ext.missionweaveprotocol.core.group_archive`` with a Group
Snapshot it signed (``group-snapshot.schema.json``). The snapshot is final and linked to the
history it closes:

* ``throughSequence`` is the Group's last sequence and ``eventIds`` are the IDs of its Events
  1..n in order (the Authority keeps a running digest of them, ``GroupRecord.event_ids_digest``);
* ``stateHash`` is the ``sha256:`` of the RFC 8785 bytes of ``final_state``: the Mission with its
  decisions and Approval, every WorkItem document, and the Artifact references, as the
  Authority's state holds them;
* ``policyLog`` is ``policy_log``: the decisions an auditor needs (the Mission's outcome, its
  budget at the end, the archival itself), each entry linked to the Group and sequence it closes.

The Authority recomputes each from its state and refuses a snapshot that differs, so nothing is
archived on a stale or altered attestation. ``unsigned_snapshot`` builds the document an
archival service signs (the Event IDs come from the log the service reads). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..protocol.documents.kinds import EventKind
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.hashing import sha256_id
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.signing import profile_for, verify_parsed
from .command import CommandView
from .context import Context, Identity, invalid, payload_field
from .model import GroupRecord, event_ids_digest
from .state import AuthorityState

SNAPSHOT_PROFILE = "group-snapshot"
_RULE = "§7.4 archival produces a signed final snapshot; §15.2 its policy-log linkage validates"


def final_state(state: AuthorityState, group_id: str) -> dict[str, Any]:
    """What the archive of ``group_id`` attests: the Mission (decisions and Approval), every
    WorkItem of the Group and the Artifact references, through the Group's last sequence."""
    group = state.groups[group_id]
    mission = state.missions[group.mission_id]
    items = sorted(wid for wid, item in state.work_items.items() if item.group_id == group_id)
    artifacts = sorted(
        (m["contentHash"], m["artifactId"], m["workItemId"])
        for m in state.artifacts.values()
        if m.get("groupId") == group_id
    )
    return {
        "groupId": group_id,
        "missionId": mission.mission_id,
        "throughSequence": group.last_sequence,
        "mission": {
            **mission.document,
            "state": str(mission.state),
            "revision": mission.revision,
        },
        "decisions": {
            "state": str(mission.state),
            "submittedRevision": mission.submitted_revision,
            "submittedArtifactHashes": list(mission.submitted_artifacts),
        },
        "approvals": [mission.approval] if mission.approval is not None else [],
        "workItems": [state.work_item_document(wid) for wid in items],
        "artifacts": [
            {"contentHash": h, "artifactId": a, "workItemId": w} for h, a, w in artifacts
        ],
    }


def policy_log(
    state: AuthorityState,
    group_id: str,
    *,
    organization_id: str,
    actor: dict[str, str],
    occurred_at: str,
) -> list[dict[str, Any]]:
    """The archive's policy log: the Mission's outcome, its budget at the end, the archival."""
    group = state.groups[group_id]
    mission = state.missions[group.mission_id]
    ledger = state.budgets.get(("mission", mission.mission_id))
    through = group.last_sequence

    def entry(label: str, decision: str, **details: Any) -> dict[str, Any]:
        return {
            "entryId": derived_uuid(
                organization_id, "archive-policy", group_id, str(through), label
            ),
            "decision": decision,
            "actor": dict(actor),
            "occurredAt": occurred_at,
            "details": {"groupId": group_id, "throughSequence": through, **details},
        }

    entries = [
        entry(
            "outcome",
            f"Mission {mission.mission_id} ended {mission.state} at revision {mission.revision}.",
            missionId=mission.mission_id,
            state=str(mission.state),
            revision=mission.revision,
            approvalId=(mission.approval or {}).get("approvalId"),
        )
    ]
    if ledger is not None:
        entries.append(
            entry(
                "budget",
                "The Mission's budget at archival: what it used of each hard limit.",
                limits=dict(ledger.limits),
                used=dict(ledger.used),
            )
        )
    entries.append(
        entry(
            "archive",
            f"Group {group_id} archived through sequence {through}; it accepts no more "
            "Commands, and the Group log keeps its history.",
        )
    )
    return entries


def unsigned_snapshot(
    state: AuthorityState,
    group_id: str,
    event_ids: Sequence[str],
    *,
    organization_id: str,
    created_by: dict[str, str],
    created_at: str,
) -> dict[str, Any]:
    """The final Group Snapshot an archival service signs (``event_ids``: the Group's Event IDs
    in sequence order, read from its log)."""
    through = state.groups[group_id].last_sequence
    return {
        "snapshotId": derived_uuid(organization_id, "group-archive", group_id, str(through)),
        "groupId": group_id,
        "throughSequence": through,
        "eventIds": list(event_ids),
        "stateHash": sha256_id(canonicalize(final_state(state, group_id))),
        "policyLog": policy_log(
            state,
            group_id,
            organization_id=organization_id,
            actor=created_by,
            occurred_at=created_at,
        ),
        "createdBy": dict(created_by),
        "createdAt": created_at,
    }


def _stale(explanation: str, **details: Any) -> ProtocolError:
    return invalid(explanation + " Nothing was archived; sign a snapshot of the Group as it is.",
                   rule=_RULE, **details)  # fmt: skip


def checked_snapshot(ctx: Context, cmd: CommandView, group: GroupRecord) -> dict[str, Any]:
    """The Command's signed Group Snapshot, once ``check_snapshot`` passes; otherwise the
    section-19 error that refuses the archival."""
    snapshot = payload_field(cmd, "snapshot", dict)
    check_snapshot(ctx.state, ctx.identity, group, snapshot)
    return dict(snapshot)


def attested(event: Mapping[str, Any], state: AuthorityState, identity: Identity) -> None:
    """Refuse a ``group.snapshot.created`` Event (before it is folded) whose snapshot would not
    have archived the Group as ``state`` holds it (``check_snapshot``), or whose final state is
    not the Group's: what the archival Command was checked for, re-checked from the log alone
    (``Authority.admit``, so an imported archival gets it too)."""
    if event.get("kind") != EventKind.GROUP_SNAPSHOT_CREATED:
        return
    group = state.groups.get(event.get("groupId") or "")
    payload = event["payload"]
    if group is None:
        return  # the state tables refuse an Event of an unknown Group
    check_snapshot(state, identity, group, payload["snapshot"])
    if canonicalize(payload["finalState"]) != canonicalize(final_state(state, group.group_id)):
        raise _stale(
            "The Event's finalState is not the Group's final state (Mission, decisions, "
            "Approvals, WorkItems, Artifact references) as the log builds it."
        )


def check_snapshot(
    state: AuthorityState, identity: Identity, group: GroupRecord, snapshot: Any
) -> None:
    """Refuse a Group Snapshot unless it verifies, was created by an authorized archival
    service, and is final and linked to ``group``'s history as ``state`` holds it."""
    verified = verify_parsed(profile_for(SNAPSHOT_PROFILE), snapshot, state.registry)
    creator = verified.principal
    if creator.type != "service" or creator.id not in identity.control_services:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"The snapshot was signed by {creator.id}, which is not an archival service of this "
            "Organization; only such a service creates a Group Snapshot.",
            rule="§6.4 a Group Snapshot creator must be an authorized archival service",
        )
    if snapshot["groupId"] != group.group_id:
        raise _stale(
            f"The snapshot is of Group {snapshot['groupId']}, not of {group.group_id}.",
            snapshotGroupId=snapshot["groupId"],
        )
    through = snapshot["throughSequence"]
    if through != group.last_sequence:
        raise _stale(
            f"The snapshot runs through sequence {through}, but the Group's last Event is "
            f"sequence {group.last_sequence}: a final snapshot covers every Event.",
            throughSequence=through,
            lastSequence=group.last_sequence,
        )
    digest = ""
    for event_id in snapshot["eventIds"]:
        digest = event_ids_digest(digest, event_id)
    if len(snapshot["eventIds"]) != through or digest != group.event_ids_digest:
        raise _stale(
            f"The snapshot's eventIds are not the IDs of this Group's Events 1..{through} in "
            "order: it is not linked to the history it would close."
        )
    expected = sha256_id(canonicalize(final_state(state, group.group_id)))
    if snapshot["stateHash"] != expected:
        raise _stale(
            f"The snapshot's stateHash is {snapshot['stateHash']}, but the Group's final state "
            f"(Mission, decisions, Approvals, WorkItems, Artifact references) hashes to "
            f"{expected}.",
            stateHash=snapshot["stateHash"],
            expected=expected,
        )
    entries = policy_log(
        state,
        group.group_id,
        organization_id=identity.organization_id,
        actor=snapshot["createdBy"],
        occurred_at=snapshot["createdAt"],
    )
    if snapshot["policyLog"] != entries:
        raise _stale(
            "The snapshot's policyLog is not the Group's policy log (the Mission's outcome, "
            "its budget at the end, the archival): its linkage does not validate."
        )


__all__ = [
    "attested",
    "check_snapshot",
    "checked_snapshot",
    "final_state",
    "policy_log",
    "unsigned_snapshot",
]
