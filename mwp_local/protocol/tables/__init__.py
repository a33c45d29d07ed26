"""The state machines of the specification as data: WorkItem (§10.2) and Mission (§7.1).

Each table is a tuple of rows transcribed in the order of the specification. One lookup function
per table answers "may an aggregate in state S take transition T, and to which states may it
go?" or raises ``INVALID_STATE_TRANSITION`` with an explanation that lists what *is* allowed.
Diagrams, documentation, the Authority and the tests all read these same tables.
"""

from .core import Row, TransitionTable
from .mission import MISSION_TABLE, MissionState, MissionTransition
from .work_item import (
    IN_STATE_ACTIONS,
    WORK_ITEM_TABLE,
    WorkItemAction,
    WorkItemState,
    WorkTransition,
)

__all__ = [
    "IN_STATE_ACTIONS",
    "MISSION_TABLE",
    "WORK_ITEM_TABLE",
    "MissionState",
    "MissionTransition",
    "Row",
    "TransitionTable",
    "WorkItemAction",
    "WorkItemState",
    "WorkTransition",
]
