"""``common.schema.json``: the shared definitions, as shapes.

Owns the shapes every document refers to (identifier, kind, timestamp, safe integers, semver,
base64url, sha256, duration, actors, signature, public key, capability reference, budget,
acceptance criterion, resource grant, classification, extensions) and their vocabularies. It
is a hand transcription of the official definitions; it must not load the schema file or perform
I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, Literal

from .formats import DATE_TIME, URI
from .shapes import ANY, Bool, Const, Enum, Int, Num, Str
from .structures import AnyOf, Arr, Obj, Where

PROTOCOL_VERSION: Final = "0.1"
MAX_SAFE_INTEGER: Final = 9007199254740991

#: The Python field name of wire ``protocolVersion`` is typed with this literal.
ProtocolVersion = Literal["0.1"]

# --------------------------------------------------------------------------- vocabularies


class ActorType(StrEnum):
    """Who acts: an Agent, a human, or an Organization service."""

    AGENT = "agent"
    HUMAN = "human"
    SERVICE = "service"


class EvidenceRequirement(StrEnum):
    """The kinds of Evidence an acceptance criterion can require (section 13.2)."""

    ARTIFACT_INTEGRITY = "artifact_integrity"
    SCHEMA_VALIDATION = "schema_validation"
    DETERMINISTIC_TEST = "deterministic_test"
    BUSINESS_RULE = "business_rule"
    REVIEWER_ASSESSMENT = "reviewer_assessment"
    HUMAN_REVIEW = "human_review"
    POLICY_CHECK = "policy_check"


class Classification(StrEnum):
    """Data classification of an Artifact."""

    PUBLIC = "public"
    INTERNAL = "internal"
    CONFIDENTIAL = "confidential"
    RESTRICTED = "restricted"


# --------------------------------------------------------------------------- $defs

PROTOCOL_VERSION_SHAPE: Final = Const(PROTOCOL_VERSION)

#: ``id``: an absolute URI prefix, only URI characters (which also refuses a final line feed
#: that an end anchor would let through), a valid RFC 3986 URI, at most 512 characters.
ID: Final = Str(
    pattern="^[A-Za-z][A-Za-z0-9+.-]*:",
    forbid="[^A-Za-z0-9._~:/?#\\[\\]@!$&'()*+,;=%-]",
    fmt=URI,
    max_len=512,
    hint="an identifier: an absolute URI starting with a scheme and ':'",
)
KIND: Final = Str(
    pattern="^[a-z][a-z0-9_]*(?:\\.[a-z][a-z0-9_]*)+$",
    max_len=160,
    hint="a dotted lower-case kind such as 'work.progressed'",
)
TIMESTAMP: Final = Str(fmt=DATE_TIME)
SAFE_INTEGER: Final = Int(minimum=0, maximum=MAX_SAFE_INTEGER)
POSITIVE_INTEGER: Final = Int(minimum=1, maximum=MAX_SAFE_INTEGER)
SEMVER: Final = Str(
    pattern=(
        "^(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)"
        "(?:-[0-9A-Za-z.-]+)?(?:\\+[0-9A-Za-z.-]+)?$"
    ),
    max_len=128,
    hint="a semantic version such as '1.2.0'",
)
BASE64URL: Final = Str(
    pattern="^[A-Za-z0-9_-]+$",
    min_len=2,
    max_len=4096,
    hint="unpadded base64url text",
)
SHA256: Final = Str(
    pattern="^sha256:[0-9a-f]{64}$",
    hint="a content hash 'sha256:' followed by 64 lower-case hex digits",
)
DURATION: Final = Str(
    pattern=(
        "^P(?!$)(?:[0-9]+D)?(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\\.[0-9]+)?S)?)?$"
    ),
    max_len=64,
    hint="an ISO 8601 duration in days, hours, minutes and seconds such as 'PT5M'",
)
#: ``{"type": "string", "format": "uri"}`` (a URI that is not an identifier: schema, location).
URI_STRING: Final = Str(fmt=URI)
#: The ``^[a-z0-9]+(?:[.-][a-z0-9]+)+$`` capability identifier.
CAPABILITY_ID: Final = Str(
    pattern="^[a-z0-9]+(?:[.-][a-z0-9]+)+$",
    max_len=200,
    hint="a capability identifier such as 'acme.software.python-implementation'",
)
#: ``^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$``, used for criterion and deliverable identifiers.
LOCAL_ID: Final = Str(
    pattern="^[a-zA-Z0-9][a-zA-Z0-9._-]{0,127}$",
    hint="a local identifier: a letter or digit, then up to 127 of [a-zA-Z0-9._-]",
)
MEDIA_TYPE: Final = Str(
    pattern="^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+-]+$",
    hint="a media type such as 'application/json'",
)


def text(min_len: int | None, max_len: int | None) -> Str:
    """Free text with length bounds."""
    return Str(min_len=min_len, max_len=max_len)


ACTOR: Final = Obj({"type": Enum.of(ActorType), "id": ID})
AGENT_ACTOR: Final = Obj({"type": Const(ActorType.AGENT), "id": ID})
HUMAN_ACTOR: Final = Obj({"type": Const(ActorType.HUMAN), "id": ID})
SIGNATURE: Final = Obj(
    {"algorithm": Const("Ed25519"), "keyId": ID, "createdAt": TIMESTAMP, "value": BASE64URL}
)
PUBLIC_KEY: Final = Obj(
    {"keyId": ID, "algorithm": Const("Ed25519"), "publicKey": BASE64URL, "validFrom": TIMESTAMP},
    {"validUntil": TIMESTAMP, "revokedAt": TIMESTAMP},
)
CAPABILITY_REF: Final = Obj({"id": CAPABILITY_ID, "version": SEMVER})

_LIMITS: Final = (
    "modelTokenLimit",
    "toolCallLimit",
    "computeSecondsLimit",
    "wallClockSecondsLimit",
    "externalSideEffectLimit",
)
BUDGET: Final = Obj(
    optional={
        "currency": Str(pattern="^[A-Z]{3}$", hint="an ISO 4217 currency code such as 'USD'"),
        "financialLimit": Num(minimum=0),
        **{name: SAFE_INTEGER for name in _LIMITS},
    },
    rules=[
        AnyOf(
            Where(required=["financialLimit", "currency"]),
            *(Where(required=[name]) for name in _LIMITS),
            expect=(
                "a budget with at least one limit: financialLimit with currency, "
                + ", ".join(_LIMITS)
            ),
        )
    ],
)
ACCEPTANCE_CRITERION: Final = Obj(
    {
        "criterionId": LOCAL_ID,
        "description": text(1, 4000),
        "evidenceRequired": Arr(Enum.of(EvidenceRequirement), min_items=1, unique=True),
    }
)
RESOURCE_GRANT: Final = Obj(
    {
        "resource": ID,
        "operations": Arr(
            Str(pattern="^[a-z][a-z0-9._:-]*$", max_len=128, hint="a lower-case operation name"),
            min_items=1,
            unique=True,
        ),
    },
    {"constraints": Obj(additional=True)},
)
CLASSIFICATION: Final = Enum.of(Classification)
EXTENSION: Final = Obj({"version": SEMVER, "critical": Bool(), "data": ANY})
EXTENSIONS: Final = Obj(additional=EXTENSION, names=ID)
