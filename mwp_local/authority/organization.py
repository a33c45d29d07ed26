"""A sandbox Organization: Principals with keys derived from a seed, its Registry, Agent Cards,
the Extension Profiles it approves, and helpers to sign Commands and documents as any of its
Principals.

Everything is deterministic in the seed: the same seed gives the same keys, the same signatures
and therefore the same log. The private keys are development keys for a local sandbox only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..protocol.b64 import b64url_encode
from ..protocol.ed25519 import SigningKeyPair, derive_seed
from ..protocol.ids import derived_uuid, sandbox_organization_id
from ..protocol.jcs import canonicalize
from ..protocol.profiles import PROFILES
from ..protocol.registry import KeyBinding, Principal, Registry
from ..protocol.signing import sign_document
from ..protocol.timestamps import parse_timestamp
from .context import Identity

KEYS_VALID_FROM = "2020-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """A Principal of the Organization with its signing key (a development key)."""

    type: str
    id: str
    key_id: str
    key_pair: SigningKeyPair
    #: The Organization that holds this Principal: the scope of the identifiers it derives.
    organization_id: str
    capabilities: tuple[tuple[str, str], ...] = ()
    max_concurrency: int = 1

    @property
    def actor(self) -> dict[str, str]:
        """The actor object naming this Principal."""
        return {"type": self.type, "id": self.id}

    @property
    def public_key(self) -> str:
        """The base64url public key."""
        return b64url_encode(self.key_pair.public_key)

    def binding(self) -> KeyBinding:
        """This Principal's Registry binding."""
        return KeyBinding(
            key_id=self.key_id,
            principal=Principal(type=self.type, id=self.id),
            algorithm="Ed25519",
            public_key=self.public_key,
            valid_from=parse_timestamp(KEYS_VALID_FROM),
        )


def _member(seed: int, organization_id: str, kind: str, name: str, **extra: Any) -> Member:
    principal = f"urn:missionweaveprotocol:{kind}:{name}"
    return Member(
        type=kind,
        id=principal,
        key_id=f"urn:missionweaveprotocol:key:{kind}-{name}",
        key_pair=SigningKeyPair.from_seed(derive_seed(seed, principal)),
        organization_id=organization_id,
        **extra,
    )


@dataclass
class Organization:
    """The Principals of one sandbox Organization, all keyed from ``seed``; its ID is the scope
    of every identifier the sandbox derives (``protocol.ids.sandbox_organization_id``)."""

    seed: int
    organization_id: str
    members: dict[str, Member] = field(default_factory=dict)

    @classmethod
    def create(
        cls,
        seed: int,
        *,
        humans: Iterable[str] = ("mission-owner",),
        agents: Mapping[str, Mapping[str, Any]] | None = None,
        organization_id: str | None = None,
    ) -> Organization:
        """An Organization with the Group Authority, a control plane, humans and Agents.

        ``agents`` maps an Agent name to ``{"capabilities": [(id, version), ...],
        "max_concurrency": n}``. ``organization_id`` defaults to the seed's own (a sandbox
        without a mission, ``sandbox_organization_id(seed)``).
        """
        org_id = organization_id or sandbox_organization_id(seed)
        org = cls(seed=seed, organization_id=org_id)
        org.add(_member(seed, org_id, "service", "group-authority"))
        org.add(_member(seed, org_id, "service", "control-plane"))
        for name in humans:
            org.add(_member(seed, org_id, "human", name))
        for name, spec in (agents or {}).items():
            org.add(
                _member(
                    seed,
                    org_id,
                    "agent",
                    name,
                    capabilities=tuple(tuple(c) for c in spec.get("capabilities", ())),
                    max_concurrency=int(spec.get("max_concurrency", 1)),
                )
            )
        return org

    def add(self, member: Member) -> Member:
        """Add a Principal."""
        self.members[member.id] = member
        return member

    def get(self, name_or_id: str) -> Member:
        """A Principal by full ID or by short name (``coordinator``, ``mission-owner``)."""
        if name_or_id in self.members:
            return self.members[name_or_id]
        matches = [m for m in self.members.values() if m.id.rsplit(":", 1)[-1] == name_or_id]
        if len(matches) != 1:
            raise KeyError(f"no unique Principal named {name_or_id!r}")
        return matches[0]

    @property
    def authority(self) -> Member:
        """The Group Authority service."""
        return self.get("group-authority")

    @property
    def control_plane(self) -> Member:
        """The Organization control plane (Registry and identity service)."""
        return self.get("control-plane")

    def identity(self) -> Identity:
        """The Group Authority's identity."""
        return Identity(
            organization_id=self.organization_id,
            authority_id=self.authority.id,
            authority_key_id=self.authority.key_id,
            control_services=frozenset({self.control_plane.id, self.authority.id}),
            profiles=tuple(sorted(PROFILES)),
        )

    def registry(self) -> Registry:
        """The Registry before any Agent Card is registered: services and humans."""
        bindings = [m.binding() for m in self.members.values() if m.type != "agent"]
        return Registry(organization_id=self.organization_id, bindings=tuple(bindings))

    def agents(self) -> list[Member]:
        """The Agents, in ID order."""
        return sorted((m for m in self.members.values() if m.type == "agent"), key=lambda m: m.id)

    # ------------------------------------------------------------------ documents

    def agent_card(self, agent: Member, *, version: int = 1, issued_at: str) -> dict[str, Any]:
        """The Agent's Organization-signed Agent Card."""
        card = {
            "agentId": agent.id,
            "organizationId": self.organization_id,
            "cardVersion": version,
            "displayName": agent.id.rsplit(":", 1)[-1],
            "owner": self.control_plane.actor,
            "status": "active",
            "protocolVersions": ["0.1"],
            "endpoints": [
                {"transport": "wss", "uri": f"wss://sandbox.invalid/{agent.id.rsplit(':', 1)[-1]}"}
            ],
            "publicKeys": [
                {
                    "keyId": agent.key_id,
                    "algorithm": "Ed25519",
                    "publicKey": agent.public_key,
                    "validFrom": KEYS_VALID_FROM,
                }
            ],
            "capabilities": [
                {
                    "id": cap,
                    "version": version_,
                    "inputSchema": f"urn:mwp-local:schema:{cap}:input",
                    "inputSchemaHash": "sha256:" + "0" * 64,
                    "outputSchema": f"urn:mwp-local:schema:{cap}:output",
                    "outputSchemaHash": "sha256:" + "0" * 64,
                    "constraints": {},
                    "verifiedEvidence": [f"urn:mwp-local:evidence:capability:{cap}:{version_}"],
                }
                for cap, version_ in agent.capabilities
            ],
            "maxConcurrency": agent.max_concurrency,
            "issuedAt": issued_at,
        }
        return sign_document(
            "agent-card", card, self.control_plane.key_pair, self.control_plane.key_id
        )

    def extension_profiles(self) -> list[dict[str, Any]]:
        """The Extension Profiles this Organization approves (§18): each sandbox profile, signed
        by the control plane as Organization policy, in URI order."""
        plane = self.control_plane
        return [
            self.sign(
                "extension-profile",
                plane,
                PROFILES[uri].unsigned_document(
                    approved_by=plane.actor, approved_at=KEYS_VALID_FROM
                ),
            )
            for uri in sorted(PROFILES)
        ]

    def sign(
        self, profile: str, member: Member | str, document: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Sign any Signed Document as ``member``."""
        who = self.get(member) if isinstance(member, str) else member
        return sign_document(profile, dict(document), who.key_pair, who.key_id)

    def command(
        self,
        member: Member | str,
        kind: str,
        payload: Mapping[str, Any],
        *,
        issued_at: str,
        group_id: str | None = None,
        session_epoch: int | None = None,
        membership_epoch: int | None = None,
        coordinator_epoch: int | None = None,
        expected_revision: int | None = None,
        action_id: str | None = None,
        correlation_id: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> bytes:
        """A signed Command as the bytes a client would send."""
        who = self.get(member) if isinstance(member, str) else member
        doc: dict[str, Any] = {
            "protocolVersion": "0.1",
            "actionId": action_id
            or derived_uuid(
                self.organization_id, who.id, kind, issued_at, canonicalize(dict(payload)).decode()
            ),
            "actor": who.actor,
            "kind": kind,
            "correlationId": correlation_id
            or derived_uuid(self.organization_id, "correlation", who.id, issued_at),
            "issuedAt": issued_at,
            "payload": dict(payload),
        }
        optional = {
            "groupId": group_id,
            "sessionEpoch": session_epoch,
            "membershipEpoch": membership_epoch,
            "coordinatorEpoch": coordinator_epoch,
            "expectedRevision": expected_revision,
        }
        doc.update({k: v for k, v in optional.items() if v is not None})
        doc.update(extra or {})
        return canonicalize(self.sign("command", who, doc))


# ---------------------------------------------------------------------- persistence

DEV_KEY_WARNING = (
    "DEVELOPMENT KEYS FOR A LOCAL SANDBOX ONLY. Every private key here is derived from the "
    "sandbox seed and is NOT secret. Never use them outside mwp_local."
)


def organization_to_json(org: Organization) -> dict[str, Any]:
    """The public description of an Organization (no private keys): its Principals and the
    Extension Profiles it approves (derived again from the seed when it is read back)."""
    return {
        "organizationId": org.organization_id,
        "seed": org.seed,
        "members": [
            {
                "type": m.type,
                "id": m.id,
                "keyId": m.key_id,
                "publicKey": m.public_key,
                "capabilities": [list(c) for c in m.capabilities],
                "maxConcurrency": m.max_concurrency,
            }
            for m in sorted(org.members.values(), key=lambda m: m.id)
        ],
        "extensionProfiles": org.extension_profiles(),
    }


def organization_from_json(doc: Mapping[str, Any]) -> Organization:
    """Rebuild an Organization (keys derived again from the seed, then checked)."""
    seed = int(doc["seed"])
    org = Organization(seed=seed, organization_id=doc["organizationId"])
    for m in doc["members"]:
        member = Member(
            type=m["type"],
            id=m["id"],
            key_id=m["keyId"],
            key_pair=SigningKeyPair.from_seed(derive_seed(seed, m["id"])),
            organization_id=org.organization_id,
            capabilities=tuple(tuple(c) for c in m.get("capabilities", ())),
            max_concurrency=int(m.get("maxConcurrency", 1)),
        )
        if member.public_key != m["publicKey"]:
            raise ValueError(f"the key of {m['id']} does not match the seed")
        org.add(member)
    return org
