"""RFC 8785 JSON Canonicalization Scheme (section 2, section 17.4).

Two implementations that must give identical bytes: :func:`canonicalize_reference`, a plain,
obviously-correct transcription of RFC 8785 kept for tests, and :func:`canonicalize`, the fast
path used everywhere else (string escaping by orjson, whose escaping matches RFC 8785 exactly).

The data model is I-JSON: numbers are finite binary64 values written in the ECMAScript
shortest-round-trip form; object members are sorted by their names' UTF-16 code units; strings
must not contain unpaired surrogates. Anything outside it raises :class:`JcsError` before any
bytes are produced (a stage-5 failure in section 6.4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .jsontext import NonFiniteNumber


class JcsError(ValueError):
    """A value outside the RFC 8785 / I-JSON data model."""


def _utf16_key(name: str) -> bytes:
    return name.encode("utf-16-be", errors="surrogatepass")


def format_number(value: float | int) -> str:
    """Spell a number as ECMAScript ``Number.prototype.toString`` does (RFC 8785 §3.2.2.3)."""
    if isinstance(value, bool):
        raise JcsError("a boolean is not a number")
    if isinstance(value, int):
        if -(2**53) <= value <= 2**53:
            return str(value)
        try:
            value = float(value)
        except OverflowError:
            raise JcsError("integer outside the binary64 range") from None
    if not math.isfinite(value):
        raise JcsError("non-finite numbers are outside the JCS data model")
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    k = len(digits)
    n = exponent  # value = 0.digits × 10^n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of a positive float and the exponent ``n``.

    ``repr`` gives the shortest string that round-trips (the same digits ECMAScript chooses).
    """
    text = repr(value)
    mantissa, _, exp = text.partition("e")
    exponent = int(exp) if exp else 0
    int_part, _, frac_part = mantissa.partition(".")
    digits = (int_part + frac_part).lstrip("0")
    exponent += len(int_part)
    # leading zeros removed from the integer part shift the point left
    stripped = len(int_part + frac_part) - len((int_part + frac_part).lstrip("0"))
    exponent -= stripped
    digits = digits.rstrip("0")
    return digits, exponent


def _check_string(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise JcsError("string contains an unpaired Unicode surrogate") from None


_SHORT_ESCAPES = {
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def _escape_reference(text: str) -> str:
    _check_string(text)
    out = ['"']
    for ch in text:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _reference(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, NonFiniteNumber):
        raise JcsError(f"number {value.text} is outside finite binary64")
    elif isinstance(value, int | float):
        out.append(format_number(value))
    elif isinstance(value, str):
        out.append(_escape_reference(value))
    elif isinstance(value, Mapping):
        names = list(value.keys())
        for name in names:
            if not isinstance(name, str):
                raise JcsError("object member names must be strings")
            _check_string(name)
        out.append("{")
        for i, name in enumerate(sorted(names, key=_utf16_key)):
            if i:
                out.append(",")
            out.append(_escape_reference(name))
            out.append(":")
            _reference(value[name], out)
        out.append("}")
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _reference(item, out)
        out.append("]")
    else:
        raise JcsError(f"{type(value).__name__} is not a JSON value")


def canonicalize_reference(value: Any) -> bytes:
    """RFC 8785 canonical bytes of ``value``: the plain reference implementation."""
    out: list[str] = []
    _reference(value, out)
    return "".join(out).encode("utf-8")


def _generic(value: Any, out: list[bytes]) -> None:
    """The general fast path: any value, subclasses of the JSON types included."""
    if isinstance(value, str):
        try:
            out.append(orjson.dumps(value))
        except TypeError:
            raise JcsError("string contains an unpaired Unicode surrogate") from None
    elif isinstance(value, dict):
        out.append(b"{")
        first = True
        keys = value.keys()
        if all(k.isascii() for k in keys if isinstance(k, str)) and all(
            isinstance(k, str) for k in keys
        ):
            ordered = sorted(keys)  # ASCII: code-point order equals UTF-16 order
        else:
            for k in keys:
                if not isinstance(k, str):
                    raise JcsError("object member names must be strings")
                _check_string(k)
            ordered = sorted(keys, key=_utf16_key)
        for name in ordered:
            if not first:
                out.append(b",")
            first = False
            try:
                out.append(orjson.dumps(name))
            except TypeError:
                raise JcsError("member name contains an unpaired Unicode surrogate") from None
            out.append(b":")
            _encode(value[name], out)
        out.append(b"}")
    elif isinstance(value, list | tuple):
        out.append(b"[")
        for i, item in enumerate(value):
            if i:
                out.append(b",")
            _encode(item, out)
        out.append(b"]")
    elif value is None:
        out.append(b"null")
    elif value is True:
        out.append(b"true")
    elif value is False:
        out.append(b"false")
    elif isinstance(value, int) and -(2**53) <= value <= 2**53:
        out.append(str(value).encode("ascii"))
    elif isinstance(value, int | float):
        out.append(format_number(value).encode("ascii"))
    elif isinstance(value, NonFiniteNumber):
        raise JcsError(f"number {value.text} is outside finite binary64")
    elif isinstance(value, Mapping):
        _encode(dict(value), out)
    else:
        raise JcsError(f"{type(value).__name__} is not a JSON value")


_INT_LIMIT = 2**53
#: ``"name":`` (and ``,"name":``) of ASCII member names already seen: protocol documents reuse a
#: few hundred names, and encoding each once saves an ``orjson.dumps`` per member. Bounded, so
#: that free-form payloads with ever-new names cannot grow it without limit.
_NAME_CACHE: dict[str, tuple[bytes, bytes]] = {}
_NAME_CACHE_LIMIT = 8192


def _name_bytes(name: str) -> tuple[bytes, bytes]:
    cached = _NAME_CACHE.get(name)
    if cached is None:
        encoded = orjson.dumps(name) + b":"
        cached = (encoded, b"," + encoded)
        if len(_NAME_CACHE) < _NAME_CACHE_LIMIT:
            _NAME_CACHE[name] = cached
    return cached


def _encode(value: Any, out: list[bytes]) -> None:
    """Dispatch on the exact type: the plain JSON types take the short paths below, anything
    else (subclasses, floats, other mappings, refused values) goes through ``_generic``, so the
    bytes and the errors are those of ``_generic`` in every case."""
    kind = type(value)
    if kind is dict:
        _encode_dict(value, out)
    elif kind is str:
        try:
            out.append(orjson.dumps(value))
        except TypeError:
            raise JcsError("string contains an unpaired Unicode surrogate") from None
    elif kind is list or kind is tuple:
        _encode_list(value, out)
    elif kind is int and -_INT_LIMIT <= value <= _INT_LIMIT:
        out.append(b"%d" % value)
    else:
        _generic(value, out)


def _encode_list(value: list[Any] | tuple[Any, ...], out: list[bytes]) -> None:
    append = out.append
    append(b"[")
    first = True
    for item in value:
        if first:
            first = False
        else:
            append(b",")
        kind = type(item)
        if kind is str:
            try:
                append(orjson.dumps(item))
            except TypeError:
                raise JcsError("string contains an unpaired Unicode surrogate") from None
        elif kind is dict:
            _encode_dict(item, out)
        else:
            _encode(item, out)
    append(b"]")


def _encode_dict(value: dict[Any, Any], out: list[bytes]) -> None:
    try:
        ascii_names = "".join(value).isascii()
    except TypeError:  # a member name that is not a string
        ascii_names = False
    if not ascii_names:
        _generic(value, out)
        return
    append = out.append
    cached = _NAME_CACHE.get
    append(b"{")
    first = True
    for name in sorted(value):  # ASCII: code-point order equals UTF-16 order
        encoded, after_comma = cached(name) or _name_bytes(name)
        if first:
            append(encoded)
            first = False
        else:
            append(after_comma)
        item = value[name]
        kind = type(item)
        if kind is str:
            try:
                append(orjson.dumps(item))
            except TypeError:
                raise JcsError("string contains an unpaired Unicode surrogate") from None
        elif kind is dict:
            _encode_dict(item, out)
        elif kind is int and -_INT_LIMIT <= item <= _INT_LIMIT:
            append(b"%d" % item)
        elif kind is list:
            _encode_list(item, out)
        else:
            _encode(item, out)
    append(b"}")


def canonicalize(value: Any) -> bytes:
    """RFC 8785 canonical bytes of ``value`` (fast path; identical to the reference)."""
    out: list[bytes] = []
    _encode(value, out)
    return b"".join(out)
