"""``websocket-frame.schema.json``: the frames of the WebSocket binding (section 17).

Owns the shape of every frame (the four HELLO phases, SUBSCRIBE, COMMAND, EVENT, ACK, PING and
ERROR), one typed class per frame, the :data:`Frame` union, and :func:`frame_from_json`, which
picks the class from a table keyed by ``frameType`` and ``phase``. The official schema is a
``oneOf`` whose alternatives each fix ``frameType`` (and ``phase`` for HELLO) with a ``const``;
selecting by those members is equivalent and gives precise messages. It must not open sockets,
run the handshake or perform I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal

from .agent import PRESENCE_RECORD, PresenceRecord
from .command import COMMAND, Command
from .common import (
    BASE64URL,
    ID,
    KIND,
    POSITIVE_INTEGER,
    PROTOCOL_VERSION_SHAPE,
    SAFE_INTEGER,
    TIMESTAMP,
    ProtocolVersion,
)
from .event import EVENT, Event
from .governance import ERROR, Error
from .shapes import Bool, Const, Shape, Str
from .structures import Arr, Obj, Tagged
from .wire import WireObject, validate_shape

__all__ = [
    "WEBSOCKET_FRAME",
    "AckFrame",
    "Acknowledgement",
    "Attention",
    "CommandFrame",
    "ErrorFrame",
    "EventFrame",
    "Frame",
    "FrameType",
    "GroupSubscription",
    "HelloClientInit",
    "HelloClientResponse",
    "HelloPhase",
    "HelloServerAccept",
    "HelloServerChallenge",
    "PingFrame",
    "SubscribeFrame",
    "frame_from_json",
]


class FrameType(StrEnum):
    """The ``frameType`` of a WebSocket frame."""

    HELLO = "HELLO"
    SUBSCRIBE = "SUBSCRIBE"
    COMMAND = "COMMAND"
    EVENT = "EVENT"
    ACK = "ACK"
    PING = "PING"
    ERROR = "ERROR"


class HelloPhase(StrEnum):
    """The four steps of the HELLO handshake (section 17.1)."""

    CLIENT_INIT = "client_init"
    SERVER_CHALLENGE = "server_challenge"
    CLIENT_RESPONSE = "client_response"
    SERVER_ACCEPT = "server_accept"


def _frame(
    frame_type: FrameType,
    required: Mapping[str, Shape],
    optional: Mapping[str, Shape] | None = None,
    phase: HelloPhase | None = None,
) -> Obj:
    head: dict[str, Shape] = {
        "protocolVersion": PROTOCOL_VERSION_SHAPE,
        "frameId": ID,
        "frameType": Const(frame_type),
    }
    if phase is not None:
        head["phase"] = Const(phase)
    return Obj({**head, **required}, optional)


HELLO_CLIENT_INIT: Final = _frame(
    FrameType.HELLO,
    {
        "agentId": ID,
        "keyId": ID,
        "clientNonce": BASE64URL,
        "supportedVersions": Arr(PROTOCOL_VERSION_SHAPE, min_items=1, unique=True),
    },
    phase=HelloPhase.CLIENT_INIT,
)
HELLO_SERVER_CHALLENGE: Final = _frame(
    FrameType.HELLO,
    {
        "selectedVersion": PROTOCOL_VERSION_SHAPE,
        "clientNonce": BASE64URL,
        "serverNonce": BASE64URL,
        "challenge": BASE64URL,
    },
    phase=HelloPhase.SERVER_CHALLENGE,
)
HELLO_CLIENT_RESPONSE: Final = _frame(
    FrameType.HELLO,
    {
        "agentId": ID,
        "keyId": ID,
        "clientNonce": BASE64URL,
        "serverNonce": BASE64URL,
        "challengeSignature": BASE64URL,
    },
    phase=HelloPhase.CLIENT_RESPONSE,
)
HELLO_SERVER_ACCEPT: Final = _frame(
    FrameType.HELLO,
    {
        "selectedVersion": PROTOCOL_VERSION_SHAPE,
        "sessionToken": Str(min_len=16, max_len=8192),
        "sessionEpoch": POSITIVE_INTEGER,
        "expiresAt": TIMESTAMP,
    },
    phase=HelloPhase.SERVER_ACCEPT,
)
ATTENTION: Final = Obj(
    optional={
        "eventKinds": Arr(KIND, unique=True),
        "conversationIds": Arr(ID, unique=True),
        "workItemIds": Arr(ID, unique=True),
        "mentionsOnly": Bool(),
        "announcements": Bool(),
    }
)
GROUP_SUBSCRIPTION: Final = Obj(
    {"groupId": ID, "afterSequence": SAFE_INTEGER}, {"attention": ATTENTION}
)
SUBSCRIBE: Final = _frame(
    FrameType.SUBSCRIBE,
    {"subscriptionId": ID, "groups": Arr(GROUP_SUBSCRIPTION, min_items=1)},
)
COMMAND_FRAME: Final = _frame(FrameType.COMMAND, {"command": COMMAND})
EVENT_FRAME: Final = _frame(FrameType.EVENT, {"event": EVENT})
#: ``EVENT_FRAME`` without looking inside its ``event`` (checked on its own by whoever wants
#: to check one Event document once for many frames).
EVENT_FRAME_ENVELOPE: Final = _frame(FrameType.EVENT, {"event": Obj(additional=True)})
ACKNOWLEDGEMENT: Final = Obj({"groupId": ID, "sequence": SAFE_INTEGER})
ACK: Final = _frame(
    FrameType.ACK,
    {"acknowledgements": Arr(ACKNOWLEDGEMENT, min_items=1), "sentAt": TIMESTAMP},
)
PING: Final = _frame(
    FrameType.PING,
    {"nonce": BASE64URL, "sentAt": TIMESTAMP},
    {"replyToNonce": BASE64URL, "presence": PRESENCE_RECORD},
)
ERROR_FRAME: Final = _frame(FrameType.ERROR, {"error": ERROR})

WEBSOCKET_FRAME: Final = Tagged(
    "frameType",
    {
        FrameType.HELLO: Tagged(
            "phase",
            {
                HelloPhase.CLIENT_INIT: HELLO_CLIENT_INIT,
                HelloPhase.SERVER_CHALLENGE: HELLO_SERVER_CHALLENGE,
                HelloPhase.CLIENT_RESPONSE: HELLO_CLIENT_RESPONSE,
                HelloPhase.SERVER_ACCEPT: HELLO_SERVER_ACCEPT,
            },
            what="HELLO phase",
        ),
        FrameType.SUBSCRIBE: SUBSCRIBE,
        FrameType.COMMAND: COMMAND_FRAME,
        FrameType.EVENT: EVENT_FRAME,
        FrameType.ACK: ACK,
        FrameType.PING: PING,
        FrameType.ERROR: ERROR_FRAME,
    },
    what="frame type",
)


# --------------------------------------------------------------------------- typed values


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
