"""``agent-card.schema.json`` and ``presence-record.schema.json`` (sections 6.1 and 6.2).

Owns the shapes and typed values of the signed Agent Card (identity, endpoints, keys, and the
declared capabilities with their schema hashes and verified Evidence) and of the Presence Record
(session, capacity, per-capability availability). Agent Cards carry no permissions and Presence
Records no credentials: both are closed objects. It must not perform I/O or decide trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal

from .common import (
    ACTOR,
    CAPABILITY_ID,
    CAPABILITY_REF,
    EXTENSIONS,
    ID,
    POSITIVE_INTEGER,
    PROTOCOL_VERSION_SHAPE,
    PUBLIC_KEY,
    SAFE_INTEGER,
    SEMVER,
    SHA256,
    SIGNATURE,
    TIMESTAMP,
    URI_STRING,
    Actor,
    CapabilityRef,
    Extensions,
    PublicKey,
    Signature,
    text,
)
from .formats import URI
from .shapes import Const, Enum, Shape, Str
from .structures import FREE_OBJECT, Arr, Obj
from .wire import WireObject

__all__ = [
    "AGENT_CARD",
    "PRESENCE_RECORD",
    "AgentCard",
    "AgentStatus",
    "CapabilityAvailability",
    "CapabilityDescriptor",
    "CapabilityStatus",
    "Capacity",
    "Endpoint",
    "PresenceRecord",
    "PresenceStatus",
]


class AgentStatus(StrEnum):
    """Lifecycle status of an Agent Card."""

    ACTIVE = "active"
    DEPRECATED = "deprecated"
    REVOKED = "revoked"


class PresenceStatus(StrEnum):
    """What an Agent's session is doing right now."""

    ONLINE = "online"
    BUSY = "busy"
    AWAY = "away"
    DRAINING = "draining"
    OFFLINE = "offline"


class CapabilityStatus(StrEnum):
    """Availability of one capability in a Presence Record."""

    AVAILABLE = "available"
    DEGRADED = "degraded"
    UNAVAILABLE = "unavailable"


ENDPOINT: Final = Obj(
    {
        "transport": Const("wss"),
        "uri": Str(fmt=URI, pattern="^wss://", hint="a secure WebSocket URI 'wss://...'"),
    }
)
CAPABILITY_DESCRIPTOR: Final = Obj(
    {
        "id": CAPABILITY_ID,
        "version": SEMVER,
        "inputSchema": URI_STRING,
        "inputSchemaHash": SHA256,
        "outputSchema": URI_STRING,
        "outputSchemaHash": SHA256,
        "constraints": FREE_OBJECT,
        "verifiedEvidence": Arr(ID, min_items=1, unique=True),
    }
)
AGENT_CARD: Final = Obj(
    {
        "agentId": ID,
        "organizationId": ID,
        "cardVersion": POSITIVE_INTEGER,
        "displayName": text(1, 200),
        "owner": ACTOR,
        "status": Enum.of(AgentStatus),
        "protocolVersions": Arr(PROTOCOL_VERSION_SHAPE, min_items=1, unique=True),
        "endpoints": Arr(ENDPOINT, min_items=1),
        "publicKeys": Arr(PUBLIC_KEY, min_items=1),
        "capabilities": Arr(CAPABILITY_DESCRIPTOR, min_items=1),
        "maxConcurrency": POSITIVE_INTEGER,
        "issuedAt": TIMESTAMP,
        "signature": SIGNATURE,
    },
    {
        "description": text(None, 4000),
        "validUntil": TIMESTAMP,
        "extensions": EXTENSIONS,
    },
)

CAPACITY: Final = Obj(
    {
        "maxSlots": POSITIVE_INTEGER,
        "activeSlots": SAFE_INTEGER,
        "availableSlots": SAFE_INTEGER,
        "queuedItems": SAFE_INTEGER,
    }
)
CAPABILITY_AVAILABILITY: Final = Obj(
    {"capability": CAPABILITY_REF, "status": Enum.of(CapabilityStatus)}
)
PRESENCE_RECORD: Final = Obj(
    {
        "agentId": ID,
        "sessionEpoch": POSITIVE_INTEGER,
        "status": Enum.of(PresenceStatus),
        "capacity": CAPACITY,
        "capabilityAvailability": Arr(CAPABILITY_AVAILABILITY),
        "lastHeartbeat": TIMESTAMP,
        "expiresAt": TIMESTAMP,
    },
    {"estimatedResponseMs": SAFE_INTEGER},
)


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
