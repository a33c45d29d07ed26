"""Strict pure Ed25519 for the Signed Document Verification Profile (section 6.4).

Owns the exact acceptance rules of section 6.4 on top of libsodium (through pynacl): strict
decoding of public keys (canonical ``y < p``, no negative zero, on the curve, not the identity,
in the prime-order subgroup), strict decoding of the signature halves (``R`` canonical, on the
curve, ``[L]R = I`` with the identity permitted; ``S`` little-endian with ``0 <= S < L`` and no
reduction), and the pure Ed25519 equation ``[S]B = R + [k]A``. Also deterministic key pairs from a
32-byte seed and a reproducible seed derivation for sandboxes.

libsodium's own checks are not used as the definition of acceptance: ``is_valid_point`` rejects
the identity (which ``R`` may be), ``core_ed25519_add`` accepts noncanonical and negative-zero
encodings, and its signature verification refuses every small-order ``R``. So the canonical-form,
negative-zero and identity checks are done here in plain Python first; libsodium then answers
only what it answers exactly: on-curve prime-order-subgroup membership of a canonical,
non-identity point, and the equation for a non-identity ``R`` (the identity-``R`` case is
evaluated with explicit group operations). When libsodium says no, a plain Python decoder names
the reason (off-curve, small order, mixed order). The tests cross-check each binding's answer on
the bundle's encodings against a plain reference computation of ``[L]P``.

It must not know about documents, Registries, base64url or stages: callers map the stable
``Ed25519Error.reason`` strings to their own diagnostics. No I/O, no clock, no global state.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass, field
from typing import Final

from nacl import bindings as _sodium
from nacl.exceptions import BadSignatureError

#: The field prime of Curve25519 / Edwards25519.
P: Final[int] = 2**255 - 19
#: The prime order of the base point B.
L: Final[int] = 2**252 + 27742317777372353535851937790883648493
#: The Edwards curve constant d = -121665 / 121666 (mod p).
D: Final[int] = (-121665 * pow(121666, -1, P)) % P
#: sqrt(-1) mod p, used when recovering x from x^2.
_SQRT_M1: Final[int] = pow(2, (P - 1) // 4, P)

PUBLIC_KEY_LENGTH: Final[int] = 32
SIGNATURE_LENGTH: Final[int] = 64
SEED_LENGTH: Final[int] = 32
#: The canonical encoding of the identity point (x = 0, y = 1).
IDENTITY_ENCODING: Final[bytes] = (1).to_bytes(32, "little")

_SEED_DERIVATION_DOMAIN: Final[bytes] = b"mwp_local/ed25519-seed/v1\x00"


class Ed25519Error(ValueError):
    """A strict-decoding failure; ``reason`` is a stable machine-readable diagnostic."""

    def __init__(self, reason: str, explanation: str) -> None:
        super().__init__(f"{reason}: {explanation}")
        self.reason = reason


def _recover_x(y: int, sign: int) -> int:
    """Recover x from y and the sign bit; raise when the point is off the curve."""
    # x^2 = (y^2 - 1) / (d y^2 + 1)
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    x2 = u * pow(v, -1, P) % P
    if x2 == 0:
        if sign:
            raise Ed25519Error("negative-zero", "x is zero but the sign bit is set")
        return 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P != 0:
        x = x * _SQRT_M1 % P
    if (x * x - x2) % P != 0:
        raise Ed25519Error("off-curve", "the encoding does not decode to a curve point")
    if (x & 1) != sign:
        x = P - x
    return x


def decode_point(encoding: bytes) -> tuple[int, int]:
    """Canonically decode a 32-byte Edwards25519 point encoding to affine ``(x, y)``.

    Rejects (``Ed25519Error.reason``): ``length``, ``noncanonical`` (``y >= p``),
    ``negative-zero`` (``x = 0`` with the sign bit set) and ``off-curve``.
    """
    if len(encoding) != 32:
        raise Ed25519Error("length", f"a point encoding has 32 bytes, not {len(encoding)}")
    raw = int.from_bytes(encoding, "little")
    sign = raw >> 255
    y = raw & ((1 << 255) - 1)
    if y >= P:
        raise Ed25519Error("noncanonical", "the y coordinate is not reduced modulo p")
    return _recover_x(y, sign), y


def _double(point: tuple[int, int]) -> tuple[int, int]:
    """Affine point doubling on the twisted Edwards curve -x^2 + y^2 = 1 + d x^2 y^2."""
    x, y = point
    xy = x * y % P
    dxy2 = D * xy * xy % P
    x3 = 2 * xy * pow(1 + dxy2, -1, P) % P
    y3 = (y * y + x * x) * pow(1 - dxy2, -1, P) % P
    return x3, y3


def _has_small_order(point: tuple[int, int]) -> bool:
    """Whether ``[8]P`` is the identity (the point lies in the torsion subgroup)."""
    q = _double(_double(_double(point)))
    return q == (0, 1)


def _check_point(encoding: bytes, *, allow_identity: bool) -> None:
    """Require a canonical on-curve point with ``[L]P = I`` (the identity only if allowed).

    The fast path is one libsodium call: after the canonical-form and negative-zero checks
    here, ``is_valid_point`` is true exactly for on-curve points of the prime-order subgroup
    other than the identity. The slow path runs only on rejection, to name the reason.
    """
    if len(encoding) != 32:
        raise Ed25519Error("length", f"a point encoding has 32 bytes, not {len(encoding)}")
    raw = int.from_bytes(encoding, "little")
    y = raw & ((1 << 255) - 1)
    if y >= P:
        raise Ed25519Error("noncanonical", "the y coordinate is not reduced modulo p")
    # x = 0 exactly when y^2 = 1; libsodium would quietly decode the sign bit away.
    if raw >> 255 and y in (1, P - 1):
        raise Ed25519Error("negative-zero", "x is zero but the sign bit is set")
    if encoding == IDENTITY_ENCODING:
        if allow_identity:
            return
        raise Ed25519Error("identity", "the point is the identity")
    if _sodium.crypto_core_ed25519_is_valid_point(encoding):
        return
    point = decode_point(encoding)  # raises off-curve
    if _has_small_order(point):
        raise Ed25519Error("small-order", "the point has small order")
    raise Ed25519Error("mixed-order", "the point is not in the prime-order subgroup")


def check_public_key(encoding: bytes) -> None:
    """Strictly validate a 32-byte Ed25519 public key encoding (section 6.4).

    Rejects: ``length``, ``noncanonical``, ``negative-zero``, ``off-curve``, ``identity``,
    ``small-order`` and ``mixed-order``.
    """
    _check_point(encoding, allow_identity=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureParts:
    """A strictly decoded 64-byte Ed25519 signature ``Renc || Senc``."""

    #: The 32-byte canonical encoding of R.
    r_encoding: bytes
    #: S as an unsigned little-endian integer, ``0 <= s < L``.
    s: int


def decode_signature(signature: bytes) -> SignatureParts:
    """Strictly decode a signature (stage-3 checks of section 6.4).

    Rejects: ``signature-length``, ``r-noncanonical``, ``r-negative-zero``, ``r-off-curve``,
    ``r-small-order``, ``r-mixed-order`` and ``s-out-of-range``. The identity R is permitted.
    """
    if len(signature) != SIGNATURE_LENGTH:
        raise Ed25519Error(
            "signature-length", f"an Ed25519 signature has 64 bytes, not {len(signature)}"
        )
    r_encoding, s_encoding = signature[:32], signature[32:]
    try:
        _check_point(r_encoding, allow_identity=True)
    except Ed25519Error as exc:
        raise Ed25519Error(f"r-{exc.reason}", f"signature R: {exc}") from None
    s = int.from_bytes(s_encoding, "little")
    if s >= L:
        raise Ed25519Error("s-out-of-range", "S is not below the group order L")
    return SignatureParts(r_encoding=r_encoding, s=s)


def equation_holds(public_key: bytes, parts: SignatureParts, message: bytes) -> bool:
    """Evaluate ``[S]B = R + [k]A`` for a checked public key and decoded signature.

    ``k`` is SHA-512 over ``Renc || Aenc || M``, little-endian, reduced modulo L. The caller must
    have passed ``public_key`` through ``check_public_key`` and obtained ``parts`` from
    ``decode_signature``. With A and R in the prime-order subgroup, libsodium's verification
    (which recomputes ``[S]B - [k]A`` and compares it with ``Renc`` byte for byte) decides
    exactly this equation; it refuses an identity R outright, so that one case is evaluated here
    with explicit group operations.
    """
    if parts.r_encoding != IDENTITY_ENCODING:
        signature = parts.r_encoding + parts.s.to_bytes(32, "little")
        try:
            _sodium.crypto_sign_open(signature + message, public_key)
        except BadSignatureError:
            return False
        return True
    digest = hashlib.sha512(parts.r_encoding + public_key + message).digest()
    k = int.from_bytes(digest, "little") % L
    # libsodium refuses to return the identity from a scalar multiplication: handle zero here.
    if parts.s == 0:
        left = IDENTITY_ENCODING
    else:
        left = _sodium.crypto_scalarmult_ed25519_base_noclamp(parts.s.to_bytes(32, "little"))
    if k == 0:
        k_a = IDENTITY_ENCODING
    else:
        k_a = _sodium.crypto_scalarmult_ed25519_noclamp(k.to_bytes(32, "little"), public_key)
    right = _sodium.crypto_core_ed25519_add(parts.r_encoding, k_a)
    return hmac.compare_digest(left, right)


def verify(public_key: bytes, signature: bytes, message: bytes) -> bool:
    """Strict pure-Ed25519 verification: every section 6.4 check, then the equation."""
    try:
        check_public_key(public_key)
        parts = decode_signature(signature)
    except Ed25519Error:
        return False
    return equation_holds(public_key, parts, message)


@dataclass(frozen=True, slots=True, kw_only=True)
class SigningKeyPair:
    """A deterministic Ed25519 key pair built from a 32-byte seed (RFC 8032 private key)."""

    seed: bytes = field(repr=False)
    public_key: bytes
    _secret_key: bytes = field(repr=False)

    @classmethod
    def from_seed(cls, seed: bytes) -> SigningKeyPair:
        """Build the key pair for ``seed`` (32 bytes); the same seed gives the same keys."""
        if len(seed) != SEED_LENGTH:
            raise ValueError(f"an Ed25519 seed has 32 bytes, not {len(seed)}")
        public_key, secret_key = _sodium.crypto_sign_seed_keypair(bytes(seed))
        return cls(seed=bytes(seed), public_key=public_key, _secret_key=secret_key)

    def sign(self, message: bytes) -> bytes:
        """Return the 64-byte pure Ed25519 signature over ``message`` (deterministic)."""
        signed: bytes = _sodium.crypto_sign(message, self._secret_key)
        return signed[:SIGNATURE_LENGTH]


def derive_seed(master_seed: int, label: str) -> bytes:
    """Derive a 32-byte seed from a sandbox master seed and a label, reproducibly.

    SHA-256 over a domain tag, the decimal master seed and the UTF-8 label, each length-prefixed
    so that no two (seed, label) pairs share an input. For sandboxes and tests only.
    """
    seed_text = str(int(master_seed)).encode("ascii")
    label_bytes = label.encode("utf-8")
    material = (
        _SEED_DERIVATION_DOMAIN
        + len(seed_text).to_bytes(4, "big")
        + seed_text
        + len(label_bytes).to_bytes(4, "big")
        + label_bytes
    )
    return hashlib.sha256(material).digest()
