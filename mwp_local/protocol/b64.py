"""Canonical unpadded base64url (RFC 4648 §5, as section 2 requires).

Decoding is strict: the URL-safe alphabet only, no ``=`` padding, no impossible length, and the
unused bits of the last character must be zero, so each byte string has exactly one accepted
spelling.
"""

from __future__ import annotations

import base64
import re

_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")


def b64url_encode(data: bytes) -> str:
    """Encode bytes as canonical unpadded base64url."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """Decode canonical unpadded base64url; raise ``ValueError`` for any other spelling."""
    if not isinstance(text, str):
        raise ValueError("base64url value must be a string")
    if _ALPHABET.fullmatch(text) is None:
        raise ValueError("base64url value uses characters outside the URL-safe alphabet")
    if len(text) % 4 == 1:
        raise ValueError("base64url value has an impossible length")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64url_encode(data) != text:
        raise ValueError("base64url value has non-zero unused bits (noncanonical spelling)")
    return data
