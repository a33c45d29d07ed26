"""The typed values of ``event.schema.json``: :class:`Event` and its :class:`Cause`.

Their shapes and the cause vocabulary live in ``documents.event``. It must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..common import ProtocolVersion
from ..event import CAUSE, EVENT, CauseType
from ..kinds import EventKind
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, Extensions, Signature

__all__ = ["Cause", "Event"]


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
