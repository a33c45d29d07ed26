"""The typed values of ``conversation.schema.json`` and ``message.schema.json``.

Holds :class:`Conversation` (with :class:`ConversationAccess`) and :class:`Message` with its content
blocks (:class:`TextContent`, :class:`ArtifactRefContent`, :class:`DataRefContent`, joined as
:data:`MessageContent`); their shapes and vocabularies live in ``documents.conversation``. It must
not perform I/O or decide visibility.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..conversation import (
    ACCESS,
    ARTIFACT_REF_CONTENT,
    CONVERSATION,
    DATA_REF_CONTENT,
    MESSAGE,
    TEXT_CONTENT,
    AccessMode,
    ConversationState,
    ConversationType,
    MessageKind,
)
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, Extensions

__all__ = [
    "ArtifactRefContent",
    "Conversation",
    "ConversationAccess",
    "DataRefContent",
    "Message",
    "MessageContent",
    "TextContent",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationAccess(WireObject):
    """Access mode, and the members when restricted."""

    __shape__: ClassVar[Shape] = ACCESS
    __what__: ClassVar[str] = "access"

    mode: AccessMode
    members: tuple[Actor, ...] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation(WireObject):
    """A thread within a Group (section 9)."""

    __shape__: ClassVar[Shape] = CONVERSATION
    __what__: ClassVar[str] = "conversation"

    conversation_id: str
    mission_id: str
    group_id: str
    type: ConversationType
    primary_work_item_id: str | None = None
    title: str
    access: ConversationAccess
    created_by: Actor
    created_at: str
    state: ConversationState
    revision: int
    extensions: Extensions | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TextContent(WireObject):
    """A text block of a Message."""

    __shape__: ClassVar[Shape] = TEXT_CONTENT
    __what__: ClassVar[str] = "text content"

    type: Literal["text"] = "text"
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactRefContent(WireObject):
    """A reference to a published Artifact by content hash."""

    __shape__: ClassVar[Shape] = ARTIFACT_REF_CONTENT
    __what__: ClassVar[str] = "artifact reference"

    type: Literal["artifact_ref"] = "artifact_ref"
    artifact_hash: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DataRefContent(WireObject):
    """Structured data with the URI of its schema; ``data`` is any JSON value."""

    __shape__: ClassVar[Shape] = DATA_REF_CONTENT
    __what__: ClassVar[str] = "data reference"

    type: Literal["data_ref"] = "data_ref"
    schema: str
    data: Any


MessageContent = TextContent | ArtifactRefContent | DataRefContent


@dataclass(frozen=True, slots=True, kw_only=True)
class Message(WireObject):
    """A committed, non-authoritative Message (section 9)."""

    __shape__: ClassVar[Shape] = MESSAGE
    __what__: ClassVar[str] = "message"

    message_id: str
    mission_id: str
    group_id: str
    conversation_id: str
    author: Actor
    kind: MessageKind
    authority: Literal[False] = False
    target_message_id: str | None = None
    content: tuple[MessageContent, ...]
    mentions: tuple[Actor, ...] | None = None
    references: tuple[str, ...] | None = None
    reason: str | None = None
    committed_at: str
    extensions: Extensions | None = None
