"""The lifecycle of one durable offer (§10.3), as data: pending until accepted, lost to another
candidate's acceptance, or withdrawn by a new offer or a contract revision.

An offer changes inside WorkItem Events (``work.offer.created`` creates and withdraws,
``work.offer.accepted`` accepts one and marks the others ``lost_race``,
``work.contract.revised`` withdraws when renewed acceptance is required). Offer expiry changes
nothing (§10.2: it only invalidates acceptance); a Worker declines with a structured Message
(§10.3), so this sandbox never records ``declined`` or ``expired`` as an offer's status.
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.work import OfferStatus
from .core import Row, TransitionTable


class OfferTransition(StrEnum):
    """What can happen to an offer."""

    CREATE = "create"
    ACCEPT = "accept"
    LOSE_RACE = "lose_race"
    WITHDRAW = "withdraw"


OS = OfferStatus
OT = OfferTransition

OFFER_TABLE: TransitionTable[OfferStatus, OfferTransition] = TransitionTable(
    "Offer",
    (
        Row(
            transition=OT.CREATE,
            sources=frozenset({OS.NONE}),
            targets=(OS.PENDING,),
            note="work.offer: one pending offer per candidate (a bounded set for urgent work)",
        ),
        Row(
            transition=OT.ACCEPT,
            sources=frozenset({OS.PENDING}),
            targets=(OS.ACCEPTED,),
            note="work.accept_offer: the first valid acceptance wins",
        ),
        Row(
            transition=OT.LOSE_RACE,
            sources=frozenset({OS.PENDING}),
            targets=(OS.LOST_RACE,),
            note="Every other pending offer loses in the winner's acceptance Event",
        ),
        Row(
            transition=OT.WITHDRAW,
            sources=frozenset({OS.PENDING}),
            targets=(OS.WITHDRAWN,),
            note="A new offer replaces it, or a revised contract requires renewed acceptance",
        ),
    ),
    terminal=frozenset({OS.ACCEPTED, OS.LOST_RACE, OS.WITHDRAWN, OS.DECLINED, OS.EXPIRED}),
)
