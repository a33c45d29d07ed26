"""The BLAKE3 hash chain: genesis, extension, and localized tamper reports."""

from __future__ import annotations

from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st

from mwp_local.store.chain import GENESIS, extend, link, verify_chain

DOCS = ['{"a":1}', '{"b":"ü"}', "{}", '{"c":[1,2,3]}']


def test_genesis_is_32_zero_bytes() -> None:
    assert GENESIS == b"\x00" * 32


def test_link_is_blake3_of_previous_chain_and_document_utf8() -> None:
    assert link(GENESIS, '{"b":"ü"}') == blake3(GENESIS + '{"b":"ü"}'.encode()).digest()


@given(st.lists(st.text(), max_size=8), st.lists(st.text(), max_size=8))
def test_extending_in_two_steps_equals_extending_at_once(a: list[str], b: list[str]) -> None:
    first = extend(GENESIS, a)
    rest = extend(first[-1] if first else GENESIS, b)
    assert first + rest == extend(GENESIS, a + b)


def test_untouched_chain_verifies() -> None:
    assert verify_chain(zip(DOCS, extend(GENESIS, DOCS), strict=True)) == []


def test_chain_continued_from_a_start_value_verifies() -> None:
    chains = extend(GENESIS, DOCS)
    problems = verify_chain(
        zip(DOCS[2:], chains[2:], strict=True), start=chains[1], first_position=3
    )
    assert problems == []


def test_altered_document_is_reported_at_its_own_position_only() -> None:
    chains = extend(GENESIS, DOCS)
    docs = list(DOCS)
    docs[1] = '{"b":"u"}'
    problems = verify_chain(zip(docs, chains, strict=True))
    assert [p.position for p in problems] == [2]
    assert problems[0].found == chains[1].hex()


def test_altered_chain_value_is_reported_at_it_and_the_next_row() -> None:
    chains = extend(GENESIS, DOCS)
    chains[1] = bytes(32)
    assert [p.position for p in verify_chain(zip(DOCS, chains, strict=True))] == [2, 3]


def test_wrong_length_chain_value_says_so() -> None:
    chains = extend(GENESIS, DOCS)
    chains[0] = chains[0][:16]
    (first, *_) = verify_chain(zip(DOCS, chains, strict=True))
    assert "16 bytes" in first.reason


def test_verification_stops_at_the_limit() -> None:
    assert len(verify_chain(((d, bytes(32)) for d in DOCS), limit=2)) == 2
