"""The typed values of ``websocket-frame.schema.json``: one class per frame.

Holds the four HELLO frames, :class:`SubscribeFrame` (with :class:`GroupSubscription` and
:class:`Attention`), :class:`CommandFrame`, :class:`EventFrame`, :class:`AckFrame` (with
:class:`Acknowledgement`), :class:`PingFrame` and :class:`ErrorFrame`, the :data:`Frame` union, the
:data:`FRAME_CLASSES` table keyed by ``frameType`` and ``phase``, and :func:`frame_from_json`, which
picks the class from that table. The frame shapes live in ``documents.frame``. It must not open
sockets, run the handshake or perform I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal

from ..common import ProtocolVersion
from ..frame import (
    ACK,
    ACKNOWLEDGEMENT,
    ATTENTION,
    COMMAND_FRAME,
    ERROR_FRAME,
    EVENT_FRAME,
    GROUP_SUBSCRIPTION,
    HELLO_CLIENT_INIT,
    HELLO_CLIENT_RESPONSE,
    HELLO_SERVER_ACCEPT,
    HELLO_SERVER_CHALLENGE,
    PING,
    SUBSCRIBE,
    WEBSOCKET_FRAME,
    FrameType,
    HelloPhase,
)
from ..shapes import Shape
from ..wire import WireObject, validate_shape
from .agent import PresenceRecord
from .command import Command
from .event import Event
from .governance import Error

__all__ = [
    "FRAME_CLASSES",
    "AckFrame",
    "Acknowledgement",
    "Attention",
    "CommandFrame",
    "ErrorFrame",
    "EventFrame",
    "Frame",
    "GroupSubscription",
    "HelloClientInit",
    "HelloClientResponse",
    "HelloServerAccept",
    "HelloServerChallenge",
    "PingFrame",
    "SubscribeFrame",
    "frame_from_json",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class HelloClientInit(WireObject):
    """HELLO 1/4: the Agent names itself, its key, a nonce and the versions it speaks."""

    __shape__: ClassVar[Shape] = HELLO_CLIENT_INIT
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["HELLO"] = "HELLO"
    phase: Literal["client_init"] = "client_init"
    agent_id: str
    key_id: str
    client_nonce: str
    supported_versions: tuple[Literal["0.1"], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class HelloServerChallenge(WireObject):
    """HELLO 2/4: the server selects a version and sends a challenge."""

    __shape__: ClassVar[Shape] = HELLO_SERVER_CHALLENGE
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["HELLO"] = "HELLO"
    phase: Literal["server_challenge"] = "server_challenge"
    selected_version: Literal["0.1"] = "0.1"
    client_nonce: str
    server_nonce: str
    challenge: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HelloClientResponse(WireObject):
    """HELLO 3/4: the Agent signs the challenge."""

    __shape__: ClassVar[Shape] = HELLO_CLIENT_RESPONSE
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["HELLO"] = "HELLO"
    phase: Literal["client_response"] = "client_response"
    agent_id: str
    key_id: str
    client_nonce: str
    server_nonce: str
    challenge_signature: str


@dataclass(frozen=True, slots=True, kw_only=True)
class HelloServerAccept(WireObject):
    """HELLO 4/4: the server opens the session with a token and Session Epoch."""

    __shape__: ClassVar[Shape] = HELLO_SERVER_ACCEPT
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["HELLO"] = "HELLO"
    phase: Literal["server_accept"] = "server_accept"
    selected_version: Literal["0.1"] = "0.1"
    session_token: str
    session_epoch: int
    expires_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Attention(WireObject):
    """Which Events of a subscribed Group deserve attention (section 8)."""

    __shape__: ClassVar[Shape] = ATTENTION
    __what__: ClassVar[str] = "attention"

    event_kinds: tuple[str, ...] | None = None
    conversation_ids: tuple[str, ...] | None = None
    work_item_ids: tuple[str, ...] | None = None
    mentions_only: bool | None = None
    announcements: bool | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupSubscription(WireObject):
    """One Group of a subscription and the sequence to resume after."""

    __shape__: ClassVar[Shape] = GROUP_SUBSCRIPTION
    __what__: ClassVar[str] = "group subscription"

    group_id: str
    after_sequence: int
    attention: Attention | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SubscribeFrame(WireObject):
    """SUBSCRIBE: multiplexed replay-and-follow of several Groups (section 17.2)."""

    __shape__: ClassVar[Shape] = SUBSCRIBE
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["SUBSCRIBE"] = "SUBSCRIBE"
    subscription_id: str
    groups: tuple[GroupSubscription, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFrame(WireObject):
    """COMMAND: carries one Command."""

    __shape__: ClassVar[Shape] = COMMAND_FRAME
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["COMMAND"] = "COMMAND"
    command: Command


@dataclass(frozen=True, slots=True, kw_only=True)
class EventFrame(WireObject):
    """EVENT: carries one Event."""

    __shape__: ClassVar[Shape] = EVENT_FRAME
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["EVENT"] = "EVENT"
    event: Event


@dataclass(frozen=True, slots=True, kw_only=True)
class Acknowledgement(WireObject):
    """The highest sequence processed in one Group."""

    __shape__: ClassVar[Shape] = ACKNOWLEDGEMENT
    __what__: ClassVar[str] = "acknowledgement"

    group_id: str
    sequence: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AckFrame(WireObject):
    """ACK: acknowledgements for one or more Groups (section 16)."""

    __shape__: ClassVar[Shape] = ACK
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["ACK"] = "ACK"
    acknowledgements: tuple[Acknowledgement, ...]
    sent_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PingFrame(WireObject):
    """PING: liveness, optionally with the sender's Presence Record (section 17.3)."""

    __shape__: ClassVar[Shape] = PING
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["PING"] = "PING"
    nonce: str
    reply_to_nonce: str | None = None
    sent_at: str
    presence: PresenceRecord | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorFrame(WireObject):
    """ERROR: carries one wire Error."""

    __shape__: ClassVar[Shape] = ERROR_FRAME
    __what__: ClassVar[str] = "websocket-frame"

    protocol_version: ProtocolVersion = "0.1"
    frame_id: str
    frame_type: Literal["ERROR"] = "ERROR"
    error: Error


Frame = (
    HelloClientInit
    | HelloServerChallenge
    | HelloClientResponse
    | HelloServerAccept
    | SubscribeFrame
    | CommandFrame
    | EventFrame
    | AckFrame
    | PingFrame
    | ErrorFrame
)

#: The frame class for each ``(frameType, phase)``; ``phase`` is ``None`` outside HELLO.
FRAME_CLASSES: Final[Mapping[tuple[str, str | None], type[Any]]] = {
    (FrameType.HELLO, HelloPhase.CLIENT_INIT): HelloClientInit,
    (FrameType.HELLO, HelloPhase.SERVER_CHALLENGE): HelloServerChallenge,
    (FrameType.HELLO, HelloPhase.CLIENT_RESPONSE): HelloClientResponse,
    (FrameType.HELLO, HelloPhase.SERVER_ACCEPT): HelloServerAccept,
    (FrameType.SUBSCRIBE, None): SubscribeFrame,
    (FrameType.COMMAND, None): CommandFrame,
    (FrameType.EVENT, None): EventFrame,
    (FrameType.ACK, None): AckFrame,
    (FrameType.PING, None): PingFrame,
    (FrameType.ERROR, None): ErrorFrame,
}


def frame_from_json(doc: Any) -> Frame:
    """Validate a wire frame and build its typed value.

    Raises ``ProtocolError(SCHEMA_VALIDATION_FAILED)`` naming every problem.
    """
    validate_shape(WEBSOCKET_FRAME, doc, "websocket-frame")
    phase = doc.get("phase") if doc["frameType"] == FrameType.HELLO else None
    cls = FRAME_CLASSES[(doc["frameType"], phase)]
    frame: Frame = cls.from_validated_json(doc)
    return frame
