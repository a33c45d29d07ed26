"""The typed value of ``command.schema.json``: :class:`Command`.

Its shape, with the conditional rules on actor type, kind, Group ID and epochs, lives in
``documents.command``. It must not perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ..command import COMMAND
from ..common import ProtocolVersion
from ..kinds import CommandKind
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, Extensions, Signature

__all__ = ["Command"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Command(WireObject):
    """A signed request for one structured state transition (section 15.1).

    ``kind`` is a :class:`CommandKind` for core kinds and a plain string for extension kinds;
    ``payload`` is the kind-specific free-form object.
    """

    __shape__: ClassVar[Shape] = COMMAND
    __what__: ClassVar[str] = "command"

    protocol_version: ProtocolVersion = "0.1"
    action_id: str
    actor: Actor
    session_epoch: int | None = None
    membership_epoch: int | None = None
    coordinator_epoch: int | None = None
    group_id: str | None = None
    conversation_id: str | None = None
    work_item_id: str | None = None
    cooperation_override_grant_id: str | None = None
    kind: CommandKind | str
    expected_revision: int | None = None
    correlation_id: str
    caused_by_event_id: str | None = None
    issued_at: str
    payload: dict[str, Any]
    extensions: Extensions | None = None
    signature: Signature
