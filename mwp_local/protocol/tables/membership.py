"""The Membership lifecycle of §8, as data: granted provisional or active, activated, changed
under a new Membership Epoch, ended, and granted again after it ended.

Memberships change through ``membership.changed`` and ``membership.ended`` Events, which carry
the whole Membership document; the ``membership.change`` and ``membership.end`` Commands, an
offer's just-in-time grant, an acceptance, a Mission's creation and a Coordinator's assignment
all emit them. The Authority looks each change up here; replay checks every Membership document
against the member's previous state with ``between``.
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.mission import MembershipState
from .core import Row, TransitionTable


class MembershipTransition(StrEnum):
    """What can happen to a Membership."""

    GRANT = "grant"
    ACTIVATE = "activate"
    CHANGE = "change"
    END = "end"


MS = MembershipState
MT = MembershipTransition

MEMBERSHIP_TABLE: TransitionTable[MembershipState, MembershipTransition] = TransitionTable(
    "Membership",
    (
        Row(
            transition=MT.GRANT,
            sources=frozenset({MS.NONE, MS.ENDED}),
            targets=(MS.PROVISIONAL, MS.ACTIVE),
            note="membership.change, an offer's just-in-time provisional Membership, a Mission's "
            "creation (MissionOwner, Coordinator) or a Coordinator's assignment",
        ),
        Row(
            transition=MT.ACTIVATE,
            sources=frozenset({MS.PROVISIONAL}),
            targets=(MS.ACTIVE,),
            note="Accepting the offer activates Membership (§8 step 3)",
        ),
        Row(
            transition=MT.CHANGE,
            sources=frozenset({MS.PROVISIONAL, MS.ACTIVE}),
            targets=(MS.PROVISIONAL, MS.ACTIVE),
            note="A new role, scopes or visibility under the next Membership Epoch",
        ),
        Row(
            transition=MT.END,
            sources=frozenset({MS.PROVISIONAL, MS.ACTIVE}),
            targets=(MS.ENDED,),
            note="membership.end: no WorkItems or review obligations remain (§8 step 4)",
        ),
    ),
    terminal=frozenset(),
)
