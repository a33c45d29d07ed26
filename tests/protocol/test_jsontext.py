"""Stage 1 strict parsing: one UTF-8 JSON value, no BOM, no trailing data, no duplicate names."""

from __future__ import annotations

import pytest

from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.jsontext import NonFiniteNumber, parse_strict


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"\xef\xbb\xbf{}", "utf8-bom"),
        (b'{"a":"\xff"}', "invalid-utf8"),
        (b'{"a":1} {}', "trailing-data"),
        (b'{"a":1}x', "trailing-data"),
        (b'{"a":1,"a":2}', "duplicate-member"),
        (b'{"a":1,"\\u0061":2}', "duplicate-member"),
        (b'{"a":NaN}', "invalid-json"),
        (b'{"a":Infinity}', "invalid-json"),
        (b"", "invalid-json"),
        (b'{"a":01}', "invalid-json"),
        (b'{"a":"\x01"}', "invalid-json"),
    ],
)
def test_malformed_json_is_a_protocol_violation_at_parse_stage(data: bytes, reason: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_strict(data)
    assert info.value.code is ErrorCode.PROTOCOL_VIOLATION
    assert info.value.stage == "parse"
    assert info.value.reason == reason


def test_number_outside_binary64_is_kept_for_stage_5() -> None:
    assert parse_strict(b'{"n":1e400}') == {"n": NonFiniteNumber("1e400")}
    assert parse_strict(b'{"n":-1e400}') == {"n": NonFiniteNumber("-1e400")}


def test_unpaired_surrogate_escape_is_kept_for_stage_5() -> None:
    assert parse_strict(b'{"s":"\\ud800"}') == {"s": "\ud800"}


def test_whitespace_around_the_value_is_allowed() -> None:
    assert parse_strict(b' \n{"a": [1, 2.5, true, null]}\r\n') == {"a": [1, 2.5, True, None]}
