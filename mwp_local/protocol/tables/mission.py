"""The Mission lifecycle of §7.1, as data.

``NONE`` is the pre-state before creation; ``approved``, ``cancelled`` and ``failed`` are
terminal (an approved Mission is never reopened: corrections are follow-up Missions). Each row
names the Command kind (or the cause) that drives it, the Event kinds that record it and the
Authority's guards (``mwp_local.authority.guards`` defines each name).
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.kinds import CommandKind as C
from ..documents.kinds import EventKind as E
from ..documents.mission import MissionState
from .core import Mark, Row, TransitionTable


class MissionTransition(StrEnum):
    """The Commands and causes of §7.1."""

    CREATE = C.MISSION_CREATE.value
    CREATE_FOLLOW_UP = C.MISSION_CREATE_FOLLOW_UP.value
    CREATE_CHILD = C.MISSION_CREATE_CHILD.value
    SUBMIT_FOR_APPROVAL = C.MISSION_SUBMIT_FOR_APPROVAL.value
    REQUEST_CHANGES = C.MISSION_REQUEST_CHANGES.value
    APPROVE = C.MISSION_APPROVE.value
    CANCEL = C.MISSION_CANCEL.value
    PARENT_CANCELLED = "parent_cancellation_propagation"
    TERMINATE = C.MISSION_TERMINATE.value
    CHILD_FAILURE_PROPAGATION = "child_failure_propagation"


M = MissionState
MT = MissionTransition
_NON_TERMINAL = frozenset({M.ACTIVE, M.AWAITING_APPROVAL})

MISSION_TABLE: TransitionTable[MissionState, MissionTransition] = TransitionTable(
    "Mission",
    (
        Row(
            transition=MT.CREATE,
            sources=frozenset({M.NONE}),
            targets=(M.ACTIVE,),
            events=(E.MISSION_CREATED,),
            note="human MissionOwner, possibly through the control plane",
        ),
        Row(
            transition=MT.CREATE_FOLLOW_UP,
            sources=frozenset({M.NONE}),
            targets=(M.ACTIVE,),
            events=(E.MISSION_CREATED,),
            mark=Mark(("payload", "mission", "followUpToMissionId")),
            guards=("linked_approved_mission", "same_mission_owner"),
            note="the same human MissionOwner",
        ),
        Row(
            transition=MT.CREATE_CHILD,
            sources=frozenset({M.NONE}),
            targets=(M.ACTIVE,),
            events=(E.MISSION_CREATED,),
            mark=Mark(("payload", "mission", "parent")),
            note="Parent Coordinator as child MissionOwner",
        ),
        Row(
            transition=MT.SUBMIT_FOR_APPROVAL,
            sources=frozenset({M.ACTIVE}),
            targets=(M.AWAITING_APPROVAL,),
            events=(E.MISSION_SUBMITTED_FOR_APPROVAL,),
            note="current Coordinator",
        ),
        Row(
            transition=MT.REQUEST_CHANGES,
            sources=frozenset({M.AWAITING_APPROVAL}),
            targets=(M.ACTIVE,),
            events=(E.MISSION_CHANGES_REQUESTED,),
            fences=("mission_owner",),
            note="MissionOwner",
        ),
        Row(
            transition=MT.APPROVE,
            sources=frozenset({M.AWAITING_APPROVAL}),
            targets=(M.APPROVED,),
            events=(E.MISSION_APPROVED,),
            fences=("mission_owner",),
            note="MissionOwner",
        ),
        Row(
            transition=MT.CANCEL,
            sources=_NON_TERMINAL,
            targets=(M.CANCELLED,),
            events=(E.MISSION_CANCELLED,),
            fences=("mission_owner_or_policy",),
            note="MissionOwner or Organization policy",
        ),
        Row(
            transition=MT.PARENT_CANCELLED,
            sources=_NON_TERMINAL,
            targets=(M.CANCELLED,),
            events=(E.MISSION_CANCELLED,),
            note="parent-cancellation propagation",
        ),
        Row(
            transition=MT.TERMINATE,
            sources=_NON_TERMINAL,
            targets=(M.FAILED,),
            events=(E.MISSION_TERMINATED,),
            note="Coordinator or Organization policy",
        ),
        Row(
            transition=MT.CHILD_FAILURE_PROPAGATION,
            sources=_NON_TERMINAL,
            targets=(M.FAILED,),
            events=(E.MISSION_TERMINATED,),
            note="declared child-failure propagation",
        ),
    ),
    terminal=frozenset({M.APPROVED, M.CANCELLED, M.FAILED}),
)
