"""The Mission lifecycle of §7.1, as data.

``NONE`` is the pre-state before creation; ``approved``, ``cancelled`` and ``failed`` are
terminal (an approved Mission is never reopened: corrections are follow-up Missions).
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.mission import MissionState
from .core import Row, TransitionTable


class MissionTransition(StrEnum):
    """The Commands and causes of §7.1."""

    CREATE = "mission.create"
    CREATE_FOLLOW_UP = "mission.create_follow_up"
    CREATE_CHILD = "mission.create_child"
    SUBMIT_FOR_APPROVAL = "mission.submit_for_approval"
    REQUEST_CHANGES = "mission.request_changes"
    APPROVE = "mission.approve"
    CANCEL = "mission.cancel"
    PARENT_CANCELLED = "parent_cancellation_propagation"
    TERMINATE = "mission.terminate"
    CHILD_FAILURE_PROPAGATION = "child_failure_propagation"


M = MissionState
_NON_TERMINAL = frozenset({M.ACTIVE, M.AWAITING_APPROVAL})

MISSION_TABLE: TransitionTable[MissionState, MissionTransition] = TransitionTable(
    "Mission",
    (
        Row(
            sources=frozenset({M.NONE}),
            transition=MissionTransition.CREATE,
            targets=(M.ACTIVE,),
            guards=("human_mission_owner", "coordinator_lease"),
            note="human MissionOwner, possibly through the control plane",
        ),
        Row(
            sources=frozenset({M.NONE}),
            transition=MissionTransition.CREATE_FOLLOW_UP,
            targets=(M.ACTIVE,),
            guards=("same_human_mission_owner", "linked_approved_mission"),
            note="the same human MissionOwner",
        ),
        Row(
            sources=frozenset({M.NONE}),
            transition=MissionTransition.CREATE_CHILD,
            targets=(M.ACTIVE,),
            guards=("parent_coordinator", "linked_parent_work_item"),
            note="Parent Coordinator as child MissionOwner",
        ),
        Row(
            sources=frozenset({M.ACTIVE}),
            transition=MissionTransition.SUBMIT_FOR_APPROVAL,
            targets=(M.AWAITING_APPROVAL,),
            guards=("current_coordinator", "required_results_verified"),
            note="current Coordinator",
        ),
        Row(
            sources=frozenset({M.AWAITING_APPROVAL}),
            transition=MissionTransition.REQUEST_CHANGES,
            targets=(M.ACTIVE,),
            guards=("mission_owner",),
            note="MissionOwner",
        ),
        Row(
            sources=frozenset({M.AWAITING_APPROVAL}),
            transition=MissionTransition.APPROVE,
            targets=(M.APPROVED,),
            guards=("mission_owner", "exact_revision_and_artifacts"),
            note="MissionOwner",
        ),
        Row(
            sources=_NON_TERMINAL,
            transition=MissionTransition.CANCEL,
            targets=(M.CANCELLED,),
            guards=("mission_owner_or_policy",),
            note="MissionOwner or Organization policy",
        ),
        Row(
            sources=_NON_TERMINAL,
            transition=MissionTransition.PARENT_CANCELLED,
            targets=(M.CANCELLED,),
            note="parent-cancellation propagation",
        ),
        Row(
            sources=_NON_TERMINAL,
            transition=MissionTransition.TERMINATE,
            targets=(M.FAILED,),
            guards=("coordinator_or_policy",),
            note="Coordinator or Organization policy",
        ),
        Row(
            sources=_NON_TERMINAL,
            transition=MissionTransition.CHILD_FAILURE_PROPAGATION,
            targets=(M.FAILED,),
            note="declared child-failure propagation",
        ),
    ),
    terminal=frozenset({M.APPROVED, M.CANCELLED, M.FAILED}),
)
