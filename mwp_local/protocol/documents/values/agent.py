"""The typed values of ``agent-card.schema.json`` and ``presence-record.schema.json``.

Holds :class:`AgentCard` with its :class:`Endpoint` and :class:`CapabilityDescriptor`, and
:class:`PresenceRecord` with its :class:`Capacity` and :class:`CapabilityAvailability`; their shapes
and status vocabularies live in ``documents.agent``. It must not perform I/O or decide trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..agent import (
    AGENT_CARD,
    CAPABILITY_AVAILABILITY,
    CAPABILITY_DESCRIPTOR,
    CAPACITY,
    ENDPOINT,
    PRESENCE_RECORD,
    AgentStatus,
    CapabilityStatus,
    PresenceStatus,
)
from ..shapes import Shape
from ..wire import WireObject
from .common import Actor, CapabilityRef, Extensions, PublicKey, Signature

__all__ = [
    "AgentCard",
    "CapabilityAvailability",
    "CapabilityDescriptor",
    "Capacity",
    "Endpoint",
    "PresenceRecord",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint(WireObject):
    """Where an Agent is reachable: a ``wss://`` URI."""

    __shape__: ClassVar[Shape] = ENDPOINT
    __what__: ClassVar[str] = "endpoint"

    transport: Literal["wss"] = "wss"
    uri: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityDescriptor(WireObject):
    """A declared capability: version, input/output schemas with hashes, and its Evidence."""

    __shape__: ClassVar[Shape] = CAPABILITY_DESCRIPTOR
    __what__: ClassVar[str] = "capability"

    id: str
    version: str
    input_schema: str
    input_schema_hash: str
    output_schema: str
    output_schema_hash: str
    constraints: dict[str, Any]
    verified_evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentCard(WireObject):
    """The signed, versioned identity and capability declaration of an Agent (section 6.1)."""

    __shape__: ClassVar[Shape] = AGENT_CARD
    __what__: ClassVar[str] = "agent-card"

    agent_id: str
    organization_id: str
    card_version: int
    display_name: str
    description: str | None = None
    owner: Actor
    status: AgentStatus
    protocol_versions: tuple[Literal["0.1"], ...]
    endpoints: tuple[Endpoint, ...]
    public_keys: tuple[PublicKey, ...]
    capabilities: tuple[CapabilityDescriptor, ...]
    max_concurrency: int
    issued_at: str
    valid_until: str | None = None
    extensions: Extensions | None = None
    signature: Signature


@dataclass(frozen=True, slots=True, kw_only=True)
class Capacity(WireObject):
    """Slots of a session: maximum, active, available, and queued items."""

    __shape__: ClassVar[Shape] = CAPACITY
    __what__: ClassVar[str] = "capacity"

    max_slots: int
    active_slots: int
    available_slots: int
    queued_items: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityAvailability(WireObject):
    """Whether one pinned capability is available now."""

    __shape__: ClassVar[Shape] = CAPABILITY_AVAILABILITY
    __what__: ClassVar[str] = "capability availability"

    capability: CapabilityRef
    status: CapabilityStatus


@dataclass(frozen=True, slots=True, kw_only=True)
class PresenceRecord(WireObject):
    """An Agent session's live status and capacity (section 6.2)."""

    __shape__: ClassVar[Shape] = PRESENCE_RECORD
    __what__: ClassVar[str] = "presence-record"

    agent_id: str
    session_epoch: int
    status: PresenceStatus
    capacity: Capacity
    capability_availability: tuple[CapabilityAvailability, ...]
    estimated_response_ms: int | None = None
    last_heartbeat: str
    expires_at: str
