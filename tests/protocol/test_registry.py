"""The signing-key Registry (section 6.4): immutable bindings, uniqueness, validity history."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.protocol import ed25519
from mwp_local.protocol.b64 import b64url_encode
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.ids import sandbox_organization_id
from mwp_local.protocol.registry import (
    KeyBinding,
    KeyInterval,
    Principal,
    Registry,
    RegistryInvalid,
    ValidityRecord,
)
from mwp_local.protocol.timestamps import parse_timestamp

from ..conftest import PROTOCOL_ROOT

KEYS = PROTOCOL_ROOT / "cryptography" / "keys"
ORG = sandbox_organization_id(0)  # a sandbox without a mission, seed 0
ALICE = Principal(type="agent", id="urn:missionweaveprotocol:agent:alice")
BOB = Principal(type="agent", id="urn:missionweaveprotocol:agent:bob")


def ts(text: str) -> Any:
    return parse_timestamp(text)


def public_key(label: str) -> str:
    pair = ed25519.SigningKeyPair.from_seed(ed25519.derive_seed(1, label))
    return b64url_encode(pair.public_key)


def binding(
    key_id: str = "urn:missionweaveprotocol:key:alice-1",
    principal: Principal = ALICE,
    key_label: str = "alice-1",
    valid_from: str = "2026-07-01T00:00:00Z",
    history: tuple[ValidityRecord, ...] = (),
) -> KeyBinding:
    return KeyBinding(
        key_id=key_id,
        principal=principal,
        algorithm="Ed25519",
        public_key=public_key(key_label),
        valid_from=ts(valid_from),
        validity_history=history,
    )


def load(name: str) -> Any:
    return json.loads((KEYS / name).read_text(encoding="utf-8"))


# ---------------------------------------------------------------- reading the bundle's fixtures

FIXTURE_REASONS = {
    "registry-key-alias.json": "key-id-alias",
    "registry-organization-id-relative-reference.json": "organization-id-invalid",
    "registry-public-key-cross-principal-reuse.json": "public-key-reuse",
    "registry-public-key-identity.json": "public-key-identity",
    "registry-public-key-mixed-order.json": "public-key-mixed-order",
    "registry-public-key-negative-zero.json": "public-key-negative-zero",
    "registry-public-key-noncanonical.json": "public-key-noncanonical",
    "registry-public-key-nonzero-unused-pad-bits.json": "public-key-encoding-invalid",
    "registry-public-key-off-curve.json": "public-key-off-curve",
    "registry-public-key-padded.json": "public-key-encoding-invalid",
    "registry-public-key-rebinding.json": "key-id-reuse",
    "registry-public-key-small-order.json": "public-key-small-order",
    "registry-public-key-wrong-length.json": "public-key-length",
    "registry-public-key-y-equals-p.json": "public-key-noncanonical",
    "registry-selected-service-principal-id-iri-only.json": "principal-id-invalid",
    "registry-unrelated-key-id-trailing-line-feed.json": "key-id-invalid",
    "registry-unrelated-principal-id-malformed-percent.json": "principal-id-invalid",
}


@pytest.mark.parametrize(("name", "reason"), sorted(FIXTURE_REASONS.items()))
def test_invalid_registry_fixture_is_refused_whole(name: str, reason: str) -> None:
    with pytest.raises(RegistryInvalid) as caught:
        Registry.from_fixture(load(name))
    assert caught.value.reason == reason


VALID_FIXTURES = sorted({p.name for p in KEYS.glob("registry-*.json")} - set(FIXTURE_REASONS))


@pytest.mark.parametrize("name", VALID_FIXTURES)
def test_valid_registry_fixture_round_trips_through_to_fixture(name: str) -> None:
    original = load(name)
    registry = Registry.from_fixture(original)
    written = registry.to_fixture()
    assert written["organizationId"] == original["organizationId"]
    by_key = {b["keyId"]: b for b in original["bindings"]}
    assert {b["keyId"]: b for b in written["bindings"]} == by_key
    assert Registry.from_fixture(written) == registry


def test_fixture_timestamps_keep_their_spelling_and_compare_as_instants() -> None:
    registry = Registry.from_fixture(load("registry-timestamp-casing-and-offset-bounds.json"))
    key = registry.lookup("urn:missionweaveprotocol:key:crypto-vector-rfc8032-1")
    assert key is not None
    assert key.valid_from.text == "2026-07-14T00:01:00-23:59"
    assert key.interval.contains(ts("2026-07-15T00:00:00Z"))
    assert not key.interval.contains(ts("2026-07-14T23:59:59.999Z"))


def test_key_id_lookup_is_byte_for_byte() -> None:
    registry = Registry.from_fixture(load("registry-valid.json"))
    assert registry.lookup("urn:missionweaveprotocol:key:crypto-vector-rfc8032-1") is not None
    assert registry.lookup("URN:missionweaveprotocol:key:crypto-vector-rfc8032-1") is None


# ---------------------------------------------------------------- registering bindings


def test_register_returns_a_new_registry_and_leaves_the_old_one_alone() -> None:
    empty = Registry(organization_id=ORG)
    one = empty.register(binding())
    assert len(empty) == 0 and len(one) == 1
    assert one.lookup("urn:missionweaveprotocol:key:alice-1") == binding()


def test_registering_the_identical_binding_again_is_the_same_logical_binding() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    assert registry.register(binding()) == registry


def test_key_id_reuse_for_another_key_is_rejected() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.register(binding(key_label="alice-2"))
    assert caught.value.code is ErrorCode.INVALID_COMMAND
    assert caught.value.reason == "key-id-reuse"


def test_key_id_reuse_for_another_principal_is_rejected() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.register(binding(principal=BOB))
    assert caught.value.reason == "key-id-reuse"


def test_key_id_alias_of_the_same_principal_and_key_is_rejected() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.register(binding(key_id="urn:missionweaveprotocol:key:alice-1-alias"))
    assert caught.value.reason == "key-id-alias"


def test_public_key_reuse_under_another_principal_is_rejected() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.register(binding(key_id="urn:missionweaveprotocol:key:bob-1", principal=BOB))
    assert caught.value.reason == "public-key-reuse"


def test_changing_the_first_valid_from_is_key_id_reuse() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.register(binding(valid_from="2026-06-01T00:00:00Z"))
    assert caught.value.reason == "key-id-reuse"


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("key_id", "urn:missionweaveprotocol:key:alice\n", "key-id-invalid"),
        ("key_id", "keys/alice", "key-id-invalid"),
        ("algorithm", "Ed448", "algorithm-unsupported"),
        ("public_key", public_key("alice-1") + "=", "public-key-encoding-invalid"),
        ("public_key", b64url_encode(ed25519.IDENTITY_ENCODING), "public-key-identity"),
    ],
)
def test_binding_with_invalid_member_cannot_be_built(field: str, value: str, reason: str) -> None:
    values: dict[str, Any] = {
        "key_id": "urn:missionweaveprotocol:key:alice-1",
        "principal": ALICE,
        "algorithm": "Ed25519",
        "public_key": public_key("alice-1"),
        "valid_from": ts("2026-07-01T00:00:00Z"),
        field: value,
    }
    with pytest.raises(RegistryInvalid) as caught:
        KeyBinding(**values)
    assert caught.value.reason == reason


def test_principal_with_iri_only_id_cannot_be_built() -> None:
    with pytest.raises(RegistryInvalid) as caught:
        Principal(type="service", id="https://例え.テスト/registry")
    assert caught.value.reason == "principal-id-invalid"


def test_an_invalid_unrelated_binding_invalidates_the_whole_fixture() -> None:
    fixture = load("registry-valid.json")
    fixture["bindings"][-1]["principal"]["id"] = "urn:missionweaveprotocol:agent:x%ZZ"
    with pytest.raises(RegistryInvalid):
        Registry.from_fixture(fixture)


def test_identical_declarations_in_one_fixture_merge_their_history() -> None:
    fixture = load("registry-valid.json")
    first = json.loads(json.dumps(fixture["bindings"][0]))
    first["validityHistory"].append(
        {"sequence": 2, "recordedAt": "2026-07-16T00:00:01Z", "revokedAt": "2026-07-15T12:00:00Z"}
    )
    fixture["bindings"].append(first)
    registry = Registry.from_fixture(fixture)
    key = registry.lookup(first["keyId"])
    assert key is not None and len(key.validity_history) == 2
    assert key.interval.revoked_at == ts("2026-07-15T12:00:00Z")


def test_identical_declarations_that_disagree_on_history_are_refused() -> None:
    fixture = load("registry-valid.json")
    twin = json.loads(json.dumps(fixture["bindings"][0]))
    twin["validityHistory"][0]["validUntil"] = "2026-07-15T23:00:00Z"
    fixture["bindings"].append(twin)
    with pytest.raises(RegistryInvalid) as caught:
        Registry.from_fixture(fixture)
    assert caught.value.reason == "validity-history-conflict"


# ---------------------------------------------------------------- validity history and interval


def test_valid_until_may_be_added_and_moved_earlier_and_the_earliest_wins() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    key_id = "urn:missionweaveprotocol:key:alice-1"
    registry = registry.append_validity(
        key_id, recorded_at=ts("2026-07-02T00:00:00Z"), valid_until=ts("2026-08-01T00:00:00Z")
    )
    registry = registry.append_validity(
        key_id, recorded_at=ts("2026-07-03T00:00:00Z"), valid_until=ts("2026-07-20T00:00:00Z")
    )
    key = registry.lookup(key_id)
    assert key is not None
    assert key.interval.valid_until == ts("2026-07-20T00:00:00Z")
    assert [r.sequence for r in key.validity_history] == [1, 2]


def test_moving_valid_until_later_is_rejected() -> None:
    key_id = "urn:missionweaveprotocol:key:alice-1"
    registry = (
        Registry(organization_id=ORG)
        .register(binding())
        .append_validity(
            key_id, recorded_at=ts("2026-07-02T00:00:00Z"), valid_until=ts("2026-07-20T00:00:00Z")
        )
    )
    with pytest.raises(ProtocolError) as caught:
        registry.append_validity(
            key_id, recorded_at=ts("2026-07-03T00:00:00Z"), valid_until=ts("2026-08-01T00:00:00Z")
        )
    assert caught.value.code is ErrorCode.INVALID_COMMAND
    assert caught.value.reason == "validity-moved-later"


def test_moving_revoked_at_later_is_rejected() -> None:
    key_id = "urn:missionweaveprotocol:key:alice-1"
    registry = (
        Registry(organization_id=ORG)
        .register(binding())
        .append_validity(
            key_id, recorded_at=ts("2026-07-02T00:00:00Z"), revoked_at=ts("2026-07-10T00:00:00Z")
        )
    )
    with pytest.raises(ProtocolError) as caught:
        registry.append_validity(
            key_id, recorded_at=ts("2026-07-03T00:00:00Z"), revoked_at=ts("2026-07-11T00:00:00Z")
        )
    assert caught.value.reason == "validity-moved-later"


def test_a_status_record_must_set_a_bound() -> None:
    registry = Registry(organization_id=ORG).register(binding())
    with pytest.raises(ProtocolError) as caught:
        registry.append_validity(
            "urn:missionweaveprotocol:key:alice-1", recorded_at=ts("2026-07-02T00:00:00Z")
        )
    assert caught.value.reason == "validity-history-invalid"


def test_appending_validity_to_an_unknown_key_is_rejected() -> None:
    with pytest.raises(ProtocolError) as caught:
        Registry(organization_id=ORG).append_validity(
            "urn:missionweaveprotocol:key:nobody",
            recorded_at=ts("2026-07-02T00:00:00Z"),
            revoked_at=ts("2026-07-02T00:00:00Z"),
        )
    assert caught.value.reason == "unknown-key"


def test_history_with_a_gap_in_sequence_is_incomplete() -> None:
    record = ValidityRecord(
        sequence=2, recorded_at=ts("2026-07-02T00:00:00Z"), valid_until=ts("2026-07-09T00:00:00Z")
    )
    with pytest.raises(RegistryInvalid) as caught:
        binding(history=(record,))
    assert caught.value.reason == "validity-history-invalid"


def test_malformed_registry_timestamp_is_refused() -> None:
    fixture = load("registry-valid.json")
    fixture["bindings"][1]["validFrom"] = "2026-07-01T00:00:60Z"
    with pytest.raises(RegistryInvalid) as caught:
        Registry.from_fixture(fixture)
    assert caught.value.reason == "validity-timestamp-malformed"


INTERVAL = KeyInterval(
    valid_from=ts("2026-07-15T08:00:00+08:00"),
    valid_until=ts("2026-07-16T00:00:00Z"),
    revoked_at=ts("2026-07-15T12:00:00Z"),
)


@pytest.mark.parametrize(
    ("at", "violation"),
    [
        ("2026-07-14T23:59:59.999999999Z", "key-not-yet-valid"),
        ("2026-07-15T00:00:00Z", None),
        ("2026-07-15t11:59:59.9999999999z", None),
        ("2026-07-15T12:00:00Z", "key-revoked"),
        ("2026-07-15T13:00:00+01:00", "key-revoked"),
        ("2026-07-16T00:00:00Z", "key-revoked"),
    ],
)
def test_interval_is_half_open_and_compares_instants(at: str, violation: str | None) -> None:
    assert INTERVAL.violation(ts(at)) == violation
    assert INTERVAL.contains(ts(at)) == (violation is None)


def test_valid_until_boundary_is_exclusive() -> None:
    interval = KeyInterval(
        valid_from=ts("2026-07-01T00:00:00Z"), valid_until=ts("2026-07-02T00:00:00Z")
    )
    assert interval.violation(ts("2026-07-01T23:59:59.9Z")) is None
    assert interval.violation(ts("2026-07-02T00:00:00.000Z")) == "key-expired"


def test_registry_written_back_reads_the_same(tmp_path: Path) -> None:
    key_id = "urn:missionweaveprotocol:key:alice-1"
    registry = (
        Registry(organization_id=ORG)
        .register_all([binding(), binding("urn:missionweaveprotocol:key:bob-1", BOB, "bob-1")])
        .append_validity(
            key_id, recorded_at=ts("2026-07-02T00:00:00Z"), revoked_at=ts("2026-07-10T00:00:00Z")
        )
    )
    text = json.dumps(registry.to_fixture())
    assert Registry.from_fixture(json.loads(text)) == registry
