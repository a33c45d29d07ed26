"""Group archival (§7.4, §15.2): the Organization-owned
``ext.missionweaveprotocol.core.group_archive`` Command.

The row of the Group table decides who and when (an authorized archival service; the Mission
and its child Missions have ended; the Group is active); the handler checks the signed final
snapshot the Command carries (``authority.archive``), then appends ``group.snapshot.created``
(the snapshot and the final state it attests) and ``group.archived`` (the archived Group
document), which releases every lease still held in the Group. After it the Group table refuses
every Command in the Group with ``INVALID_STATE_TRANSITION``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.kinds import ExtensionCommandKind as XC
from ...protocol.tables import GroupState, LeaseTransition
from .. import archive, leases
from ..command import CommandView, Draft
from ..context import Context
from ..decide import decide, group_subject
from ..model import GroupRecord
from ..registry import command


@command(XC.GROUP_ARCHIVE, actors=("service",))
def archive_group(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Archive an ended Mission's Group with a signed final snapshot."""
    move = decide(ctx, cmd, ctx.tables.group, lambda: group_subject(ctx.group(cmd.group_id)))
    group = move.subject.record
    assert isinstance(group, GroupRecord)
    snapshot = archive.checked_snapshot(ctx, cmd, group)
    mission = ctx.state.missions[group.mission_id]
    yield Draft(
        kind=E.GROUP_SNAPSHOT_CREATED,
        group_id=group.group_id,
        payload={
            "groupId": group.group_id,
            "missionId": mission.mission_id,
            "snapshot": snapshot,
            "finalState": archive.final_state(ctx.state, group.group_id),
        },
    )
    held = sorted(
        (lease for lease in ctx.state.leases.values() if lease.group_id == group.group_id),
        key=lambda lease: lease.lease_id,
    )
    released = [
        leases.close(ctx, lease, LeaseTransition.RELEASE, "group_archived")
        for lease in held
        if lease.is_active
    ]
    archived: GroupState = move.target
    yield Draft(
        kind=move.event,
        group_id=group.group_id,
        payload={
            "groupId": group.group_id,
            "missionId": mission.mission_id,
            "group": {
                "groupId": group.group_id,
                "missionId": mission.mission_id,
                "state": str(archived),
                "mainConversationId": group.main_conversation_id,
                "createdAt": mission.document["createdAt"],
                "archivedAt": ctx.now.text,
                "archiveSnapshotId": snapshot["snapshotId"],
            },
            "leases": leases.documents(*released),
        },
    )
