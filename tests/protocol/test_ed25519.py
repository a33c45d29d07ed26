"""Strict pure Ed25519 (section 6.4): what is rejected, what is accepted, and why.

libsodium's answers are cross-checked against a plain Python reference (extended-coordinate
arithmetic computing ``[L]P`` directly) on the bundle's malformed encodings, so that the module's
reliance on each binding is proven rather than assumed.
"""

from __future__ import annotations

import hashlib
import random

import pytest
from nacl import bindings as sodium
from nacl.exceptions import BadSignatureError

from mwp_local.protocol import ed25519
from mwp_local.protocol.b64 import b64url_decode

P, L, D = ed25519.P, ed25519.L, ed25519.D

# ---------------------------------------------------------------- plain reference arithmetic

Point = tuple[int, int, int, int]  # extended coordinates (X, Y, Z, T)
IDENTITY: Point = (0, 1, 1, 0)


def _add(p: Point, q: Point) -> Point:
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * t1 * t2 * D % P
    d = 2 * z1 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _mul(k: int, p: Point) -> Point:
    result = IDENTITY
    while k:
        if k & 1:
            result = _add(result, p)
        p = _add(p, p)
        k >>= 1
    return result


def _is_identity(p: Point) -> bool:
    x, y, z, _ = p
    return x % P == 0 and (y - z) % P == 0


def _reference_point(encoding: bytes) -> Point:
    x, y = ed25519.decode_point(encoding)
    return (x, y, 1, x * y % P)


# The bundle's public-key and R encodings (base64url of 32 bytes).
ENCODINGS = {
    "valid": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
    "identity": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "negative-zero": "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIA",
    "off-curve": "AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "small-order": "7P_______________________________________38",
    "y-equals-p": "7f_______________________________________38",
    "noncanonical": "7v_______________________________________38",
    "mixed-order": "lZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZmZk",
}

PUBLIC_KEY_REASONS = {
    "identity": "identity",
    "negative-zero": "negative-zero",
    "off-curve": "off-curve",
    "small-order": "small-order",
    "y-equals-p": "noncanonical",
    "noncanonical": "noncanonical",
    "mixed-order": "mixed-order",
}


@pytest.mark.parametrize(("name", "reason"), sorted(PUBLIC_KEY_REASONS.items()))
def test_public_key_with_bad_encoding_is_rejected_with_its_reason(name: str, reason: str) -> None:
    with pytest.raises(ed25519.Ed25519Error) as caught:
        ed25519.check_public_key(b64url_decode(ENCODINGS[name]))
    assert caught.value.reason == reason


def test_valid_public_key_is_accepted() -> None:
    ed25519.check_public_key(b64url_decode(ENCODINGS["valid"]))


@pytest.mark.parametrize("length", [0, 31, 33, 64])
def test_public_key_of_wrong_length_is_rejected(length: int) -> None:
    with pytest.raises(ed25519.Ed25519Error) as caught:
        ed25519.check_public_key(b"\x01" + bytes(length - 1) if length else b"")
    assert caught.value.reason == "length"


@pytest.mark.parametrize("name", ["valid", "small-order", "mixed-order", "identity"])
def test_libsodium_subgroup_answer_matches_the_plain_reference(name: str) -> None:
    encoding = b64url_decode(ENCODINGS[name])
    point = _reference_point(encoding)
    in_prime_subgroup = _is_identity(_mul(L, point))
    small = _is_identity(_mul(8, point))
    # is_valid_point is true exactly for [L]P = I and not small order (so never the identity).
    assert sodium.crypto_core_ed25519_is_valid_point(encoding) == (in_prime_subgroup and not small)


@pytest.mark.parametrize("name", ["negative-zero", "y-equals-p", "noncanonical"])
def test_libsodium_add_accepts_encodings_the_profile_rejects(name: str) -> None:
    # This is why canonical form and negative zero are checked in Python before libsodium.
    sodium.crypto_core_ed25519_add(b64url_decode(ENCODINGS[name]), ed25519.IDENTITY_ENCODING)


def test_plain_decoder_refuses_off_curve_and_noncanonical_encodings() -> None:
    with pytest.raises(ed25519.Ed25519Error, match="off-curve"):
        ed25519.decode_point(b64url_decode(ENCODINGS["off-curve"]))
    with pytest.raises(ed25519.Ed25519Error, match="noncanonical"):
        ed25519.decode_point(b64url_decode(ENCODINGS["y-equals-p"]))


# ---------------------------------------------------------------- signature halves


def _signature(r_name: str, s: int = 0) -> bytes:
    return b64url_decode(ENCODINGS[r_name]) + s.to_bytes(32, "little")


R_REASONS = {name: reason for name, reason in PUBLIC_KEY_REASONS.items() if name != "identity"}


@pytest.mark.parametrize(("name", "reason"), sorted(R_REASONS.items()))
def test_signature_r_with_bad_encoding_is_rejected(name: str, reason: str) -> None:
    with pytest.raises(ed25519.Ed25519Error) as caught:
        ed25519.decode_signature(_signature(name))
    assert caught.value.reason == f"r-{reason}"


def test_identity_r_is_permitted_by_the_encoding_checks() -> None:
    parts = ed25519.decode_signature(_signature("identity"))
    assert parts.r_encoding == ed25519.IDENTITY_ENCODING
    assert parts.s == 0


def test_s_equal_to_l_is_rejected_without_reduction() -> None:
    with pytest.raises(ed25519.Ed25519Error) as caught:
        ed25519.decode_signature(_signature("valid", L))
    assert caught.value.reason == "s-out-of-range"


def test_s_just_below_l_is_accepted_by_the_encoding_checks() -> None:
    assert ed25519.decode_signature(_signature("valid", L - 1)).s == L - 1


@pytest.mark.parametrize("length", [0, 63, 65])
def test_signature_of_wrong_length_is_rejected(length: int) -> None:
    with pytest.raises(ed25519.Ed25519Error) as caught:
        ed25519.decode_signature(bytes(length))
    assert caught.value.reason == "signature-length"


# ---------------------------------------------------------------- signing and the equation

RFC8032_VECTORS = [
    # (secret seed, public key, message, signature), RFC 8032 section 7.1 tests 1 and 2.
    (
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a",
        "",
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
    ),
    (
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
        "72",
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
        "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
    ),
]


@pytest.mark.parametrize(("seed", "public", "message", "signature"), RFC8032_VECTORS)
def test_rfc8032_vectors_sign_and_verify(
    seed: str, public: str, message: str, signature: str
) -> None:
    pair = ed25519.SigningKeyPair.from_seed(bytes.fromhex(seed))
    assert pair.public_key.hex() == public
    assert pair.sign(bytes.fromhex(message)).hex() == signature
    assert ed25519.verify(pair.public_key, bytes.fromhex(signature), bytes.fromhex(message))


def test_verify_agrees_with_libsodium_on_valid_and_tampered_signatures() -> None:
    rng = random.Random(20260715)
    for _ in range(40):
        pair = ed25519.SigningKeyPair.from_seed(rng.randbytes(32))
        message = rng.randbytes(rng.randrange(0, 200))
        signature = pair.sign(message)
        tampered = bytearray(signature)
        tampered[rng.randrange(64)] ^= 1 << rng.randrange(8)
        for candidate in (signature, bytes(tampered)):
            try:
                sodium.crypto_sign_open(candidate + message, pair.public_key)
                expected = True
            except BadSignatureError:
                expected = False
            assert ed25519.verify(pair.public_key, candidate, message) == expected


def _secret_scalar(seed: bytes) -> int:
    h = bytearray(hashlib.sha512(seed).digest()[:32])
    h[0] &= 248
    h[31] &= 127
    h[31] |= 64
    return int.from_bytes(h, "little")


def test_identity_r_signature_satisfying_the_equation_is_accepted() -> None:
    # libsodium's verify refuses any small-order R; section 6.4 permits the identity R, so a
    # signature with R = I and S = k*a mod L must verify (and does, through explicit arithmetic).
    seed = bytes(range(32))
    pair = ed25519.SigningKeyPair.from_seed(seed)
    message = b"identity R is permitted"
    k_digest = hashlib.sha512(ed25519.IDENTITY_ENCODING + pair.public_key + message).digest()
    k = int.from_bytes(k_digest, "little") % L
    s = k * _secret_scalar(seed) % L
    signature = ed25519.IDENTITY_ENCODING + s.to_bytes(32, "little")
    assert ed25519.verify(pair.public_key, signature, message)
    assert not ed25519.verify(pair.public_key, signature, message + b"!")
    with pytest.raises(BadSignatureError):
        sodium.crypto_sign_open(signature + message, pair.public_key)


def test_identity_r_with_zero_s_fails_the_equation_for_a_real_key() -> None:
    # The bundle's "weak-key forgery": only an identity public key would accept it.
    public = b64url_decode(ENCODINGS["valid"])
    assert not ed25519.verify(public, _signature("identity"), b"anything")


def test_verify_refuses_a_weak_public_key_even_when_the_equation_would_hold() -> None:
    identity_key = ed25519.IDENTITY_ENCODING
    assert not ed25519.verify(identity_key, _signature("identity"), b"anything")


# ---------------------------------------------------------------- key pairs and seeds


def test_key_pair_is_deterministic_and_hides_its_seed() -> None:
    seed = bytes(32)
    first, second = ed25519.SigningKeyPair.from_seed(seed), ed25519.SigningKeyPair.from_seed(seed)
    assert first.public_key == second.public_key
    assert first.sign(b"m") == second.sign(b"m")
    assert seed.hex() not in repr(first) and "seed=" not in repr(first)


def test_key_pair_refuses_a_seed_of_wrong_length() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        ed25519.SigningKeyPair.from_seed(bytes(31))


def test_derived_seed_is_reproducible_and_separated_by_seed_and_label() -> None:
    assert ed25519.derive_seed(7, "agent:a") == ed25519.derive_seed(7, "agent:a")
    assert len(ed25519.derive_seed(7, "agent:a")) == 32
    distinct = {
        ed25519.derive_seed(7, "agent:a"),
        ed25519.derive_seed(8, "agent:a"),
        ed25519.derive_seed(7, "agent:b"),
        ed25519.derive_seed(71, "agent:"),
        ed25519.derive_seed(-7, "agent:a"),
    }
    assert len(distinct) == 5
