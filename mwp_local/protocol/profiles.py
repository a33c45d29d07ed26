"""The Extension Profiles this sandbox defines (§18), as data.

The protocol's own vocabulary is the core kinds and the reference core's
``ext.missionweaveprotocol.*`` kinds; everything the sandbox adds lives in the namespace of the
``mwp-local`` Organization that defines it, declared by a profile:

* ``SANDBOX_PROFILE`` (critical): the kinds the sandbox invents, ``ext.mwp-local.sandbox.*``:
  a lease that ran out (``lease_expired``, caused by a timer), and reusable knowledge and
  cross-Group forwarding (``knowledge_*``; §1 leaves a knowledge API out of the protocol). A
  reader that ignored these Events would fold a wrong state (a lease still live, a disclosure
  unrecorded), hence critical.
* ``SCHEDULING_PROFILE`` (noncritical): the Work Contract entry in which a Coordinator gives the
  Scheduler a content-free impact rank.
* ``CONTEXT_PROVENANCE_PROFILE`` (noncritical): the Context Package entry that binds an update
  to the exact previous version.

Each ``ProfileDefinition`` carries its URI, semantic version, the JSON Schema of its data (the
payloads of its Commands and Events, or its extension entry's ``data``) and that schema's
``sha256:`` over RFC 8785 bytes, its required capabilities, its criticality and its kinds.
``unsigned_document`` is the ``extension-profile`` document an Organization approves by signing
it (``authority.organization``); ``pin`` is the ``pinnedProfiles`` entry of a Mission that uses
it. A profile is one definition wherever it is used: every sandbox Organization approves the
same profile URI and version. Pure data: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from .documents.kinds import SANDBOX_NAMESPACE, ExtensionCommandKind, ExtensionEventKind
from .hashing import sha256_id
from .jcs import canonicalize

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_ID = {"type": "string", "format": "uri"}
_HASH = {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"}
_TEXT = {"type": "string", "minLength": 1}
_ACTOR = {
    "type": "object",
    "required": ["type", "id"],
    "properties": {"type": {"enum": ["agent", "human", "service"]}, "id": _ID},
}
_PERMISSION = {
    "type": "object",
    "required": ["basis", "grantedBy"],
    "properties": {
        "basis": {"enum": ["mission_owner", "organization_policy"]},
        "grantedBy": _ACTOR,
    },
}
_CLASSIFICATION = {"enum": ["public", "internal", "confidential", "restricted"]}
_PROVENANCE = {
    "type": "object",
    "required": ["artifactId", "producer", "missionId", "groupId", "workItemId"],
    "properties": {"artifactId": _ID, "missionId": _ID, "groupId": _ID, "workItemId": _ID},
}


def _payload(required: Mapping[str, Any], **optional: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": sorted(required),
        "properties": {**required, **optional},
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileDefinition:
    """One Extension Profile: what §18 says a profile declares, short of the approval."""

    uri: str
    name: str
    version: str
    critical: bool
    schema: Mapping[str, Any]
    command_kinds: tuple[str, ...] = ()
    event_kinds: tuple[str, ...] = ()
    required_capabilities: tuple[tuple[str, str], ...] = ()
    _hash: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for kind in (*self.command_kinds, *self.event_kinds):
            if not kind.startswith("ext."):
                raise ValueError(f"profile {self.uri}: {kind} is not an extension kind")
        object.__setattr__(self, "_hash", sha256_id(canonicalize(dict(self.schema))))

    @property
    def major(self) -> int:
        """The major version a Group pins."""
        return int(self.version.split(".", 1)[0])

    @property
    def schema_uri(self) -> str:
        """Where the profile's schema is named (its ``$id``)."""
        return str(self.schema["$id"])

    @property
    def schema_hash(self) -> str:
        """``sha256:`` of the schema's RFC 8785 bytes."""
        return self._hash

    def pin(self) -> dict[str, Any]:
        """The ``pinnedProfiles`` entry of a Mission whose Group uses this profile."""
        return {"profileUri": self.uri, "majorVersion": self.major}

    def unsigned_document(
        self, *, approved_by: Mapping[str, str], approved_at: str
    ) -> dict[str, Any]:
        """The ``extension-profile`` document, ready for the approving Organization's signature."""
        return {
            "profileUri": self.uri,
            "name": self.name,
            "version": self.version,
            "schemaUri": self.schema_uri,
            "schemaHash": self.schema_hash,
            "requiredCapabilities": [
                {"id": cap, "version": version} for cap, version in self.required_capabilities
            ],
            "critical": self.critical,
            "commandKinds": list(self.command_kinds),
            "eventKinds": list(self.event_kinds),
            "overridesCoreInvariants": False,
            "approvedBy": dict(approved_by),
            "approvedAt": approved_at,
        }


XC = ExtensionCommandKind
XE = ExtensionEventKind

#: The kinds the sandbox invents, each with the schema of its payload.
_SANDBOX_PAYLOADS: Mapping[str, dict[str, Any]] = {
    XC.KNOWLEDGE_PUBLISH: _payload(
        {"artifactHash": _HASH, "classification": _CLASSIFICATION, "reason": _TEXT}
    ),
    XC.KNOWLEDGE_FORWARD: _payload({"artifactHash": _HASH, "targetGroupId": _ID, "reason": _TEXT}),
    XE.LEASE_EXPIRED: _payload(
        {
            "missionId": _ID,
            "leaseId": _ID,
            "leaseType": {"enum": ["coordinator", "ownership", "execution", "blocked"]},
            "holderAgentId": _ID,
            "leases": {"type": "array", "minItems": 1},
        },
        workItemId={"anyOf": [_ID, {"type": "null"}]},
    ),
    XE.KNOWLEDGE_PUBLISHED: _payload(
        {
            "missionId": _ID,
            "workItemId": _ID,
            "artifactHash": _HASH,
            "classification": _CLASSIFICATION,
            "approvedBy": _ACTOR,
            "reason": _TEXT,
            "provenance": _PROVENANCE,
        }
    ),
    XE.KNOWLEDGE_FORWARDED: _payload(
        {
            "missionId": _ID,
            "artifactHash": _HASH,
            "artifactId": _ID,
            "classification": _CLASSIFICATION,
            "targetGroupId": _ID,
            "targetMissionId": _ID,
            "permission": _PERMISSION,
            "reason": _TEXT,
        }
    ),
    XE.KNOWLEDGE_RECEIVED: _payload(
        {
            "missionId": _ID,
            "artifactHash": _HASH,
            "sourceGroupId": _ID,
            "forwardedEventId": _ID,
            "permission": _PERMISSION,
            "reason": _TEXT,
            "provenance": _PROVENANCE,
        }
    ),
}

SANDBOX_PROFILE: Final = ProfileDefinition(
    uri="urn:mwp-local:extension:sandbox",
    name="mwp-local sandbox: lease expiry and reusable knowledge",
    version="1.0.0",
    critical=True,
    schema={
        "$schema": _DRAFT,
        "$id": "urn:mwp-local:schema:extension:sandbox:1.0.0",
        "title": "Payloads of the ext.mwp-local.sandbox.* Commands and Events, by kind",
        "$defs": {str(kind): schema for kind, schema in _SANDBOX_PAYLOADS.items()},
    },
    command_kinds=tuple(str(k) for k in XC if k.startswith(SANDBOX_NAMESPACE)),
    event_kinds=tuple(str(k) for k in XE if k.startswith(SANDBOX_NAMESPACE)),
)

SCHEDULING_PROFILE: Final = ProfileDefinition(
    uri="urn:mwp-local:extension:scheduling",
    name="mwp-local scheduling hint: a content-free impact rank",
    version="1.0.0",
    critical=False,
    schema={
        "$schema": _DRAFT,
        "$id": "urn:mwp-local:schema:extension:scheduling:1.0.0",
        "title": "Work Contract extension data: the Coordinator's impact rank for Schedulers",
        "type": "object",
        "properties": {"impactRank": {"type": "integer", "minimum": 0, "maximum": 9}},
    },
)

CONTEXT_PROVENANCE_PROFILE: Final = ProfileDefinition(
    uri="urn:mwp-local:extension:context-package-provenance",
    name="mwp-local Context Package provenance: the exact previous version",
    version="1.0.0",
    critical=False,
    schema={
        "$schema": _DRAFT,
        "$id": "urn:mwp-local:schema:extension:context-package-provenance:1.0.0",
        "title": "Context Package extension data: the previous version and its signing hash",
        "type": "object",
        "required": ["previousVersion", "previousSigningHash"],
        "properties": {
            "previousVersion": {"type": "integer", "minimum": 1},
            "previousSigningHash": _HASH,
        },
    },
)

#: Every profile the sandbox defines, by URI.
PROFILES: Mapping[str, ProfileDefinition] = MappingProxyType(
    {p.uri: p for p in (SANDBOX_PROFILE, SCHEDULING_PROFILE, CONTEXT_PROVENANCE_PROFILE)}
)


def payload_schema(kind: str) -> Mapping[str, Any]:
    """The schema of the payload of a Command or Event of the sandbox profile."""
    return _SANDBOX_PAYLOADS[kind]


__all__ = [
    "CONTEXT_PROVENANCE_PROFILE",
    "PROFILES",
    "SANDBOX_PROFILE",
    "SCHEDULING_PROFILE",
    "ProfileDefinition",
    "payload_schema",
]
