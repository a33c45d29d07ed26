"""``conversation.schema.json`` and ``message.schema.json`` (section 9).

Owns the shapes and vocabularies of a Conversation (its type, access mode and members) and of a
committed Message (author, kind, content blocks, mentions). A Message never carries authority:
``authority`` is the constant ``false``, because Messages are context and cannot authorize
execution. It must not perform I/O or decide visibility.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .common import (
    ACTOR,
    EXTENSIONS,
    ID,
    SAFE_INTEGER,
    SHA256,
    TIMESTAMP,
    URI_STRING,
    text,
)
from .shapes import ANY, Const, Enum
from .structures import Arr, Has, If, Obj, Tagged, Where

__all__ = [
    "CONVERSATION",
    "MESSAGE",
    "AccessMode",
    "ConversationState",
    "ConversationType",
    "MessageKind",
]


class ConversationType(StrEnum):
    """What a Conversation is for."""

    GROUP = "group"
    WORK_ITEM = "work_item"
    REVIEW = "review"
    RESTRICTED = "restricted"


class AccessMode(StrEnum):
    """Who may read a Conversation: the whole Group or listed members."""

    GROUP = "group"
    RESTRICTED = "restricted"


class ConversationState(StrEnum):
    """Whether a Conversation still accepts Messages."""

    ACTIVE = "active"
    CLOSED = "closed"


class MessageKind(StrEnum):
    """A Message, or a correction, retraction or redaction of an earlier one."""

    MESSAGE = "message"
    CORRECTION = "correction"
    RETRACTION = "retraction"
    REDACTION = "redaction"


ACCESS: Final = Obj(
    {"mode": Enum.of(AccessMode)},
    {"members": Arr(ACTOR, min_items=1)},
    rules=[
        If(
            Has(mode=Const(AccessMode.RESTRICTED)),
            then=Where(required=["members"]),
            then_why="restricted access lists its members",
        )
    ],
)
CONVERSATION: Final = Obj(
    {
        "conversationId": ID,
        "missionId": ID,
        "groupId": ID,
        "type": Enum.of(ConversationType),
        "title": text(1, 500),
        "access": ACCESS,
        "createdBy": ACTOR,
        "createdAt": TIMESTAMP,
        "state": Enum.of(ConversationState),
        "revision": SAFE_INTEGER,
    },
    {"primaryWorkItemId": ID, "extensions": EXTENSIONS},
    rules=[
        If(
            Has(type=Const(ConversationType.WORK_ITEM)),
            then=Where(required=["primaryWorkItemId"]),
            then_why="a WorkItem Conversation names its primary WorkItem",
        ),
        If(
            Has(type=Const(ConversationType.RESTRICTED)),
            then=Where({"access": Where({"mode": Const(AccessMode.RESTRICTED)})}),
            then_why="a restricted Conversation has restricted access",
        ),
    ],
)

TEXT_CONTENT: Final = Obj({"type": Const("text"), "text": text(1, 100000)})
ARTIFACT_REF_CONTENT: Final = Obj({"type": Const("artifact_ref"), "artifactHash": SHA256})
DATA_REF_CONTENT: Final = Obj({"type": Const("data_ref"), "schema": URI_STRING, "data": ANY})
CONTENT_BLOCK: Final = Tagged(
    "type",
    {"text": TEXT_CONTENT, "artifact_ref": ARTIFACT_REF_CONTENT, "data_ref": DATA_REF_CONTENT},
    what="content block type",
)
MESSAGE: Final = Obj(
    {
        "messageId": ID,
        "missionId": ID,
        "groupId": ID,
        "conversationId": ID,
        "author": ACTOR,
        "kind": Enum.of(MessageKind),
        "authority": Const(False, why="Messages are context only and never authorize execution"),
        "content": Arr(CONTENT_BLOCK, min_items=1),
        "committedAt": TIMESTAMP,
    },
    {
        "targetMessageId": ID,
        "mentions": Arr(ACTOR, unique=True),
        "references": Arr(ID, unique=True),
        "reason": text(1, 4000),
        "extensions": EXTENSIONS,
    },
    rules=[
        If(
            Has(kind=Enum(MessageKind.CORRECTION, MessageKind.RETRACTION, MessageKind.REDACTION)),
            then=Where(required=["targetMessageId", "reason"]),
            then_why="a correction, retraction or redaction names its target and reason",
        )
    ],
)
