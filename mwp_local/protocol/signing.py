"""The six-stage Signed Document Verification Profile of section 6.4, and signing.

Owns the profile table (for each of the nine Signed Document kinds: its schema, its protected
signed-time field and its expected-signer rule, as data), the six verification stages (parse,
schema, signature envelope, key resolution, canonicalization, signature) stopping at the first
failure with the stage's wire code and a stable protected diagnostic, the signing bytes and
signing hash, and ``sign_document`` for the sandbox's own signers.

Verification is pure: no I/O, no clock (durable verification evaluates the key at the protected
signed time), no admission state, no authorization. A ``VerifiedDocument`` says only that the
bound Principal's key signed these bytes; first admission (``admission``) and role checks come
after. The wire message of a failure never says which check failed; ``ProtocolError.stage`` and
``.reason`` carry that for the protected audit record.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, TypeAlias

from . import documents, ed25519
from .b64 import b64url_decode, b64url_encode
from .errors import ErrorCode, ProtocolError
from .hashing import sha256_id
from .jcs import JcsError, canonicalize
from .jsontext import parse_strict
from .registry import (
    ED25519,
    KeyBinding,
    KeyInterval,
    Principal,
    Registry,
    RegistryInvalid,
)
from .timestamps import Timestamp, is_utc_z, parse_timestamp


class Stage(StrEnum):
    """The semantic stages of section 6.4; each value is the bundle's spelling."""

    PARSE = "parse"
    SCHEMA = "schema"
    SIGNATURE_ENVELOPE = "signature-envelope"
    KEY_RESOLUTION = "key-resolution"
    CANONICALIZATION = "canonicalization"
    SIGNATURE = "signature"
    COMPLETE = "complete"


#: The wire code for a failure at each stage (section 6.4, last paragraphs).
STAGE_WIRE_CODE: Final[Mapping[Stage, ErrorCode]] = MappingProxyType(
    {
        Stage.PARSE: ErrorCode.PROTOCOL_VIOLATION,
        Stage.SCHEMA: ErrorCode.SCHEMA_VALIDATION_FAILED,
        Stage.SIGNATURE_ENVELOPE: ErrorCode.AUTH_INVALID_SIGNATURE,
        Stage.KEY_RESOLUTION: ErrorCode.AUTH_INVALID_SIGNATURE,
        Stage.CANONICALIZATION: ErrorCode.PROTOCOL_VIOLATION,
        Stage.SIGNATURE: ErrorCode.AUTH_INVALID_SIGNATURE,
    }
)

_STAGE_RULE: Final[Mapping[Stage, str]] = MappingProxyType(
    {
        Stage.PARSE: "§6.4 stage 1: strict JSON parsing",
        Stage.SCHEMA: "§6.4 stage 2: normative schema",
        Stage.SIGNATURE_ENVELOPE: "§6.4 stage 3: signature envelope and protected time",
        Stage.KEY_RESOLUTION: "§6.4 stage 4: signing-key resolution and validity",
        Stage.CANONICALIZATION: "§6.4 stage 5: RFC 8785 signing bytes",
        Stage.SIGNATURE: "§6.4 stage 6: Ed25519 signature",
    }
)


def _fail(stage: Stage, reason: str, explanation: str) -> ProtocolError:
    return ProtocolError(
        STAGE_WIRE_CODE[stage],
        explanation,
        stage=stage.value,
        reason=reason,
        rule=_STAGE_RULE[stage],
    )


class SignerRule(StrEnum):
    """How a profile names its expected signer (the manifest's ``expectedSigner.rule``)."""

    #: The exact Principal object at ``signer_pointer``.
    PRINCIPAL_OBJECT = "principal-object"
    #: The Agent whose ID is at ``signer_pointer``.
    AGENT_ID = "agent-id"
    #: Any Organization service Principal (Agent Cards; issuer authorization comes later).
    SERVICE_PRINCIPAL = "service-principal"


@dataclass(frozen=True, slots=True, kw_only=True)
class SignedDocumentProfile:
    """One row of the section 6.4 table."""

    #: The profile ID, which is also the First-Admission ``documentKind``.
    profile_id: str
    #: The schema name given to ``documents.validate``.
    schema_name: str
    #: JSON Pointer to the protected signed-time member.
    protected_time_pointer: str
    signer_rule: SignerRule
    #: JSON Pointer to the signer (Principal object or Agent ID); ``None`` for service signers.
    signer_pointer: str | None = None


def _row(
    profile_id: str, time: str, rule: SignerRule, signer: str | None = None
) -> tuple[str, SignedDocumentProfile]:
    return profile_id, SignedDocumentProfile(
        profile_id=profile_id,
        schema_name=profile_id,
        protected_time_pointer=time,
        signer_rule=rule,
        signer_pointer=signer,
    )


_OBJ, _AGENT, _SERVICE = (
    SignerRule.PRINCIPAL_OBJECT,
    SignerRule.AGENT_ID,
    SignerRule.SERVICE_PRINCIPAL,
)

#: The Signed Document Verification Profile table (section 6.4).
PROFILES: Final[Mapping[str, SignedDocumentProfile]] = MappingProxyType(
    dict(
        [
            _row("agent-card", "/issuedAt", _SERVICE),
            _row("approval", "/occurredAt", _OBJ, "/approver"),
            _row("artifact", "/createdAt", _AGENT, "/producer/agentId"),
            _row("command", "/issuedAt", _OBJ, "/actor"),
            _row("context-package", "/generatedAt", _OBJ, "/generatedBy"),
            _row("event", "/occurredAt", _OBJ, "/acceptedBy"),
            _row("evidence", "/createdAt", _OBJ, "/generatedBy"),
            _row("extension-profile", "/approvedAt", _OBJ, "/approvedBy"),
            _row("group-snapshot", "/createdAt", _OBJ, "/createdBy"),
        ]
    )
)


def resolve_pointer(document: Any, pointer: str) -> Any:
    """Resolve an RFC 6901 JSON Pointer; raise ``LookupError`` when it does not resolve."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise LookupError(f"{pointer!r} is not a JSON Pointer")
    value = document
    for token in pointer[1:].split("/"):
        name = token.replace("~1", "/").replace("~0", "~")
        if isinstance(value, dict) and name in value:
            value = value[name]
        elif isinstance(value, list) and name.isdigit() and int(name) < len(value):
            value = value[int(name)]
        else:
            raise LookupError(f"{pointer!r} does not resolve")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectedSigner:
    """Who must hold the key: an exact Principal, or any Principal of one type."""

    principal: Principal | None = None
    principal_type: str | None = None

    def accepts(self, principal: Principal) -> bool:
        """Whether a key bound to ``principal`` may sign under this rule."""
        if self.principal is not None:
            return principal == self.principal
        return principal.type == self.principal_type


def _signer_principal_object(document: Any, pointer: str | None) -> ExpectedSigner:
    value = resolve_pointer(document, pointer or "")
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise LookupError("the signer member is not a Principal object")
    return ExpectedSigner(principal=Principal(type=value["type"], id=value.get("id", "")))


def _signer_agent_id(document: Any, pointer: str | None) -> ExpectedSigner:
    value = resolve_pointer(document, pointer or "")
    if not isinstance(value, str):
        raise LookupError("the signer member is not an Agent ID")
    return ExpectedSigner(principal=Principal(type="agent", id=value))


def _signer_service(document: Any, pointer: str | None) -> ExpectedSigner:
    return ExpectedSigner(principal_type="service")


#: How each signer rule turns a document into its expected signer.
_SIGNER_RULES: Final[Mapping[SignerRule, Callable[[Any, str | None], ExpectedSigner]]] = (
    MappingProxyType(
        {
            SignerRule.PRINCIPAL_OBJECT: _signer_principal_object,
            SignerRule.AGENT_ID: _signer_agent_id,
            SignerRule.SERVICE_PRINCIPAL: _signer_service,
        }
    )
)


def expected_signer(profile: SignedDocumentProfile, document: Any) -> ExpectedSigner:
    """Apply the profile's signer rule to a document (``LookupError`` if it cannot)."""
    try:
        return _SIGNER_RULES[profile.signer_rule](document, profile.signer_pointer)
    except RegistryInvalid as exc:
        raise LookupError(str(exc)) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class RegistryUnavailable:
    """The key-resolution adapter could not supply complete, current Registry evidence."""

    #: A protected diagnostic, e.g. ``registry-unavailable`` or ``registry-incomplete``.
    reason: str = "registry-unavailable"


#: Stage-4 evidence: a validated Registry, a raw Registry fixture (validated at stage 4), or the
#: adapter's typed report that it could not establish the evidence.
RegistryEvidence: TypeAlias = Registry | Mapping[str, Any] | RegistryUnavailable


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedDocument:
    """The result of all six stages: who signed which bytes, and under which key interval."""

    profile: str
    document: dict[str, Any]
    signing_bytes: bytes
    #: ``sha256:<hex>`` of ``signing_bytes``.
    signing_hash: str
    key_id: str
    principal: Principal
    #: The protected signed time, exactly as received.
    protected_time: str
    #: The effective key-validity interval (earliest retained bounds).
    key_interval: KeyInterval
    #: The Organization that scoped the Registry evidence.
    organization_id: str


def unsigned_view(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document with exactly its top-level ``signature`` member omitted."""
    return {name: value for name, value in document.items() if name != "signature"}


def signing_bytes(document: Mapping[str, Any]) -> bytes:
    """JCS bytes of the document without its top-level ``signature`` (raises ``JcsError``)."""
    return canonicalize(unsigned_view(document))


def signing_hash(document: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the signing bytes (the admission log's key)."""
    return sha256_id(signing_bytes(document))


def profile_for(profile_id: str) -> SignedDocumentProfile:
    """The profile row for ``profile_id``; ``KeyError`` for an unknown profile."""
    return PROFILES[profile_id]


def verify_signed_document(
    profile_id: str, data: bytes | str, registry: RegistryEvidence
) -> VerifiedDocument:
    """Run the six stages on received bytes; return the verified result or raise.

    Raises ``ProtocolError`` with the wire code of the first failing stage, ``stage`` set to the
    bundle's stage name and ``reason`` to a stable diagnostic.
    """
    profile = PROFILES[profile_id]
    # Stage 1: parse (jsontext raises PROTOCOL_VIOLATION at stage "parse").
    document = parse_strict(data)
    return verify_parsed(profile, document, registry)


def verify_parsed(
    profile: SignedDocumentProfile, document: Any, registry: RegistryEvidence
) -> VerifiedDocument:
    """Stages 2-6 on a value produced by ``parse_strict`` (stage 1 already passed)."""
    _stage_schema(profile, document)
    signer, parts, protected, deferred = _stage_envelope(profile, document)
    try:
        envelope = document["signature"]
        binding, organization_id = _stage_key_resolution(
            registry, envelope["keyId"], signer, protected
        )
        try:
            message = signing_bytes(document)
        except JcsError as exc:
            raise _fail(
                Stage.CANONICALIZATION,
                "jcs-data-model",
                f"The document holds a value outside the RFC 8785 / I-JSON data model: {exc}",
            ) from None
        if not ed25519.equation_holds(binding.key_bytes, parts, message):
            raise _fail(
                Stage.SIGNATURE, "signature-mismatch", "The Ed25519 signature does not verify."
            )
    except BaseException:
        # A later stage failed: if stage 3's deferred check fails, that is the first failure.
        if deferred is not None:
            _decode_signature(deferred)
        raise
    return VerifiedDocument(
        profile=profile.profile_id,
        document=document,
        signing_bytes=message,
        signing_hash=sha256_id(message),
        key_id=binding.key_id,
        principal=binding.principal,
        protected_time=protected.text,
        key_interval=binding.interval,
        organization_id=organization_id,
    )


@dataclass(frozen=True, slots=True)
class PendingEquation:
    """Stage 6 of a document whose stages 2-5 passed (``verify_stored``): the Ed25519 equation
    over its signing bytes, to evaluate on any thread (libsodium releases the GIL)."""

    public_key: bytes
    parts: ed25519.SignatureParts
    message: bytes

    def holds(self) -> bool:
        """Whether the signature verifies."""
        return ed25519.equation_holds(self.public_key, self.parts, self.message)


def stored_signing_bytes(document: Mapping[str, Any], text: str) -> bytes | None:
    """The signing bytes of a parsed document cut from ``text``, the RFC 8785 text it was stored
    as: the text without its top-level ``signature`` member, no re-encoding. ``None`` when the
    member is not found as canonical text has it (the caller then canonicalizes).

    Canonical text is its members sorted and joined by commas, so removing one member leaves
    the canonical text of the rest. A copy of the member nested deeper cannot be cut instead
    and still verify: it would hold the signature over the bytes that contain it."""
    member = '"signature":' + canonicalize(document["signature"]).decode("utf-8")
    at = text.rfind("," + member)
    if at >= 0:
        cut = text[:at] + text[at + 1 + len(member) :]
    elif text.startswith("{" + member + ","):
        cut = "{" + text[len(member) + 2 :]
    elif text == "{" + member + "}":
        cut = "{}"
    else:
        return None
    return cut.encode("utf-8")


def verify_own_stored(
    profile: SignedDocumentProfile, document: Any, text: str, registry: RegistryEvidence
) -> PendingEquation | None:
    """Stages 3-5 of ``verify_parsed`` on a document read back from the log a store wrote
    itself, with the signing bytes cut from ``text``, its stored RFC 8785 text
    (``stored_signing_bytes``); returns stage 6 to evaluate, or ``None`` when the bytes cannot
    be cut. Stages 1 and 2 (strict parsing, the schema) passed before the store wrote the text;
    the equation then proves ``text`` holds the bytes that were signed.

    A fast path for replaying a log: a raised error, ``None`` or an equation that does not hold
    is not the first failure ``verify_parsed`` would report (stage 3's deferred check is
    skipped), so a caller that meets one runs ``verify_parsed`` for the diagnosis."""
    message = stored_signing_bytes(document, text)
    if message is None:
        return None
    signer, parts, protected, _deferred = _stage_envelope(profile, document)
    binding, _organization_id = _stage_key_resolution(
        registry, document["signature"]["keyId"], signer, protected
    )
    return PendingEquation(binding.key_bytes, parts, message)


def _stage_schema(profile: SignedDocumentProfile, document: Any) -> None:
    try:
        documents.validate(profile.schema_name, document)
    except ProtocolError as exc:
        raise ProtocolError(
            ErrorCode.SCHEMA_VALIDATION_FAILED,
            exc.explanation,
            details=exc.details,
            stage=Stage.SCHEMA.value,
            reason=exc.reason or "schema-invalid",
            rule=exc.rule or _STAGE_RULE[Stage.SCHEMA],
        ) from None
    # The normative schemas require this envelope; re-checking its shape here keeps the later
    # stages safe even if a schema were looser than the profile assumes.
    envelope = document.get("signature") if isinstance(document, dict) else None
    if not isinstance(envelope, dict) or not all(
        isinstance(envelope.get(name), str) for name in ("algorithm", "keyId", "createdAt", "value")
    ):
        raise _fail(
            Stage.SCHEMA, "signature-envelope-shape", "The signature envelope is malformed."
        )
    # The schema requires both timestamps; the profile of section 2 is part of stage 2 for
    # schema-declared timestamps, so a profile failure here is a schema failure.
    for pointer in (profile.protected_time_pointer, "/signature/createdAt"):
        try:
            _parse_time(resolve_pointer(document, pointer))
        except (LookupError, ValueError) as exc:
            raise _fail(Stage.SCHEMA, "timestamp-profile", f"{pointer}: {exc}") from None


@functools.lru_cache(maxsize=4096)
def _parse_time_text(text: str) -> Timestamp:
    return parse_timestamp(text)


def _parse_time(value: object) -> Timestamp:
    """``parse_timestamp``, remembering recent texts: stages 2 and 3 read the same protected
    time, and a batch of documents shares a few (``Timestamp`` is immutable; a refusal is not
    remembered, so it raises afresh with its own message)."""
    return _parse_time_text(value) if type(value) is str else parse_timestamp(value)


def _decode_signature(raw: bytes) -> ed25519.SignatureParts:
    """Every stage-3 check of the signature bytes, as ``ed25519.decode_signature`` makes them."""
    try:
        return ed25519.decode_signature(raw)
    except ed25519.Ed25519Error as exc:
        reason = exc.reason if exc.reason.startswith("signature-") else f"signature-{exc.reason}"
        raise _fail(Stage.SIGNATURE_ENVELOPE, reason, str(exc)) from None


_Y_MASK: Final[int] = (1 << 255) - 1


def _decode_signature_deferred(raw: bytes) -> tuple[ed25519.SignatureParts, bytes | None]:
    """``_decode_signature`` that may leave one check for later: the signature's parts, and the
    raw signature when R's prime-order-subgroup check (a scalar multiplication, about as costly
    as the verification itself) was deferred.

    Deferring it changes no verdict. The cheap checks (length, canonical y, no negative zero,
    ``S < L``) run here, exactly as in ``ed25519.decode_signature``. libsodium's verification
    accepts only when ``Renc`` is byte for byte the encoding of ``[S]B - [k]A``, a point of the
    prime-order subgroup (the Registry admits only such keys ``A``), so a signature that
    verifies has an R that passes the deferred check; when a later stage fails instead,
    ``_verify`` runs the deferred check first and reports it if it fails, so the first failing
    stage is still the one reported.
    """
    if len(raw) == ed25519.SIGNATURE_LENGTH:
        r_encoding = raw[:32]
        r_value = int.from_bytes(r_encoding, "little")
        y = r_value & _Y_MASK
        s = int.from_bytes(raw[32:], "little")
        if y < ed25519.P and not (r_value >> 255 and y in (1, ed25519.P - 1)) and s < ed25519.L:
            parts = ed25519.SignatureParts(r_encoding=r_encoding, s=s)
            return parts, (None if r_encoding == ed25519.IDENTITY_ENCODING else raw)
    return _decode_signature(raw), None


def _stage_envelope(
    profile: SignedDocumentProfile, document: dict[str, Any]
) -> tuple[ExpectedSigner, ed25519.SignatureParts, Timestamp, bytes | None]:
    envelope = document["signature"]
    protected_text = resolve_pointer(document, profile.protected_time_pointer)
    created_at = envelope["createdAt"]
    if not (is_utc_z(protected_text) and is_utc_z(created_at)):
        raise _fail(
            Stage.SIGNATURE_ENVELOPE,
            "protected-time-not-utc-z",
            "The protected signed time and signature.createdAt must use the uppercase Z suffix.",
        )
    if protected_text != created_at:
        raise _fail(
            Stage.SIGNATURE_ENVELOPE,
            "created-at-mismatch",
            "signature.createdAt is not byte-for-byte the protected signed time.",
        )
    if envelope["algorithm"] != ED25519:
        raise _fail(Stage.SIGNATURE_ENVELOPE, "unsupported-algorithm", "Only Ed25519 is v0.1.")
    try:
        signer = expected_signer(profile, document)
    except LookupError as exc:
        raise _fail(Stage.SIGNATURE_ENVELOPE, "expected-signer-unresolved", str(exc)) from None
    try:
        raw = b64url_decode(envelope["value"])
    except ValueError as exc:
        raise _fail(Stage.SIGNATURE_ENVELOPE, "signature-encoding", str(exc)) from None
    parts, deferred = _decode_signature_deferred(raw)
    return signer, parts, _parse_time(protected_text), deferred


def _stage_key_resolution(
    evidence: RegistryEvidence, key_id: str, signer: ExpectedSigner, protected: Timestamp
) -> tuple[KeyBinding, str]:
    stage = Stage.KEY_RESOLUTION
    if isinstance(evidence, RegistryUnavailable):
        raise _fail(stage, evidence.reason, "Registry evidence could not be established.")
    if isinstance(evidence, Registry):
        registry = evidence
    else:
        # Validate the whole Organization-scoped evidence before selecting any key.
        try:
            registry = Registry.from_fixture(evidence)
        except RegistryInvalid as exc:
            raise _fail(stage, exc.reason, f"Registry evidence is invalid: {exc}") from None
    binding = registry.lookup(key_id)
    if binding is None:
        raise _fail(stage, "unknown-key", f"No key {key_id} in the Registry.")
    if not signer.accepts(binding.principal):
        raise _fail(stage, "signer-mismatch", "The key is not bound to the expected signer.")
    if binding.algorithm != ED25519:
        raise _fail(stage, "algorithm-mismatch", "The key is not an Ed25519 key.")
    violation = binding.interval.violation(protected)
    if violation is not None:
        raise _fail(stage, violation, "The key is not valid at the protected signed time.")
    return binding, registry.organization_id


def sign_document(
    profile_id: str,
    unsigned_document: Mapping[str, Any],
    key_pair: ed25519.SigningKeyPair,
    key_id: str,
) -> dict[str, Any]:
    """Return the document with a v0.1 signature envelope added.

    ``createdAt`` is the protected signed time's exact text, which must use the uppercase ``Z``;
    the signature covers the JCS form of the document without a top-level ``signature``. A
    document that already carries a ``signature`` is refused rather than silently re-signed.
    """
    profile = PROFILES[profile_id]
    if "signature" in unsigned_document:
        raise ValueError("the document already has a top-level signature")
    protected = resolve_pointer(unsigned_document, profile.protected_time_pointer)
    if not isinstance(protected, str) or not is_utc_z(protected):
        raise ValueError(f"{profile.protected_time_pointer} must be a UTC timestamp ending in Z")
    _parse_time(protected)
    document = dict(unsigned_document)
    value = b64url_encode(key_pair.sign(canonicalize(document)))
    document["signature"] = {
        "algorithm": ED25519,
        "keyId": key_id,
        "createdAt": protected,
        "value": value,
    }
    return document
