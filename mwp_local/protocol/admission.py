"""First-Admission Records and the Admission Log (section 6.4, after the six stages).

Owns the First-Admission Record value, the typed results an Admission Log adapter returns (found,
authoritative absence, unauthenticated, integrity failure, unavailable, indeterminate, conflict,
failed commit), the small ``AdmissionLog`` interface with an in-memory reference adapter keyed by
``(organizationId, signingHash)``, record validation, and the two flows of section 6.4: first
admission and historical replay. Every failure is ``AUTH_INVALID_SIGNATURE`` with protected stage
``admission`` and one of the bundle's stable reasons.

Both flows start from a ``VerifiedDocument``: the six cryptographic stages must already have
succeeded and are never changed here. This module must not verify signatures, read clocks (the
caller supplies the trusted acceptance context), append Events, execute transitions, or accept a
caller-supplied "trusted" flag in place of the adapter's typed result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Protocol

from . import documents
from .errors import ErrorCode, ProtocolError
from .jcs import JcsError, canonicalize
from .jsontext import parse_strict
from .registry import KeyInterval, Principal, RegistryInvalid
from .signing import VerifiedDocument, unsigned_view
from .timestamps import Timestamp, parse_timestamp

PROTOCOL_VERSION: Final[str] = "0.1"
STAGE: Final[str] = "admission"
_RULE: Final[str] = "§6.4 First-Admission Records"


class Reason(StrEnum):
    """Stable protected diagnostics of the admission stage (the bundle's spellings)."""

    RECORD_MISSING = "record-missing"
    RECORD_BINDING_MISMATCH = "record-binding-mismatch"
    TRUSTED_TIME_OUTSIDE_KEY_INTERVAL = "trusted-time-outside-key-interval"
    MALFORMED_TRUSTED_TIME = "malformed-trusted-time"
    RECORD_CONFLICT = "record-conflict"
    RECORD_SCHEMA_INVALID = "record-schema-invalid"
    LOG_AUTHENTICATION_FAILED = "log-authentication-failed"
    APPEND_INTEGRITY_NOT_ESTABLISHED = "append-integrity-not-established"
    LOG_UNAVAILABLE = "log-unavailable"
    LOG_INDETERMINATE = "log-indeterminate"
    COMMIT_FAILED = "commit-failed"
    EVENT_SELF_ANCHORING = "event-self-anchoring"


def admission_error(reason: Reason, explanation: str) -> ProtocolError:
    """The one error of this layer: wire ``AUTH_INVALID_SIGNATURE``, protected stage/reason."""
    return ProtocolError(
        ErrorCode.AUTH_INVALID_SIGNATURE,
        explanation,
        stage=STAGE,
        reason=reason.value,
        rule=_RULE,
    )


class LookupStatus(StrEnum):
    """What an authoritative lookup of ``(organizationId, signingHash)`` established."""

    FOUND = "found"
    AUTHORITATIVE_ABSENCE = "authoritative-absence"
    UNAUTHENTICATED = "unauthenticated"
    INTEGRITY_FAILED = "integrity-failed"
    UNAVAILABLE = "unavailable"
    INDETERMINATE = "indeterminate"


class AppendStatus(StrEnum):
    """What an atomic append-or-return-existing established."""

    COMMITTED = "committed"
    EXISTING = "existing"
    CONFLICT = "conflict"
    UNAUTHENTICATED = "unauthenticated"
    INTEGRITY_FAILED = "integrity-failed"
    UNAVAILABLE = "unavailable"
    INDETERMINATE = "indeterminate"
    COMMIT_FAILED = "commit-failed"


#: How every unsuccessful adapter status fails closed (one table for lookup and append).
FAILURE_REASON: Final[Mapping[str, Reason]] = MappingProxyType(
    {
        "unauthenticated": Reason.LOG_AUTHENTICATION_FAILED,
        "integrity-failed": Reason.APPEND_INTEGRITY_NOT_ESTABLISHED,
        "unavailable": Reason.LOG_UNAVAILABLE,
        "indeterminate": Reason.LOG_INDETERMINATE,
        "conflict": Reason.RECORD_CONFLICT,
        "commit-failed": Reason.COMMIT_FAILED,
    }
)

_CARRIES_RECORD: Final[frozenset[str]] = frozenset({"found", "committed", "existing"})


def _check_result_shape(status: str, record: bytes | None, service: Principal | None) -> None:
    if (status in _CARRIES_RECORD) != (record is not None and service is not None):
        raise ValueError(
            f"a {status!r} result {'needs' if status in _CARRIES_RECORD else 'cannot carry'} "
            "a record and an authenticated service"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LookupResult:
    """An adapter's typed lookup result; only ``found`` carries the record bytes.

    ``authenticated_service`` is the accepting service identity that the log authenticated
    (a deployment assertion of a successful result, never a caller-supplied flag).
    """

    status: LookupStatus
    record: bytes | None = None
    authenticated_service: Principal | None = None

    def __post_init__(self) -> None:
        _check_result_shape(self.status, self.record, self.authenticated_service)


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """An adapter's typed append-or-return-existing result.

    ``committed`` and ``existing`` carry the authoritative record that now holds the key.
    """

    status: AppendStatus
    record: bytes | None = None
    authenticated_service: Principal | None = None

    def __post_init__(self) -> None:
        _check_result_shape(self.status, self.record, self.authenticated_service)


@dataclass(frozen=True, slots=True, kw_only=True)
class FirstAdmissionRecord:
    """A First-Admission Record (``first-admission-record.schema.json``): exactly nine fields."""

    protocol_version: str = PROTOCOL_VERSION
    admission_record_id: str
    organization_id: str
    document_kind: str
    signing_hash: str
    key_id: str
    principal: Principal
    #: The Organization-assigned trusted acceptance instant; its spelling is retained.
    trusted_accepted_at: Timestamp
    accepted_by: Principal

    @property
    def key(self) -> tuple[str, str]:
        """The logical lookup and append key ``(organizationId, signingHash)``."""
        return self.organization_id, self.signing_hash

    def to_json(self) -> dict[str, Any]:
        """The wire form of the record."""
        return {
            "protocolVersion": self.protocol_version,
            "admissionRecordId": self.admission_record_id,
            "organizationId": self.organization_id,
            "documentKind": self.document_kind,
            "signingHash": self.signing_hash,
            "keyId": self.key_id,
            "principal": self.principal.to_json(),
            "trustedAcceptedAt": self.trusted_accepted_at.text,
            "acceptedBy": self.accepted_by.to_json(),
        }

    def to_bytes(self) -> bytes:
        """The record as canonical JSON bytes (what the in-memory log stores)."""
        return canonicalize(self.to_json())

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> FirstAdmissionRecord:
        """Build from a schema-valid record object (``ValueError`` if it is not)."""
        try:
            return cls(
                protocol_version=value["protocolVersion"],
                admission_record_id=value["admissionRecordId"],
                organization_id=value["organizationId"],
                document_kind=value["documentKind"],
                signing_hash=value["signingHash"],
                key_id=value["keyId"],
                principal=Principal.from_json(value["principal"]),
                trusted_accepted_at=parse_timestamp(value["trustedAcceptedAt"]),
                accepted_by=Principal.from_json(value["acceptedBy"]),
            )
        except (KeyError, TypeError, RegistryInvalid) as exc:
            raise ValueError(f"not a First-Admission Record: {exc}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class TrustedAcceptance:
    """The Organization's trusted acceptance context for one first admission.

    ``trusted_accepted_at`` is the raw text from the Organization's trusted clock; it is checked
    against the timestamp profile when the candidate is prepared.
    """

    admission_record_id: str
    trusted_accepted_at: str
    accepted_by: Principal


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """A successful first admission or historical replay: the validated authoritative record."""

    record: FirstAdmissionRecord
    #: The exact record bytes returned by the log.
    record_bytes: bytes
    #: True only when this call's candidate was newly committed.
    appended: bool


class AdmissionLog(Protocol):
    """The Admission Log adapter seam (section 6.4). Results are typed; nothing else counts."""

    def lookup(self, organization_id: str, signing_hash: str) -> LookupResult:
        """Authoritative lookup of one logical key."""
        ...

    def append_or_return_existing(self, candidate: FirstAdmissionRecord) -> AppendResult:
        """Atomically append ``candidate`` under its key, or return the record already there."""
        ...


class InMemoryAdmissionLog:
    """The reference Admission Log: one Organization's records in memory.

    The log authenticates as ``service``; only services in ``writers`` may append. Each logical
    key holds at most one record, and one ``admissionRecordId`` never names records under two
    keys. The check-and-insert of ``append_or_return_existing`` completes without yielding
    (``dict.setdefault``), which makes it atomic for the sandbox's single writer per log.
    """

    def __init__(self, *, service: Principal, writers: frozenset[Principal] | None = None) -> None:
        self._service = service
        self._writers = writers if writers is not None else frozenset({service})
        self._records: dict[tuple[str, str], bytes] = {}
        self._ids: dict[str, tuple[str, str]] = {}

    @property
    def service(self) -> Principal:
        """The accepting service this log authenticates."""
        return self._service

    def lookup(self, organization_id: str, signing_hash: str) -> LookupResult:
        """Found (with the record) or authoritative absence."""
        record = self._records.get((organization_id, signing_hash))
        if record is None:
            return LookupResult(status=LookupStatus.AUTHORITATIVE_ABSENCE)
        return LookupResult(
            status=LookupStatus.FOUND, record=record, authenticated_service=self._service
        )

    def append_or_return_existing(self, candidate: FirstAdmissionRecord) -> AppendResult:
        """Commit ``candidate`` unless its key is taken; conflicting keys are never replaced."""
        if candidate.accepted_by != self._service or self._service not in self._writers:
            return AppendResult(status=AppendStatus.UNAUTHENTICATED)
        key = candidate.key
        owner = self._ids.setdefault(candidate.admission_record_id, key)
        if owner != key:
            return AppendResult(status=AppendStatus.CONFLICT)
        data = candidate.to_bytes()
        existing = self._records.setdefault(key, data)
        if existing is data:
            return AppendResult(
                status=AppendStatus.COMMITTED, record=data, authenticated_service=self._service
            )
        # Lost to (or retried after) an earlier record: release an identifier it does not use.
        held = FirstAdmissionRecord.from_json(parse_strict(existing))
        if held.admission_record_id != candidate.admission_record_id:
            self._ids.pop(candidate.admission_record_id, None)
        if (held.document_kind, held.key_id, held.principal) != (
            candidate.document_kind,
            candidate.key_id,
            candidate.principal,
        ):
            return AppendResult(status=AppendStatus.CONFLICT)
        return AppendResult(
            status=AppendStatus.EXISTING, record=existing, authenticated_service=self._service
        )

    def __len__(self) -> int:
        return len(self._records)


def _is_self_anchor(value: Any, verified: VerifiedDocument) -> bool:
    """Whether ``value`` is the verified Event itself (same unsigned content, signed)."""
    if verified.profile != "event" or not isinstance(value, dict) or "signature" not in value:
        return False
    try:
        return canonicalize(unsigned_view(value)) == verified.signing_bytes
    except JcsError:
        return False


def _check_interval(interval: KeyInterval, accepted_at: Timestamp) -> None:
    violation = interval.violation(accepted_at)
    if violation is not None:
        raise admission_error(
            Reason.TRUSTED_TIME_OUTSIDE_KEY_INTERVAL,
            f"trustedAcceptedAt {accepted_at.text} is outside the key's interval ({violation}).",
        )


def validate_record(
    record_bytes: bytes, verified: VerifiedDocument, authenticated_service: Principal
) -> FirstAdmissionRecord:
    """Validate a record returned by the log against the six-stage evidence.

    Strict parse, Event self-anchoring refusal, the normative schema, exact equality of
    ``organizationId``, ``documentKind``, ``signingHash``, ``keyId`` and ``principal``,
    ``acceptedBy`` equal to the authenticated service, and ``trustedAcceptedAt`` inside the
    key's half-open interval (earliest retained bounds).
    """
    try:
        value = parse_strict(record_bytes)
    except ProtocolError as exc:
        raise admission_error(Reason.RECORD_SCHEMA_INVALID, f"record: {exc.explanation}") from None
    if _is_self_anchor(value, verified):
        raise admission_error(
            Reason.EVENT_SELF_ANCHORING, "A Signed Event cannot be its own First-Admission Record."
        )
    try:
        documents.validate("first-admission-record", value)
        record = FirstAdmissionRecord.from_json(value)
    except (ProtocolError, ValueError) as exc:
        raise admission_error(Reason.RECORD_SCHEMA_INVALID, f"record: {exc}") from None
    expected = (
        verified.organization_id,
        verified.profile,
        verified.signing_hash,
        verified.key_id,
        verified.principal,
    )
    found = (
        record.organization_id,
        record.document_kind,
        record.signing_hash,
        record.key_id,
        record.principal,
    )
    if found != expected:
        raise admission_error(
            Reason.RECORD_BINDING_MISMATCH,
            "The record's Organization, kind, signing hash, key ID or Principal differs from the "
            "verified document.",
        )
    if record.accepted_by != authenticated_service:
        raise admission_error(
            Reason.LOG_AUTHENTICATION_FAILED,
            "The record's acceptedBy is not the service the Admission Log authenticated.",
        )
    _check_interval(verified.key_interval, record.trusted_accepted_at)
    return record


def prepare_candidate(
    verified: VerifiedDocument, trusted: TrustedAcceptance
) -> FirstAdmissionRecord:
    """Build and check the candidate record for a first admission (no side effects)."""
    try:
        accepted_at = parse_timestamp(trusted.trusted_accepted_at)
    except ValueError as exc:
        raise admission_error(Reason.MALFORMED_TRUSTED_TIME, str(exc)) from None
    _check_interval(verified.key_interval, accepted_at)
    candidate = FirstAdmissionRecord(
        admission_record_id=trusted.admission_record_id,
        organization_id=verified.organization_id,
        document_kind=verified.profile,
        signing_hash=verified.signing_hash,
        key_id=verified.key_id,
        principal=verified.principal,
        trusted_accepted_at=accepted_at,
        accepted_by=trusted.accepted_by,
    )
    try:
        documents.validate("first-admission-record", candidate.to_json())
    except ProtocolError as exc:
        raise admission_error(Reason.RECORD_SCHEMA_INVALID, f"candidate: {exc}") from None
    return candidate


def _fail_closed(status: str, action: str) -> ProtocolError:
    return admission_error(FAILURE_REASON[status], f"Admission Log {action} returned {status}.")


def admit_first(
    verified: VerifiedDocument,
    log: AdmissionLog,
    obtain_trusted: Callable[[], TrustedAcceptance],
) -> Admission:
    """First admission: lookup, then (only on authoritative absence) append-or-return-existing.

    ``obtain_trusted`` is the Organization's trusted-acceptance seam; it is called only after an
    authoritative absence. A found record is validated and returned without append (idempotent
    retry); the record returned by the append, newly committed or concurrently existing, is
    validated before admission completes.
    """
    lookup = log.lookup(verified.organization_id, verified.signing_hash)
    if lookup.status is LookupStatus.FOUND:
        return _accept_found(lookup, verified)
    if lookup.status is not LookupStatus.AUTHORITATIVE_ABSENCE:
        raise _fail_closed(lookup.status, "lookup")
    candidate = prepare_candidate(verified, obtain_trusted())
    appended = log.append_or_return_existing(candidate)
    if appended.status not in (AppendStatus.COMMITTED, AppendStatus.EXISTING):
        raise _fail_closed(appended.status, "append")
    assert appended.record is not None and appended.authenticated_service is not None
    record = validate_record(appended.record, verified, appended.authenticated_service)
    return Admission(
        record=record,
        record_bytes=appended.record,
        appended=appended.status is AppendStatus.COMMITTED,
    )


def replay_historical(verified: VerifiedDocument, log: AdmissionLog) -> Admission:
    """Historical replay: a found, valid record is required; nothing is ever appended."""
    lookup = log.lookup(verified.organization_id, verified.signing_hash)
    if lookup.status is LookupStatus.AUTHORITATIVE_ABSENCE:
        raise admission_error(Reason.RECORD_MISSING, "No First-Admission Record anchors it.")
    if lookup.status is not LookupStatus.FOUND:
        raise _fail_closed(lookup.status, "lookup")
    return _accept_found(lookup, verified)


def _accept_found(lookup: LookupResult, verified: VerifiedDocument) -> Admission:
    assert lookup.record is not None and lookup.authenticated_service is not None
    record = validate_record(lookup.record, verified, lookup.authenticated_service)
    return Admission(record=record, record_bytes=lookup.record, appended=False)
