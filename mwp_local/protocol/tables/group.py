"""The Group lifecycle of §7.4 and §15.2, as data: active from its Mission's creation until an
Organization archival service archives it, then archived for good.

Two rows. ``record_event`` is what every Group-scoped Command and every Event appended to the
Group needs: an active Group (the Authority looks it up before any Group-scoped Command, the
knowledge handler for a Group receiving an Artifact, and replay for every Event recorded in a
Group). ``ext.missionweaveprotocol.core.group_archive`` archives it: only an authorized archival
service may send it (``archival_service``), only once the Mission and its child Missions have
ended (``mission_finished``), and the handler checks the signed Group Snapshot it carries; the
Command appends ``group.snapshot.created`` and then ``group.archived``, which records the row.
``archived`` is terminal, so an archived Group accepts no Command and records no Event: the
lookup refuses it with ``INVALID_STATE_TRANSITION``. A Group's creation is the Mission table's
(``mission.created`` carries the Group document).
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.kinds import EventKind as E
from ..documents.kinds import ExtensionCommandKind as XC
from ..documents.mission import GroupState
from .core import Row, TransitionTable


class GroupTransition(StrEnum):
    """What can happen to a Group."""

    RECORD_EVENT = "record_event"
    ARCHIVE = XC.GROUP_ARCHIVE.value


G = GroupState
GT = GroupTransition

GROUP_TABLE: TransitionTable[GroupState, GroupTransition] = TransitionTable(
    "Group",
    (
        Row(
            transition=GT.RECORD_EVENT,
            sources=frozenset({G.ACTIVE}),
            targets=(G.ACTIVE,),
            note="Every Group-scoped Command, and every Event recorded in the Group, needs an "
            "active Group (an active Group retains its complete history, §7.4)",
        ),
        Row(
            transition=GT.ARCHIVE,
            sources=frozenset({G.ACTIVE}),
            targets=(G.ARCHIVED,),
            events=(E.GROUP_ARCHIVED,),
            fences=("archival_service",),
            guards=("mission_finished",),
            note="An authorized archival service, after the Mission ended, with a signed final "
            "snapshot (group.snapshot.created first, §7.4, §15.2)",
        ),
    ),
    terminal=frozenset({G.ARCHIVED}),
)
