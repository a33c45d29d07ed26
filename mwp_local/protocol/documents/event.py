"""``event.schema.json``: the signed Event envelope (section 15.2).

Owns the Event shape (a Group Event carries its Group ID, sequence and aggregate revision; the
two Organization-scoped facts carry none of them and are accepted by a service) and the typed
:class:`Event` with its :class:`Cause`. It checks structure only; sequence continuity and the
accepting authority's signature are checked elsewhere. It must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final

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
    Actor,
    ActorType,
    Extensions,
    ProtocolVersion,
    Signature,
)
from .kinds import ORGANIZATION_SCOPED_EVENT_KINDS, EventKind
from .shapes import Const, Enum, Shape
from .structures import FREE_OBJECT, AllOf, AnyOf, Forbids, Has, If, Obj, Where
from .wire import WireObject

__all__ = ["EVENT", "Cause", "CauseType", "Event", "EventKind"]


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Cause(WireObject):
    """What an Event follows from."""

    __shape__: ClassVar[Shape] = CAUSE
    __what__: ClassVar[str] = "cause"

    type: CauseType
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Event(WireObject):
    """An immutable accepted fact (section 15.2).

    ``kind`` is an :class:`EventKind` for core kinds and a plain string for extension kinds;
    ``payload`` is the kind-specific free-form object.
    """

    __shape__: ClassVar[Shape] = EVENT
    __what__: ClassVar[str] = "event"

    protocol_version: ProtocolVersion = "0.1"
    event_id: str
    group_id: str | None = None
    sequence: int | None = None
    aggregate_revision: int | None = None
    kind: EventKind | str
    actor: Actor
    cause: Cause
    correlation_id: str
    conversation_id: str | None = None
    work_item_id: str | None = None
    occurred_at: str
    payload: dict[str, Any]
    accepted_by: Actor
    command_hash: str | None = None
    extensions: Extensions | None = None
    signature: Signature
