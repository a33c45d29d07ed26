"""``event.schema.json``: the signed Event envelope (section 15.2).

Owns the Event shape (a Group Event carries its Group ID, sequence and aggregate revision; the two
Organization-scoped facts carry none of them and are accepted by a service) and the cause
vocabulary. It checks structure only; sequence continuity and the accepting authority's signature
are checked elsewhere. It must not perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .command import EXTENSION_KIND
from .common import (
    ACTOR,
    EXTENSIONS,
    ID,
    POSITIVE_INTEGER,
    PROTOCOL_VERSION_SHAPE,
    SAFE_INTEGER,
    SHA256,
    SIGNATURE,
    TIMESTAMP,
    ActorType,
)
from .kinds import ORGANIZATION_SCOPED_EVENT_KINDS, EventKind
from .shapes import Const, Enum
from .structures import FREE_OBJECT, AllOf, AnyOf, Forbids, Has, If, Obj, Where

__all__ = ["EVENT", "CauseType", "EventKind"]


class CauseType(StrEnum):
    """What caused an Event: a Command, a prior Event, a timer, or a policy decision."""

    COMMAND = "command"
    EVENT = "event"
    TIMER = "timer"
    POLICY = "policy"


CAUSE: Final = Obj({"type": Enum.of(CauseType), "id": ID})
CORE_EVENT_KIND: Final = Enum.of(EventKind, what="core Event kinds")

EVENT: Final = Obj(
    {
        "protocolVersion": PROTOCOL_VERSION_SHAPE,
        "eventId": ID,
        "kind": AnyOf(
            CORE_EVENT_KIND,
            EXTENSION_KIND,
            expect="a core Event kind (section 15.2) or an extension kind 'ext.<a>.<b>.<c>'",
        ),
        "actor": ACTOR,
        "cause": CAUSE,
        "correlationId": ID,
        "occurredAt": TIMESTAMP,
        "payload": FREE_OBJECT,
        "acceptedBy": ACTOR,
        "signature": SIGNATURE,
    },
    {
        "groupId": ID,
        "sequence": POSITIVE_INTEGER,
        "aggregateRevision": SAFE_INTEGER,
        "conversationId": ID,
        "workItemId": ID,
        "commandHash": SHA256,
        "extensions": EXTENSIONS,
    },
    rules=[
        If(
            Has(kind=Enum(*ORGANIZATION_SCOPED_EVENT_KINDS)),
            then=AllOf(
                Where({"actor": Where({"type": Const(ActorType.SERVICE)}, required=["type"])}),
                Forbids("groupId", "sequence", "aggregateRevision"),
            ),
            then_why="an Organization-scoped fact is recorded by a service outside any Group",
            otherwise=Where(required=["groupId", "sequence", "aggregateRevision"]),
            else_why="a Group Event carries its Group ID, sequence and aggregate revision",
        )
    ],
)
