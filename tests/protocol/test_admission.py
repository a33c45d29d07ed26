"""First-Admission Records, the Admission Log, first admission and historical replay (§6.4)."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from mwp_local.protocol.admission import (
    FAILURE_REASON,
    AppendResult,
    AppendStatus,
    FirstAdmissionRecord,
    InMemoryAdmissionLog,
    LookupResult,
    LookupStatus,
    TrustedAcceptance,
    admit_first,
    replay_historical,
    validate_record,
)
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.registry import Principal
from mwp_local.protocol.signing import VerifiedDocument, verify_signed_document
from mwp_local.protocol.timestamps import parse_timestamp

from ..conftest import PROTOCOL_ROOT

ADMISSION = Principal(type="service", id="urn:missionweaveprotocol:service:admission")
OTHER_SERVICE = Principal(type="service", id="urn:missionweaveprotocol:service:other")


def read(path: str) -> bytes:
    return (PROTOCOL_ROOT / path).read_bytes()


def registry(name: str = "cryptography/keys/registry-valid.json") -> Any:
    return json.loads(read(name))


def verified(profile: str = "command", registry_path: str | None = None) -> VerifiedDocument:
    data = read(f"cryptography/vectors/signed-documents/valid/{profile}.json")
    evidence = registry(registry_path) if registry_path else registry()
    return verify_signed_document(profile, data, evidence)


def trusted(at: str = "2026-07-15T00:05:00Z", record_id: str = "urn:uuid:r-1") -> Any:
    context = TrustedAcceptance(
        admission_record_id=record_id, trusted_accepted_at=at, accepted_by=ADMISSION
    )
    return lambda: context


def refuse(call: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        call()
    error = caught.value
    assert (error.code, error.stage) == (ErrorCode.AUTH_INVALID_SIGNATURE, "admission")
    return error


class FakeLog:
    """A log adapter returning fixed typed results, counting calls."""

    def __init__(self, lookup: LookupResult, append: AppendResult | None = None) -> None:
        self._lookup, self._append = lookup, append
        self.appends = 0

    def lookup(self, organization_id: str, signing_hash: str) -> LookupResult:
        return self._lookup

    def append_or_return_existing(self, candidate: FirstAdmissionRecord) -> AppendResult:
        self.appends += 1
        assert self._append is not None, "append must not be called"
        return self._append


def found(record: bytes, service: Principal = ADMISSION) -> LookupResult:
    return LookupResult(status=LookupStatus.FOUND, record=record, authenticated_service=service)


ABSENT = LookupResult(status=LookupStatus.AUTHORITATIVE_ABSENCE)


# ---------------------------------------------------------------- the in-memory log


def test_first_admission_appends_a_record_bound_to_the_verified_document() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    doc = verified()
    admission = admit_first(doc, log, trusted())
    assert admission.appended and len(log) == 1
    record = admission.record
    assert (record.organization_id, record.document_kind) == (doc.organization_id, "command")
    assert (record.signing_hash, record.key_id, record.principal) == (
        doc.signing_hash,
        doc.key_id,
        doc.principal,
    )
    assert record.trusted_accepted_at.text == "2026-07-15T00:05:00Z"


def test_retrying_first_admission_returns_the_existing_record_without_append() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    first = admit_first(verified(), log, trusted())
    asked = []

    def never() -> TrustedAcceptance:
        asked.append(True)
        raise AssertionError("trusted context is obtained only after authoritative absence")

    retry = admit_first(verified(), log, never)
    assert not retry.appended and not asked
    assert retry.record == first.record and len(log) == 1


def test_concurrent_winner_with_other_id_and_time_is_accepted_after_validation() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    winner = admit_first(verified(), log, trusted("2026-07-15T00:05:00Z", "urn:uuid:winner"))
    loser = log.append_or_return_existing(
        replace(winner.record, admission_record_id="urn:uuid:loser")
    )
    assert loser.status is AppendStatus.EXISTING
    assert loser.record == winner.record_bytes


def test_record_under_the_same_key_with_another_binding_is_a_conflict() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    winner = admit_first(verified(), log, trusted())
    other = replace(winner.record, admission_record_id="urn:uuid:r-2", key_id="urn:x:other-key")
    assert log.append_or_return_existing(other).status is AppendStatus.CONFLICT


def test_one_admission_record_id_cannot_name_two_logical_keys() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    admit_first(verified("command"), log, trusted(record_id="urn:uuid:same"))
    error = refuse(
        lambda: admit_first(
            verified("context-package"), log, trusted("2026-07-15T01:05:00Z", "urn:uuid:same")
        )
    )
    assert error.reason == "record-conflict"


def test_log_refuses_a_candidate_accepted_by_a_service_it_does_not_authenticate() -> None:
    log = InMemoryAdmissionLog(service=OTHER_SERVICE)
    error = refuse(lambda: admit_first(verified(), log, trusted()))
    assert error.reason == "log-authentication-failed"
    assert len(log) == 0


def test_historical_replay_finds_and_validates_without_appending() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    admit_first(verified(), log, trusted())
    replayed = replay_historical(verified(), log)
    assert not replayed.appended and len(log) == 1


def test_historical_replay_without_a_record_fails_and_appends_nothing() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    assert refuse(lambda: replay_historical(verified(), log)).reason == "record-missing"
    assert len(log) == 0


def test_later_revocation_does_not_invalidate_an_anchored_replay() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    admit_first(verified(), log, trusted("2026-07-15T00:05:00Z"))
    later = verified(registry_path="admission/registries/registry-later-revocation.json")
    assert replay_historical(later, log).record.trusted_accepted_at.text == "2026-07-15T00:05:00Z"


# ---------------------------------------------------------------- trusted time


@pytest.mark.parametrize(
    "at",
    [
        "2026-07-14T23:59:59Z",  # before validFrom
        "2026-07-16T00:00:00Z",  # equal to validUntil (exclusive)
        "2026-07-16T08:00:00+08:00",  # the same instant spelled with an offset
    ],
)
def test_trusted_time_outside_the_key_interval_is_refused_before_append(at: str) -> None:
    log = FakeLog(ABSENT)
    error = refuse(lambda: admit_first(verified(), log, trusted(at)))
    assert error.reason == "trusted-time-outside-key-interval"
    assert log.appends == 0


def test_trusted_time_equal_to_later_revocation_is_refused() -> None:
    doc = verified(registry_path="admission/registries/registry-later-revocation.json")
    error = refuse(lambda: admit_first(doc, FakeLog(ABSENT), trusted("2026-07-15T01:00:00Z")))
    assert error.reason == "trusted-time-outside-key-interval"


def test_trusted_time_may_use_an_offset_and_lowercase_designators() -> None:
    log = InMemoryAdmissionLog(service=ADMISSION)
    admission = admit_first(verified(), log, trusted("2026-07-15t08:05:00+08:00"))
    assert admission.record.trusted_accepted_at.text == "2026-07-15t08:05:00+08:00"


@pytest.mark.parametrize(
    "at", ["not-a-timestamp", "2026-07-15T00:00:60Z", "2026-07-15T00:05:00-00:00"]
)
def test_malformed_trusted_time_is_refused(at: str) -> None:
    error = refuse(lambda: admit_first(verified(), FakeLog(ABSENT), trusted(at)))
    assert error.reason == "malformed-trusted-time"


# ---------------------------------------------------------------- typed adapter failures


@pytest.mark.parametrize(
    "status",
    [s for s in LookupStatus if s not in (LookupStatus.FOUND, LookupStatus.AUTHORITATIVE_ABSENCE)],
)
def test_every_unsuccessful_lookup_fails_closed(status: LookupStatus) -> None:
    log = FakeLog(LookupResult(status=status))
    for flow in (
        lambda: admit_first(verified(), log, trusted()),
        lambda: replay_historical(verified(), log),
    ):
        assert refuse(flow).reason == FAILURE_REASON[status]
    assert log.appends == 0


@pytest.mark.parametrize(
    "status", [s for s in AppendStatus if s not in (AppendStatus.COMMITTED, AppendStatus.EXISTING)]
)
def test_every_unsuccessful_append_fails_closed(status: AppendStatus) -> None:
    log = FakeLog(ABSENT, AppendResult(status=status))
    assert refuse(lambda: admit_first(verified(), log, trusted())).reason == FAILURE_REASON[status]


def test_typed_results_must_carry_exactly_what_their_status_implies() -> None:
    with pytest.raises(ValueError):
        LookupResult(status=LookupStatus.FOUND)
    with pytest.raises(ValueError):
        LookupResult(status=LookupStatus.UNAVAILABLE, record=b"{}", authenticated_service=ADMISSION)
    with pytest.raises(ValueError):
        AppendResult(status=AppendStatus.COMMITTED, record=b"{}")


# ---------------------------------------------------------------- record validation

VALID_RECORD = "admission/records/valid/command.json"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("admission/records/invalid/signing-hash-mismatch.json", "record-binding-mismatch"),
        ("admission/records/invalid/key-id-mismatch.json", "record-binding-mismatch"),
        ("admission/records/invalid/principal-mismatch.json", "record-binding-mismatch"),
        ("admission/records/invalid/organization-mismatch.json", "record-binding-mismatch"),
        ("admission/records/invalid/document-kind-mismatch.json", "record-binding-mismatch"),
        ("admission/records/invalid/accepted-by-non-service.json", "record-schema-invalid"),
    ],
)
def test_found_record_not_matching_the_evidence_is_refused(path: str, reason: str) -> None:
    assert (
        refuse(lambda: replay_historical(verified(), FakeLog(found(read(path))))).reason == reason
    )


def test_found_record_must_be_accepted_by_the_authenticated_service() -> None:
    log = FakeLog(found(read(VALID_RECORD), OTHER_SERVICE))
    assert refuse(lambda: replay_historical(verified(), log)).reason == "log-authentication-failed"


@pytest.mark.parametrize(
    "data", [b"", b"\xef\xbb\xbf{}", b'{"a":1,"a":1}', read(VALID_RECORD) + b"{}"]
)
def test_unparseable_record_is_refused(data: bytes) -> None:
    assert (
        refuse(lambda: validate_record(data, verified(), ADMISSION)).reason
        == "record-schema-invalid"
    )


def test_record_carrying_a_signature_is_not_a_first_admission_record() -> None:
    record = json.loads(read(VALID_RECORD))
    record["signature"] = json.loads(
        read("cryptography/vectors/signed-documents/valid/command.json")
    )["signature"]
    data = json.dumps(record).encode()
    assert (
        refuse(lambda: validate_record(data, verified(), ADMISSION)).reason
        == "record-schema-invalid"
    )


def test_signed_event_cannot_anchor_itself() -> None:
    event = read("cryptography/vectors/signed-documents/valid/event.json")
    log = FakeLog(found(event))
    assert (
        refuse(lambda: replay_historical(verified("event"), log)).reason == "event-self-anchoring"
    )


def test_signed_event_returned_by_append_cannot_anchor_itself() -> None:
    event = read("cryptography/vectors/signed-documents/valid/event.json")
    log = FakeLog(
        ABSENT,
        AppendResult(status=AppendStatus.COMMITTED, record=event, authenticated_service=ADMISSION),
    )
    error = refuse(lambda: admit_first(verified("event"), log, trusted("2026-07-15T03:05:00Z")))
    assert error.reason == "event-self-anchoring"


def test_returned_record_is_validated_not_the_candidate() -> None:
    bad = read("admission/records/invalid/key-id-mismatch.json")
    log = FakeLog(
        ABSENT,
        AppendResult(status=AppendStatus.EXISTING, record=bad, authenticated_service=ADMISSION),
    )
    assert (
        refuse(lambda: admit_first(verified(), log, trusted())).reason == "record-binding-mismatch"
    )


def test_record_round_trips_through_its_wire_form() -> None:
    record = FirstAdmissionRecord.from_json(json.loads(read(VALID_RECORD)))
    assert record.to_json() == json.loads(read(VALID_RECORD))
    assert record.trusted_accepted_at == parse_timestamp("2026-07-15T00:05:00Z")
