"""The state machines of the specification as data: WorkItem (§10.2), Mission (§7.1), and the
lifecycles of leases (§11.3), offers (§10.3), Memberships (§8) and Groups (§7.4).

Each table is a tuple of rows transcribed in the order of the specification; a row names the
Command kind (or cause) that drives it, the Event kinds that record it, its source states, its
target(s) and its guards. One lookup function per table answers "may an aggregate in state S
take transition T, and to which states may it go?" or raises ``INVALID_STATE_TRANSITION``;
another says which row a signed Event records. The Authority's decisions, replay, the diagrams,
the documentation and the tests all read these same tables: ``PROTOCOL_TABLES`` is the set the
specification defines, and a ``StateTables`` value with a changed row is a different rule set
the Authority and replay can be given.
"""

from dataclasses import dataclass
from typing import Any

from ..documents.lease import LeaseState
from ..documents.mission import GroupState, MembershipState, MissionState
from ..documents.work import OfferStatus, WorkItemState
from .core import Mark, Row, TransitionTable
from .group import GROUP_TABLE, GroupTransition
from .lease import LEASE_TABLE, LeaseTransition
from .membership import MEMBERSHIP_TABLE, MembershipTransition
from .mission import MISSION_TABLE, MissionTransition
from .offer import OFFER_TABLE, OfferTransition
from .work_item import (
    IN_STATE_ACTIONS,
    OWNED_STATES,
    UNFINISHED_STATES,
    WORK_ITEM_TABLE,
    WorkItemAction,
    WorkTransition,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class StateTables:
    """One rule set: a table for every state machine the Authority decides and replays."""

    work_item: TransitionTable[WorkItemState, WorkTransition] = WORK_ITEM_TABLE
    mission: TransitionTable[MissionState, MissionTransition] = MISSION_TABLE
    lease: TransitionTable[LeaseState, LeaseTransition] = LEASE_TABLE
    offer: TransitionTable[OfferStatus, OfferTransition] = OFFER_TABLE
    membership: TransitionTable[MembershipState, MembershipTransition] = MEMBERSHIP_TABLE
    group: TransitionTable[GroupState, GroupTransition] = GROUP_TABLE

    def all(self) -> tuple[TransitionTable[Any, Any], ...]:
        """Every table of the set."""
        return (self.work_item, self.mission, self.lease, self.offer, self.membership, self.group)


#: The tables of the specification: what the Authority and replay use unless given others.
PROTOCOL_TABLES = StateTables()

__all__ = [
    "GROUP_TABLE",
    "IN_STATE_ACTIONS",
    "LEASE_TABLE",
    "MEMBERSHIP_TABLE",
    "MISSION_TABLE",
    "OFFER_TABLE",
    "OWNED_STATES",
    "PROTOCOL_TABLES",
    "UNFINISHED_STATES",
    "WORK_ITEM_TABLE",
    "GroupState",
    "GroupTransition",
    "LeaseState",
    "LeaseTransition",
    "Mark",
    "MembershipState",
    "MembershipTransition",
    "MissionState",
    "MissionTransition",
    "OfferStatus",
    "OfferTransition",
    "Row",
    "StateTables",
    "TransitionTable",
    "WorkItemAction",
    "WorkItemState",
    "WorkTransition",
]
