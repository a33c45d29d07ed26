"""``websocket-frame.schema.json``: the frames of the WebSocket binding (section 17).

Owns the shape of every frame (the four HELLO phases, SUBSCRIBE, COMMAND, EVENT, ACK, PING and
ERROR) and the frame type and HELLO phase vocabularies. The official schema is a ``oneOf`` whose
alternatives each fix ``frameType`` (and ``phase`` for HELLO) with a ``const``; selecting by
those members, as :data:`WEBSOCKET_FRAME` does, is equivalent and gives precise messages. It
must not open sockets, run the handshake or perform I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from .agent import PRESENCE_RECORD
from .command import COMMAND
from .common import (
    BASE64URL,
    ID,
    KIND,
    POSITIVE_INTEGER,
    PROTOCOL_VERSION_SHAPE,
    SAFE_INTEGER,
    TIMESTAMP,
)
from .event import EVENT
from .governance import ERROR
from .shapes import Bool, Const, Shape, Str
from .structures import Arr, Obj, Tagged

__all__ = [
    "WEBSOCKET_FRAME",
    "FrameType",
    "HelloPhase",
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
#: ``EVENT_FRAME`` without looking inside its ``event`` (for frames around an Event document
#: that was checked on its own, once for all the frames that carry it).
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
