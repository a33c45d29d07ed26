"""Strict JSON text parsing: stage 1 of the Signed Document Verification Profile (section 6.4).

Accepts exactly one UTF-8 JSON value: invalid UTF-8, a byte-order mark, trailing data, the
non-JSON literals ``NaN``/``Infinity``, and duplicate decoded object member names are refused
with ``PROTOCOL_VIOLATION`` at stage ``parse``. Numbers are kept losslessly enough for the later
stages: a syntactically valid number outside the finite binary64 range (``1e400``) is returned
as a :class:`NonFiniteNumber`, because section 6.4 classifies it as a stage-5 (canonicalization)
failure, not a parse failure. Likewise strings with unpaired surrogate escapes are returned as
they are, for stage 5 to refuse.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .errors import ErrorCode, ProtocolError


@dataclass(frozen=True, slots=True)
class NonFiniteNumber:
    """A JSON number whose value lies outside finite IEEE 754 binary64 (kept as its text)."""

    text: str


class _DuplicateMember(ValueError):
    pass


def _object_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):  # a name repeats: name the first one that does
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateMember(key)
            seen.add(key)
    return obj


def _parse_float(text: str) -> float | NonFiniteNumber:
    value = float(text)
    if math.isinf(value):
        return NonFiniteNumber(text)
    return value


def _parse_int(text: str) -> int | NonFiniteNumber:
    value = int(text)
    # An integer too large for binary64 cannot enter the JCS data model either (one of at
    # most 308 digits never is).
    if len(text) > 308:
        try:
            float(value)
        except OverflowError:
            return NonFiniteNumber(text)
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


_DECODER = json.JSONDecoder(
    object_pairs_hook=_object_pairs,
    parse_float=_parse_float,
    parse_int=_parse_int,
    parse_constant=_refuse_constant,
    strict=True,
)


def _violation(reason: str, explanation: str) -> ProtocolError:
    return ProtocolError(
        ErrorCode.PROTOCOL_VIOLATION,
        explanation,
        stage="parse",
        reason=reason,
        rule="§6.4 stage 1: strict JSON parsing",
    )


def parse_strict(data: bytes | str) -> Any:
    """Parse exactly one JSON value from UTF-8 ``data`` (or an already decoded ``str``)."""
    if isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
        if raw.startswith(b"\xef\xbb\xbf"):
            raise _violation("utf8-bom", "The document starts with a UTF-8 byte-order mark.")
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as exc:
            raise _violation(
                "invalid-utf8", f"The document is not valid UTF-8 (byte {exc.start})."
            ) from None
    else:
        text = data
        if text.startswith("\ufeff"):
            raise _violation("utf8-bom", "The document starts with a byte-order mark.")
    try:
        value, end = _DECODER.raw_decode(text, _skip_ws(text, 0))
    except _DuplicateMember as exc:
        raise _violation(
            "duplicate-member",
            f"An object repeats the member name {exc.args[0]!r} (after decoding escapes).",
        ) from None
    except (ValueError, RecursionError) as exc:
        raise _violation("invalid-json", f"The document is not valid JSON: {exc}") from None
    if _skip_ws(text, end) != len(text):
        raise _violation("trailing-data", "The document has data after its JSON value.")
    return value


def _skip_ws(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index
