"""``agent-card.schema.json`` and ``presence-record.schema.json`` (sections 6.1 and 6.2).

Owns the shapes and status vocabularies of the signed Agent Card (identity, endpoints, keys,
and the declared capabilities with their schema hashes and verified Evidence) and of the Presence
Record (session, capacity, per-capability availability). Agent Cards carry no permissions and
Presence Records no credentials: both are closed objects. It must not perform I/O or decide trust.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

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
    text,
)
from .formats import URI
from .shapes import Const, Enum, Str
from .structures import FREE_OBJECT, Arr, Obj

__all__ = [
    "AGENT_CARD",
    "PRESENCE_RECORD",
    "AgentStatus",
    "CapabilityStatus",
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
