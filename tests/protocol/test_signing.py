"""The six-stage Signed Document Verification Profile and signing (section 6.4)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from mwp_local.protocol import ed25519
from mwp_local.protocol.b64 import b64url_decode, b64url_encode
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.hashing import sha256_id
from mwp_local.protocol.ids import sandbox_organization_id
from mwp_local.protocol.registry import KeyBinding, Principal, Registry
from mwp_local.protocol.signing import (
    PROFILES,
    STAGE_WIRE_CODE,
    RegistryUnavailable,
    SignerRule,
    Stage,
    expected_signer,
    resolve_pointer,
    sign_document,
    signing_bytes,
    signing_hash,
    verify_signed_document,
)
from mwp_local.protocol.timestamps import parse_timestamp

from ..conftest import PROTOCOL_ROOT

CRYPTO = PROTOCOL_ROOT / "cryptography"
ORG = sandbox_organization_id(0)  # a sandbox without a mission, seed 0
SANDBOX_SERVICE = Principal(type="service", id="urn:missionweaveprotocol:service:sandbox-registry")


@cache
def manifest() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CRYPTO / "manifest.json").read_text(encoding="utf-8"))
    return data


@cache
def profile_matrix() -> dict[str, dict[str, Any]]:
    """The accept.profile-matrix.all-nine evaluations by profile."""
    case = next(c for c in manifest()["cases"] if c["id"] == "accept.profile-matrix.all-nine")
    return {ev["profileId"]: ev for ev in case["evaluations"]}


def read(path: str) -> bytes:
    return (PROTOCOL_ROOT / path).read_bytes()


def bundle_document(profile: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read(profile_matrix()[profile]["document"]))
    return data


def valid_registry_fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(read("cryptography/keys/registry-valid.json"))
    return data


def golden() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        read("cryptography/vectors/signed-documents/valid/command.json")
    )
    return data


def encode(document: dict[str, Any]) -> bytes:
    return json.dumps(document, ensure_ascii=False).encode("utf-8")


def reject(profile: str, document: dict[str, Any] | bytes, registry: Any) -> ProtocolError:
    data = document if isinstance(document, bytes) else encode(document)
    with pytest.raises(ProtocolError) as caught:
        verify_signed_document(profile, data, registry)
    return caught.value


# ---------------------------------------------------------------- the profile table


def test_profile_table_matches_the_bundle_manifest() -> None:
    declared = {row["profileId"]: row for row in manifest()["profiles"]}
    assert set(declared) == set(PROFILES)
    for profile_id, row in declared.items():
        ours = PROFILES[profile_id]
        signer = row["expectedSigner"]
        assert row["schema"] == f"schemas/{ours.schema_name}.schema.json"
        assert row["protectedTimePointer"] == ours.protected_time_pointer
        assert SignerRule(signer["rule"]) is ours.signer_rule
        assert signer.get("pointer", signer.get("idPointer")) == ours.signer_pointer


def test_every_failing_stage_has_the_wire_code_of_section_6_4() -> None:
    assert STAGE_WIRE_CODE == {
        Stage.PARSE: ErrorCode.PROTOCOL_VIOLATION,
        Stage.SCHEMA: ErrorCode.SCHEMA_VALIDATION_FAILED,
        Stage.SIGNATURE_ENVELOPE: ErrorCode.AUTH_INVALID_SIGNATURE,
        Stage.KEY_RESOLUTION: ErrorCode.AUTH_INVALID_SIGNATURE,
        Stage.CANONICALIZATION: ErrorCode.PROTOCOL_VIOLATION,
        Stage.SIGNATURE: ErrorCode.AUTH_INVALID_SIGNATURE,
    }


def test_json_pointer_resolution_follows_rfc_6901() -> None:
    doc = {"a/b": {"m~n": [10, 20]}}
    assert resolve_pointer(doc, "/a~1b/m~0n/1") == 20
    with pytest.raises(LookupError):
        resolve_pointer(doc, "/a~1b/missing")


# ---------------------------------------------------------------- signing round trips


def signer_for(profile: str, document: dict[str, Any]) -> Principal:
    expected = expected_signer(PROFILES[profile], document)
    return expected.principal or SANDBOX_SERVICE


def sandbox_key(principal: Principal) -> ed25519.SigningKeyPair:
    return ed25519.SigningKeyPair.from_seed(ed25519.derive_seed(2026, principal.id))


def sandbox_key_id(principal: Principal) -> str:
    return f"urn:missionweaveprotocol:key:sandbox:{principal.id.rsplit(':', 1)[-1]}"


@cache
def sandbox_registry() -> Registry:
    principals = {signer_for(p, bundle_document(p)) for p in PROFILES}
    return Registry(organization_id=ORG).register_all(
        KeyBinding(
            key_id=sandbox_key_id(principal),
            principal=principal,
            algorithm="Ed25519",
            public_key=b64url_encode(sandbox_key(principal).public_key),
            valid_from=parse_timestamp("2026-01-01T00:00:00Z"),
        )
        for principal in sorted(principals, key=lambda p: p.id)
    )


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_resigned_bundle_document_verifies_with_a_sandbox_key(profile: str) -> None:
    unsigned = {k: v for k, v in bundle_document(profile).items() if k != "signature"}
    principal = signer_for(profile, unsigned)
    signed = sign_document(profile, unsigned, sandbox_key(principal), sandbox_key_id(principal))
    verified = verify_signed_document(profile, encode(signed), sandbox_registry())
    expected = profile_matrix()[profile]["expect"]["verified"]
    # The unsigned content is the bundle's, so the signing bytes and hash are the bundle's too.
    assert verified.signing_bytes == read(expected["signingBytes"])
    assert verified.signing_hash == expected["signingHash"] == signing_hash(signed)
    assert verified.principal == principal
    assert verified.key_id == sandbox_key_id(principal)
    assert verified.protected_time == expected["protectedTime"]
    assert verified.organization_id == ORG
    assert signed["signature"]["createdAt"] == expected["protectedTime"]


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_signing_with_the_bundle_seed_reproduces_the_bundle_document(profile: str) -> None:
    evaluation = profile_matrix()[profile]
    original = bundle_document(profile)
    key = json.loads(read(evaluation["signingKey"]))
    pair = ed25519.SigningKeyPair.from_seed(b64url_decode(key["seed"]))
    unsigned = {k: v for k, v in original.items() if k != "signature"}
    assert sign_document(profile, unsigned, pair, key["keyId"]) == original


def test_sign_document_refuses_an_already_signed_document() -> None:
    pair = sandbox_key(SANDBOX_SERVICE)
    with pytest.raises(ValueError, match="already has"):
        sign_document("command", golden(), pair, "urn:missionweaveprotocol:key:x")


def test_sign_document_refuses_a_protected_time_without_uppercase_z() -> None:
    unsigned = {k: v for k, v in golden().items() if k != "signature"}
    unsigned["issuedAt"] = "2026-07-15T08:00:00+08:00"
    with pytest.raises(ValueError, match="end"):
        sign_document("command", unsigned, sandbox_key(SANDBOX_SERVICE), "urn:x:k")


def test_signing_bytes_omit_only_the_top_level_signature() -> None:
    data = signing_bytes(golden()).decode("utf-8")
    assert '"payload-signature-must-be-covered"' in data
    assert '"nested-signature-must-be-covered"' in data
    assert "PMeeKgpw" not in data


# ---------------------------------------------------------------- stages and diagnostics


def test_golden_command_verifies_against_raw_and_parsed_registry_evidence() -> None:
    data = read("cryptography/vectors/signed-documents/valid/command.json")
    from_fixture = verify_signed_document("command", data, valid_registry_fixture())
    from_registry = verify_signed_document(
        "command", data, Registry.from_fixture(valid_registry_fixture())
    )
    assert from_fixture == from_registry
    assert from_fixture.signing_hash == sha256_id(from_fixture.signing_bytes)
    assert from_fixture.key_interval.valid_until == parse_timestamp("2026-07-16T00:00:00Z")


def test_verification_stops_at_the_first_failing_stage() -> None:
    doc = golden()
    doc["payload"]["artifactHashes"] = []  # would fail stage 6
    doc["signature"]["keyId"] = "urn:missionweaveprotocol:key:unknown"  # fails stage 4
    doc["signature"]["createdAt"] = "2026-07-15T00:00:01Z"  # fails stage 3 first
    error = reject("command", doc, valid_registry_fixture())
    assert (error.stage, error.reason) == ("signature-envelope", "created-at-mismatch")


def test_key_resolution_precedes_the_signature_equation() -> None:
    doc = golden()
    doc["payload"]["artifactHashes"] = []
    doc["signature"]["keyId"] = "urn:missionweaveprotocol:key:unknown"
    error = reject("command", doc, valid_registry_fixture())
    assert (error.stage, error.reason) == ("key-resolution", "unknown-key")


def test_tampered_payload_fails_the_signature_stage() -> None:
    doc = golden()
    doc["payload"]["artifactHashes"] = []
    error = reject("command", doc, valid_registry_fixture())
    assert (error.code, error.stage) == (ErrorCode.AUTH_INVALID_SIGNATURE, "signature")


def test_invalid_json_is_a_protocol_violation_at_parse() -> None:
    error = reject("command", b'{"protocolVersion": "0.1",}', valid_registry_fixture())
    assert (error.code, error.stage) == (ErrorCode.PROTOCOL_VIOLATION, "parse")


def test_missing_signature_is_a_schema_failure() -> None:
    doc = {k: v for k, v in golden().items() if k != "signature"}
    error = reject("command", doc, valid_registry_fixture())
    assert (error.code, error.stage) == (ErrorCode.SCHEMA_VALIDATION_FAILED, "schema")


def test_unavailable_registry_evidence_fails_key_resolution() -> None:
    error = reject("command", golden(), RegistryUnavailable(reason="registry-incomplete"))
    assert (error.code, error.stage, error.reason) == (
        ErrorCode.AUTH_INVALID_SIGNATURE,
        "key-resolution",
        "registry-incomplete",
    )


def test_invalid_unrelated_binding_fails_key_resolution_before_key_selection() -> None:
    fixture = valid_registry_fixture()
    fixture["bindings"][-1]["keyId"] += "\n"
    error = reject("command", golden(), fixture)
    assert (error.stage, error.reason) == ("key-resolution", "key-id-invalid")


def test_agent_card_signed_with_an_agent_key_is_refused() -> None:
    doc = bundle_document("agent-card")
    doc["signature"]["keyId"] = "urn:missionweaveprotocol:key:crypto-vector-developer-one"
    error = reject("agent-card", doc, valid_registry_fixture())
    assert (error.stage, error.reason) == ("key-resolution", "signer-mismatch")


def test_key_evaluated_at_the_protected_time_not_at_any_clock() -> None:
    # The golden key expires at 2026-07-16; the document says 2026-07-15, so it verifies
    # whatever the wall clock says (verification is pure).
    data = read("cryptography/vectors/signed-documents/valid/command.json")
    assert verify_signed_document("command", data, valid_registry_fixture()).key_id


def test_wire_message_does_not_reveal_which_check_failed() -> None:
    error = reject(
        "command",
        golden()
        | {"signature": golden()["signature"] | {"keyId": "urn:missionweaveprotocol:key:unknown"}},
        valid_registry_fixture(),
    )
    assert error.reason == "unknown-key"
    assert "unknown" not in error.wire_message()
    assert "details" not in error.to_document("2026-07-15T00:00:00Z")


def test_verified_document_is_immutable() -> None:
    data = read("cryptography/vectors/signed-documents/valid/command.json")
    verified = verify_signed_document("command", data, valid_registry_fixture())
    with pytest.raises(AttributeError):
        verified.key_id = "urn:x:y"  # type: ignore[misc]
