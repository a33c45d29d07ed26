"""RFC 8785: the reference and fast canonicalizers agree and match the official vectors."""

from __future__ import annotations

import json
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mwp_local.protocol.jcs import JcsError, canonicalize, canonicalize_reference, format_number
from mwp_local.protocol.jsontext import NonFiniteNumber, parse_strict

from ..conftest import PROTOCOL_ROOT

# RFC 8785 appendix B: IEEE 754 bit patterns and their ECMAScript spelling.
RFC8785_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "expected"), RFC8785_NUMBERS, ids=[b for b, _ in RFC8785_NUMBERS])
def test_numbers_use_the_ecmascript_spelling_of_rfc8785(bits: str, expected: str) -> None:
    value = struct.unpack(">d", bytes.fromhex(bits))[0]
    assert format_number(value) == expected
    assert canonicalize([value]) == canonicalize_reference([value]) == f"[{expected}]".encode()


def test_official_rfc8785_section_3_2_2_vector_matches_byte_for_byte() -> None:
    base = PROTOCOL_ROOT / "cryptography/vectors/canonicalization"
    value = parse_strict((base / "rfc8785-section-3.2.2-input.json").read_bytes())
    expected = (base / "rfc8785-section-3.2.2.jcs").read_bytes()
    assert canonicalize(value) == expected
    assert canonicalize_reference(value) == expected


def test_members_are_sorted_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is the surrogate pair D83D DE00, which sorts before U+E000 in UTF-16.
    doc = {"\ue000": 1, "\U0001f600": 2, "a": 3}
    expected = '{"a":3,"\U0001f600":2,"\ue000":1}'.encode()
    assert canonicalize(doc) == expected
    assert canonicalize_reference(doc) == expected


def test_control_characters_use_short_or_lowercase_unicode_escapes() -> None:
    doc = {"s": '\b\t\n\f\r\x00\x1f"\\/\x7f\u2028é'}
    expected = '{"s":"\\b\\t\\n\\f\\r\\u0000\\u001f\\"\\\\/\x7f\u2028é"}'.encode()
    assert canonicalize_reference(doc) == expected
    assert canonicalize(doc) == expected


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan, NonFiniteNumber("1e400")])
def test_non_finite_numbers_are_outside_the_data_model(bad: object) -> None:
    with pytest.raises(JcsError):
        canonicalize({"n": bad})
    with pytest.raises(JcsError):
        canonicalize_reference({"n": bad})


@pytest.mark.parametrize("bad", ["\ud800", "a\udfffb", "\udc00\ud800"])
def test_unpaired_surrogates_are_outside_the_data_model(bad: str) -> None:
    for value in ({"s": bad}, {bad: 1}, [bad]):
        with pytest.raises(JcsError):
            canonicalize(value)
        with pytest.raises(JcsError):
            canonicalize_reference(value)


def test_integers_beyond_binary64_precision_round_like_binary64() -> None:
    assert canonicalize(9007199254740993) == b"9007199254740992"
    assert canonicalize(10**21) == b"1e+21"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_fast_path_and_reference_give_identical_bytes(value: object) -> None:
    fast = canonicalize(value)
    assert fast == canonicalize_reference(value)
    # canonical output is itself JSON denoting the same binary64 values
    assert json.loads(fast, parse_int=float) == json.loads(json.dumps(value), parse_int=float)
