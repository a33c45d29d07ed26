"""The Registry of signing-key bindings for one Organization (section 6.4).

Owns the immutable binding of a key ID to one Principal, one algorithm and one public key; the
append-only validity history of each binding (``validUntil`` / ``revokedAt`` may be added or
moved earlier, never cleared or moved later; the effective value is the earliest); the
Organization-wide invariants (no key-ID reuse, no public-key reuse under another Principal or key
ID, no key-ID alias of one (Principal, algorithm, key) tuple); the half-open key-validity interval;
and the cryptography bundle's Registry fixture format, read (``Registry.from_fixture``) and
written (``Registry.to_fixture``).

Every value is validated when it is built, so a ``Registry`` that exists is complete, coherent
evidence: every identifier is a protocol ID, every public key is strictly decoded, every timestamp
satisfies the profile. Reading evidence that breaks any rule raises ``RegistryInvalid`` with a
stable ``reason``, whichever binding is at fault (an invalid unrelated binding fails too); the
verifier turns that into a stage-4 failure. The sandbox's administrative operations
(``register``, ``append_validity``) return a new Registry or raise ``ProtocolError``
(``INVALID_COMMAND``). This module must not verify signatures, read files or clocks, or decide
which key a document needs: that is ``signing``'s job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final

from . import ed25519
from .b64 import b64url_decode
from .errors import ErrorCode, ProtocolError
from .ids import is_protocol_id
from .timestamps import Timestamp, parse_timestamp

#: Principal types that may hold signing keys (the common actor shape).
PRINCIPAL_TYPES: Final[frozenset[str]] = frozenset({"agent", "human", "service"})
#: The only signature algorithm of v0.1.
ED25519: Final[str] = "Ed25519"
SUPPORTED_ALGORITHMS: Final[frozenset[str]] = frozenset({ED25519})

_MAX_SAFE_INTEGER: Final[int] = 2**53 - 1


class RegistryInvalid(ValueError):
    """Registry evidence or a binding breaks a section 6.4 rule; ``reason`` is stable."""

    def __init__(self, reason: str, explanation: str) -> None:
        super().__init__(f"{reason}: {explanation}")
        self.reason = reason
        self.explanation = explanation


@dataclass(frozen=True, slots=True, kw_only=True)
class Principal:
    """A Principal in the common actor shape: ``type`` and an absolute protocol ``id``."""

    type: str
    id: str

    def __post_init__(self) -> None:
        if self.type not in PRINCIPAL_TYPES:
            raise RegistryInvalid("principal-type-invalid", f"unknown Principal type {self.type!r}")
        if not is_protocol_id(self.id):
            raise RegistryInvalid(
                "principal-id-invalid", f"Principal ID {self.id!r} is not a protocol ID"
            )

    @classmethod
    def from_json(cls, value: Any) -> Principal:
        """Build from ``{"type": ..., "id": ...}``; raise ``RegistryInvalid`` otherwise."""
        if not isinstance(value, Mapping) or set(value) != {"type", "id"}:
            raise RegistryInvalid("principal-shape-invalid", "a Principal is {type, id}")
        if not isinstance(value["type"], str) or not isinstance(value["id"], str):
            raise RegistryInvalid("principal-shape-invalid", "Principal members are strings")
        return cls(type=value["type"], id=value["id"])

    def to_json(self) -> dict[str, str]:
        """The wire form ``{"type": ..., "id": ...}``."""
        return {"type": self.type, "id": self.id}


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyInterval:
    """The effective validity of a key: ``validFrom <= t``, ``t < validUntil``, ``t < revokedAt``.

    Both upper bounds are exclusive and optional; instants are compared exactly, never lexically.
    """

    valid_from: Timestamp
    valid_until: Timestamp | None = None
    revoked_at: Timestamp | None = None

    def violation(self, t: Timestamp) -> str | None:
        """Why ``t`` lies outside the interval (a stable reason), or ``None`` when inside."""
        if t.instant < self.valid_from.instant:
            return "key-not-yet-valid"
        if self.revoked_at is not None and t.instant >= self.revoked_at.instant:
            return "key-revoked"
        if self.valid_until is not None and t.instant >= self.valid_until.instant:
            return "key-expired"
        return None

    def contains(self, t: Timestamp) -> bool:
        """Whether the key is valid at ``t`` (half-open boundaries)."""
        return self.violation(t) is None


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidityRecord:
    """One append-only validity-status record: adds or moves earlier an upper bound."""

    sequence: int
    recorded_at: Timestamp
    valid_until: Timestamp | None = None
    revoked_at: Timestamp | None = None

    def __post_init__(self) -> None:
        if isinstance(self.sequence, bool) or not 1 <= self.sequence <= _MAX_SAFE_INTEGER:
            raise RegistryInvalid(
                "validity-history-invalid", "a status sequence is a positive safe integer"
            )
        if self.valid_until is None and self.revoked_at is None:
            raise RegistryInvalid(
                "validity-history-invalid",
                f"status record {self.sequence} sets neither validUntil nor revokedAt",
            )

    @classmethod
    def from_fixture(cls, value: Any) -> ValidityRecord:
        """Build from a fixture status object; raise ``RegistryInvalid`` otherwise."""
        allowed = {"sequence", "recordedAt", "validUntil", "revokedAt"}
        if (
            not isinstance(value, Mapping)
            or not {"sequence", "recordedAt"} <= set(value) <= allowed
            or not isinstance(value["sequence"], int)
        ):
            raise RegistryInvalid("validity-history-invalid", "malformed validity-status record")
        return cls(
            sequence=value["sequence"],
            recorded_at=_timestamp(value["recordedAt"], "recordedAt"),
            valid_until=_optional_timestamp(value, "validUntil"),
            revoked_at=_optional_timestamp(value, "revokedAt"),
        )

    def to_fixture(self) -> dict[str, Any]:
        """The fixture form, with the original timestamp spellings."""
        out: dict[str, Any] = {"sequence": self.sequence, "recordedAt": self.recorded_at.text}
        if self.valid_until is not None:
            out["validUntil"] = self.valid_until.text
        if self.revoked_at is not None:
            out["revokedAt"] = self.revoked_at.text
        return out


def _timestamp(value: Any, name: str) -> Timestamp:
    try:
        return parse_timestamp(value)
    except ValueError as exc:
        raise RegistryInvalid("validity-timestamp-malformed", f"{name}: {exc}") from None


def _optional_timestamp(value: Mapping[str, Any], name: str) -> Timestamp | None:
    return _timestamp(value[name], name) if name in value else None


def _earlier(current: Timestamp | None, new: Timestamp) -> Timestamp:
    return new if current is None or new.instant < current.instant else current


def _check_history(history: tuple[ValidityRecord, ...]) -> tuple[Timestamp | None, ...]:
    """Check append-only order and monotonic bounds; return effective (validUntil, revokedAt)."""
    valid_until: Timestamp | None = None
    revoked_at: Timestamp | None = None
    previous: ValidityRecord | None = None
    for index, record in enumerate(history, start=1):
        if record.sequence != index:
            raise RegistryInvalid(
                "validity-history-invalid",
                f"status sequence {record.sequence} found where {index} was expected "
                "(history must be complete and in order)",
            )
        if previous is not None and record.recorded_at.instant < previous.recorded_at.instant:
            raise RegistryInvalid(
                "validity-history-invalid", f"status record {index} is recorded before its parent"
            )
        for new, current, name in (
            (record.valid_until, valid_until, "validUntil"),
            (record.revoked_at, revoked_at, "revokedAt"),
        ):
            if new is not None and current is not None and new.instant > current.instant:
                raise RegistryInvalid(
                    "validity-moved-later",
                    f"status record {index} moves {name} later; extending validity needs a new "
                    "key under a new key ID",
                )
        if record.valid_until is not None:
            valid_until = _earlier(valid_until, record.valid_until)
        if record.revoked_at is not None:
            revoked_at = _earlier(revoked_at, record.revoked_at)
        previous = record
    return valid_until, revoked_at


@dataclass(frozen=True, slots=True, kw_only=True)
class KeyBinding:
    """An immutable signing-key binding plus its retained validity history.

    The identity (``key_id``, ``principal``, ``algorithm``, ``public_key``, ``valid_from``) never
    changes; ``validity_history`` only grows. ``public_key`` keeps the registered base64url text;
    ``key_bytes`` is its strictly decoded form.
    """

    key_id: str
    principal: Principal
    algorithm: str
    public_key: str
    valid_from: Timestamp
    validity_history: tuple[ValidityRecord, ...] = ()
    key_bytes: bytes = field(init=False, repr=False, compare=False)
    interval: KeyInterval = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_protocol_id(self.key_id):
            raise RegistryInvalid("key-id-invalid", f"key ID {self.key_id!r} is not a protocol ID")
        if self.algorithm not in SUPPORTED_ALGORITHMS:
            raise RegistryInvalid(
                "algorithm-unsupported", f"algorithm {self.algorithm!r} is not supported"
            )
        try:
            key_bytes = b64url_decode(self.public_key)
        except ValueError as exc:
            raise RegistryInvalid("public-key-encoding-invalid", str(exc)) from None
        try:
            ed25519.check_public_key(key_bytes)
        except ed25519.Ed25519Error as exc:
            raise RegistryInvalid(f"public-key-{exc.reason}", str(exc)) from None
        valid_until, revoked_at = _check_history(tuple(self.validity_history))
        object.__setattr__(self, "validity_history", tuple(self.validity_history))
        object.__setattr__(self, "key_bytes", key_bytes)
        object.__setattr__(
            self,
            "interval",
            KeyInterval(valid_from=self.valid_from, valid_until=valid_until, revoked_at=revoked_at),
        )

    @classmethod
    def from_fixture(cls, value: Any) -> KeyBinding:
        """Build from a fixture binding object; raise ``RegistryInvalid`` otherwise."""
        keys = {"keyId", "principal", "algorithm", "publicKey", "validFrom", "validityHistory"}
        if not isinstance(value, Mapping) or set(value) != keys:
            raise RegistryInvalid("binding-shape-invalid", "malformed signing-key binding")
        for name in ("keyId", "algorithm", "publicKey"):
            if not isinstance(value[name], str):
                raise RegistryInvalid("binding-shape-invalid", f"{name} must be a string")
        history = value["validityHistory"]
        if not isinstance(history, list):
            raise RegistryInvalid("binding-shape-invalid", "validityHistory must be an array")
        return cls(
            key_id=value["keyId"],
            principal=Principal.from_json(value["principal"]),
            algorithm=value["algorithm"],
            public_key=value["publicKey"],
            valid_from=_timestamp(value["validFrom"], "validFrom"),
            validity_history=tuple(ValidityRecord.from_fixture(item) for item in history),
        )

    def to_fixture(self) -> dict[str, Any]:
        """The Registry-fixture form of this binding, with original spellings."""
        return {
            "keyId": self.key_id,
            "principal": self.principal.to_json(),
            "algorithm": self.algorithm,
            "publicKey": self.public_key,
            "validFrom": self.valid_from.text,
            "validityHistory": [record.to_fixture() for record in self.validity_history],
        }

    def same_binding(self, other: KeyBinding) -> bool:
        """Whether ``other`` declares the same immutable binding (history aside)."""
        return (
            self.key_id == other.key_id
            and self.principal == other.principal
            and self.algorithm == other.algorithm
            and self.key_bytes == other.key_bytes
            and self.valid_from.instant == other.valid_from.instant
        )

    def with_record(self, record: ValidityRecord) -> KeyBinding:
        """A copy with ``record`` appended to the history (checked like any binding)."""
        return replace(self, validity_history=(*self.validity_history, record))


def _merge_histories(first: KeyBinding, second: KeyBinding) -> KeyBinding:
    """Merge two declarations of one logical binding; their shared records must agree."""
    records = {record.sequence: record for record in first.validity_history}
    for record in second.validity_history:
        known = records.setdefault(record.sequence, record)
        if known != record:
            raise RegistryInvalid(
                "validity-history-conflict",
                f"two declarations of {first.key_id} disagree on status record {record.sequence}",
            )
    return replace(first, validity_history=tuple(records[s] for s in sorted(records)))


@dataclass(frozen=True, slots=True, kw_only=True)
class Registry:
    """One Organization's complete, validated signing-key Registry (one coherent revision).

    ``bindings`` is kept sorted by key ID, so two Registries with the same content are equal.
    """

    organization_id: str
    bindings: tuple[KeyBinding, ...] = ()
    _by_key_id: Mapping[str, KeyBinding] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_protocol_id(self.organization_id):
            raise RegistryInvalid(
                "organization-id-invalid",
                f"organizationId {self.organization_id!r} is not a protocol ID",
            )
        by_key_id: dict[str, KeyBinding] = {}
        by_public_key: dict[bytes, KeyBinding] = {}
        for binding in self.bindings:
            if not isinstance(binding, KeyBinding):
                raise TypeError("Registry bindings must be KeyBinding values")
            known = by_key_id.get(binding.key_id)
            if known is not None:
                if not known.same_binding(binding):
                    raise RegistryInvalid(
                        "key-id-reuse",
                        f"key ID {binding.key_id} is bound to two different keys or Principals",
                    )
                # A repeated declaration of the identical binding is one logical binding.
                binding = _merge_histories(known, binding)
            other = by_public_key.get(binding.key_bytes)
            if other is not None and other.key_id != binding.key_id:
                alias = (other.principal, other.algorithm) == (binding.principal, binding.algorithm)
                raise RegistryInvalid(
                    "key-id-alias" if alias else "public-key-reuse",
                    f"the public key of {binding.key_id} is already registered as {other.key_id}",
                )
            by_key_id[binding.key_id] = binding
            by_public_key[binding.key_bytes] = binding
        object.__setattr__(self, "bindings", tuple(by_key_id[k] for k in sorted(by_key_id)))
        object.__setattr__(self, "_by_key_id", MappingProxyType(by_key_id))

    @classmethod
    def from_fixture(cls, value: Any) -> Registry:
        """Read and validate a Registry fixture (``registry-fixture.schema.json`` shape).

        Every binding is validated before any can be selected; raise ``RegistryInvalid``.
        """
        if not isinstance(value, Mapping) or set(value) != {"organizationId", "bindings"}:
            raise RegistryInvalid("registry-shape-invalid", "a Registry is {organizationId, …}")
        organization_id, bindings = value["organizationId"], value["bindings"]
        if not isinstance(organization_id, str) or not isinstance(bindings, list):
            raise RegistryInvalid("registry-shape-invalid", "malformed Registry fixture")
        if not is_protocol_id(organization_id):
            raise RegistryInvalid(
                "organization-id-invalid",
                f"organizationId {organization_id!r} is not a protocol ID",
            )
        return cls(
            organization_id=organization_id,
            bindings=tuple(KeyBinding.from_fixture(item) for item in bindings),
        )

    def to_fixture(self) -> dict[str, Any]:
        """This Registry in the fixture format (bindings sorted by key ID)."""
        return {
            "organizationId": self.organization_id,
            "bindings": [binding.to_fixture() for binding in self.bindings],
        }

    def lookup(self, key_id: str) -> KeyBinding | None:
        """The binding registered under ``key_id`` (exact, byte-for-byte), if any."""
        return self._by_key_id.get(key_id)

    def __len__(self) -> int:
        return len(self._by_key_id)

    def register(self, binding: KeyBinding) -> Registry:
        """Return a Registry with ``binding`` added.

        Re-declaring an identical binding is a no-op (its history is merged); key-ID reuse,
        public-key reuse and key-ID aliases raise ``ProtocolError(INVALID_COMMAND)``.
        """
        return self._admin(
            lambda: Registry(
                organization_id=self.organization_id, bindings=(*self.bindings, binding)
            )
        )

    def register_all(self, bindings: Iterable[KeyBinding]) -> Registry:
        """``register`` each binding in turn."""
        registry = self
        for binding in bindings:
            registry = registry.register(binding)
        return registry

    def append_validity(
        self,
        key_id: str,
        *,
        recorded_at: Timestamp,
        valid_until: Timestamp | None = None,
        revoked_at: Timestamp | None = None,
    ) -> Registry:
        """Return a Registry where ``key_id`` gains the next validity-status record.

        A bound may be added or moved earlier; moving it later raises
        ``ProtocolError(INVALID_COMMAND)`` with reason ``validity-moved-later``.
        """
        binding = self._by_key_id.get(key_id)
        if binding is None:
            raise ProtocolError(
                ErrorCode.INVALID_COMMAND,
                f"no signing key is registered under {key_id}",
                reason="unknown-key",
                rule="§6.4 key-validity history",
            )

        def build() -> Registry:
            record = ValidityRecord(
                sequence=len(binding.validity_history) + 1,
                recorded_at=recorded_at,
                valid_until=valid_until,
                revoked_at=revoked_at,
            )
            updated = binding.with_record(record)
            return Registry(
                organization_id=self.organization_id,
                bindings=tuple(updated if b.key_id == key_id else b for b in self.bindings),
            )

        return self._admin(build)

    @staticmethod
    def _admin(build: Callable[[], Registry]) -> Registry:
        try:
            result = build()
        except RegistryInvalid as exc:
            raise ProtocolError(
                ErrorCode.INVALID_COMMAND,
                exc.explanation,
                reason=exc.reason,
                rule="§6.4 signing-key bindings",
            ) from None
        return result
