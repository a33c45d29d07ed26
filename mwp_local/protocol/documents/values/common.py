"""The typed values of ``common.schema.json``: the small shared objects every document uses.

Holds :class:`Actor`, :class:`Signature`, :class:`PublicKey`, :class:`CapabilityRef`,
:class:`Budget`, :class:`AcceptanceCriterion`, :class:`ResourceGrant` and :class:`Extension`, and
the :data:`Extensions` field type, each checked against its shape in ``documents.common``. It must
not perform I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from ..common import (
    ACCEPTANCE_CRITERION,
    ACTOR,
    BUDGET,
    CAPABILITY_REF,
    EXTENSION,
    PUBLIC_KEY,
    RESOURCE_GRANT,
    SIGNATURE,
    ActorType,
    EvidenceRequirement,
)
from ..shapes import Shape
from ..wire import WireObject

__all__ = [
    "AcceptanceCriterion",
    "Actor",
    "Budget",
    "CapabilityRef",
    "Extension",
    "Extensions",
    "PublicKey",
    "ResourceGrant",
    "Signature",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Actor(WireObject):
    """An acting principal: its type and identifier."""

    __shape__: ClassVar[Shape] = ACTOR
    __what__: ClassVar[str] = "actor"

    type: ActorType
    id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature(WireObject):
    """An Ed25519 signature over a document's signing bytes (section 6.4)."""

    __shape__: ClassVar[Shape] = SIGNATURE
    __what__: ClassVar[str] = "signature"

    key_id: str
    created_at: str
    value: str
    algorithm: Literal["Ed25519"] = "Ed25519"


@dataclass(frozen=True, slots=True, kw_only=True)
class PublicKey(WireObject):
    """A public key listed in an Agent Card, with its validity window."""

    __shape__: ClassVar[Shape] = PUBLIC_KEY
    __what__: ClassVar[str] = "public key"

    key_id: str
    public_key: str
    valid_from: str
    algorithm: Literal["Ed25519"] = "Ed25519"
    valid_until: str | None = None
    revoked_at: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CapabilityRef(WireObject):
    """A capability identifier pinned to a version."""

    __shape__: ClassVar[Shape] = CAPABILITY_REF
    __what__: ClassVar[str] = "capability reference"

    id: str
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget(WireObject):
    """Hard limits; at least one must be set (a financial limit needs its currency)."""

    __shape__: ClassVar[Shape] = BUDGET
    __what__: ClassVar[str] = "budget"

    currency: str | None = None
    financial_limit: int | float | None = None
    model_token_limit: int | None = None
    tool_call_limit: int | None = None
    compute_seconds_limit: int | None = None
    wall_clock_seconds_limit: int | None = None
    external_side_effect_limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AcceptanceCriterion(WireObject):
    """One criterion of done, and the kinds of Evidence that prove it."""

    __shape__: ClassVar[Shape] = ACCEPTANCE_CRITERION
    __what__: ClassVar[str] = "acceptance criterion"

    criterion_id: str
    description: str
    evidence_required: tuple[EvidenceRequirement, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ResourceGrant(WireObject):
    """Operations allowed on one resource, with optional free-form constraints."""

    __shape__: ClassVar[Shape] = RESOURCE_GRANT
    __what__: ClassVar[str] = "resource grant"

    resource: str
    operations: tuple[str, ...]
    constraints: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Extension(WireObject):
    """One entry of an ``extensions`` object: profile version, criticality, opaque data."""

    __shape__: ClassVar[Shape] = EXTENSION
    __what__: ClassVar[str] = "extension"

    version: str
    critical: bool
    data: Any


#: The field type of every ``extensions`` member: profile URI -> entry.
Extensions = Mapping[str, Extension]
