"""Section 2 data conventions: identifiers, timestamps, base64url and content hashes."""

from __future__ import annotations

import pytest

from mwp_local.protocol.b64 import b64url_decode, b64url_encode
from mwp_local.protocol.hashing import is_sha256_id, sha256_id
from mwp_local.protocol.ids import is_protocol_id
from mwp_local.protocol.timestamps import format_utc, is_utc_z, parse_timestamp


@pytest.mark.parametrize(
    "text",
    [
        "urn:uuid:00000000-0000-4000-8000-000000000001",
        "urn:missionweaveprotocol:agent:coordinator",
        "https://example.org/a/b?c=d#e",
        "urn:",
        "x:%C3%A9",
        "http://[::1]:8080/",
        "mailto:a@b.example",
    ],
)
def test_absolute_uris_are_identifiers(text: str) -> None:
    assert is_protocol_id(text)


@pytest.mark.parametrize(
    "text",
    [
        "urn:missionweaveprotocol:agent:coordinator\n",
        "relative/path",
        "//host/path",
        "urn:é",
        "urn:a b",
        "urn:%zz",
        "urn:%4",
        "1urn:x",
        "",
        "urn:a\tb",
        "http://[::1/",
    ],
)
def test_relative_iri_only_or_malformed_spellings_are_not_identifiers(text: str) -> None:
    assert not is_protocol_id(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-07-15T00:00:00Z",
        "2026-07-15t00:00:00z",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999999999Z",
        "2026-07-15T00:00:00-23:59",
        "2026-07-15T00:00:00+23:59",
        "2024-02-29T12:00:00.5+01:00",
    ],
)
def test_profile_timestamps_parse(text: str) -> None:
    assert parse_timestamp(text).text == text


@pytest.mark.parametrize(
    "text",
    [
        "0000-01-01T00:00:00Z",
        "2026-07-15T23:59:60Z",
        "2026-07-15T00:00:00-00:00",
        "2025-02-29T00:00:00Z",
        "2026-07-15T24:00:00Z",
        "2026-07-15T00:00:00",
        "2026-07-15T00:00:00.Z",
        "2026-07-15T00:00:00+24:00",
        "2026-07-15 00:00:00Z",
        "2026-07-15T00:00:00Z\n",
    ],
)
def test_timestamps_outside_the_profile_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_timestamp(text)


def test_fractional_digits_are_compared_exactly_without_rounding() -> None:
    a = parse_timestamp("2026-07-15T00:00:00.1234560Z")
    b = parse_timestamp("2026-07-15T00:00:00.123456Z")
    c = parse_timestamp("2026-07-15T00:00:00.1234561Z")
    assert a.same_instant(b)
    assert a.text != b.text
    assert b < c


def test_offsets_are_compared_as_instants() -> None:
    assert parse_timestamp("2026-07-15T08:00:00+08:00").same_instant(
        parse_timestamp("2026-07-15T00:00:00Z")
    )


def test_utc_z_means_uppercase_z_only() -> None:
    assert is_utc_z("2026-07-15T00:00:00Z")
    assert not is_utc_z("2026-07-15T00:00:00z")
    assert not is_utc_z("2026-07-15T00:00:00+00:00")


def test_format_utc_round_trips() -> None:
    for micros in (0, 1, 1_000, 1_784_073_600_123_456, -62135596800_000_000):
        text = format_utc(micros)
        assert parse_timestamp(text).epoch_micros == micros
        assert is_utc_z(text)


@pytest.mark.parametrize(
    "text",
    [
        "2026-01-01T00:00:00Z",
        "2026-01-01T00:00:00.5Z",
        "2026-01-01T00:00:00.000001Z",
        "2026-01-01T00:00:00.1234567Z",
        "2026-01-01T00:00:00.9999999999+05:30",
        "1969-12-31T23:59:59.9999995Z",
        "0001-01-01T00:00:00.0000009-01:00",
    ],
)
def test_epoch_micros_is_the_exact_instant_rounded_down(text: str) -> None:
    stamp = parse_timestamp(text)
    assert stamp.epoch_micros == int(stamp.instant * 1_000_000 // 1)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\xff\xfe", b"abc", bytes(range(64))])
def test_base64url_round_trips(data: bytes) -> None:
    assert b64url_decode(b64url_encode(data)) == data


@pytest.mark.parametrize("text", ["YQ==", "YR", "Y", "a+b/", "YQ=", "ab cd"])
def test_noncanonical_base64url_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        b64url_decode(text)


def test_content_hash_form() -> None:
    assert sha256_id(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert is_sha256_id(sha256_id(b"x"))
    assert not is_sha256_id("sha256:" + "A" * 64)
    assert not is_sha256_id("sha256:" + "a" * 63)
