"""The tamper-evident BLAKE3 hash chain over the Group log.

The chain runs over every Event of the log in log position order (all Groups and
Organization-scoped Events together)::

    chain_0 = 32 zero bytes                       (genesis)
    chain_n = blake3(chain_{n-1} || document_n as UTF-8).digest()   (32 bytes)

where ``document_n`` is the exact signed Event text the log stores. Each log row keeps its
``chain_n``, so one pass over ``(document, chain)`` pairs proves a log or an export untouched.

This module is pure: it computes and checks chain values and never reads or writes a store. BLAKE3
here is a local storage integrity device, not protocol identity (that is ``sha256:``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from blake3 import blake3

__all__ = ["CHAIN_BYTES", "GENESIS", "ChainProblem", "extend", "link", "verify_chain"]

#: Length of a chain value.
CHAIN_BYTES = 32
#: The chain value before the first Event.
GENESIS = bytes(CHAIN_BYTES)


def link(previous: bytes, document: str) -> bytes:
    """The chain value of an Event whose predecessor's chain value is ``previous``."""
    hasher = blake3(previous)
    hasher.update(document.encode("utf-8"))
    return hasher.digest()


def extend(previous: bytes, documents: Iterable[str]) -> list[bytes]:
    """The chain values of ``documents`` appended after a chain ending in ``previous``."""
    chains: list[bytes] = []
    chain = previous
    for document in documents:
        chain = link(chain, document)
        chains.append(chain)
    return chains


@dataclass(frozen=True, slots=True, kw_only=True)
class ChainProblem:
    """One row whose stored chain value does not match its document."""

    #: Log position of the row (``first_position`` + its index in the input).
    position: int
    #: What is wrong, for a person.
    reason: str
    #: The stored chain value, hex (empty when it was missing).
    found: str
    #: The chain value recomputed from the previous row's stored value and this document, hex.
    expected: str


def verify_chain(
    documents_with_chains: Iterable[tuple[str, bytes]],
    *,
    start: bytes = GENESIS,
    first_position: int = 1,
    limit: int | None = 100,
) -> list[ChainProblem]:
    """Check stored chain values against their documents; return the problems (empty if none).

    Each row is checked against the *stored* value of the row before it (``start`` for the
    first), so an altered document shows up at its own position and an altered chain value at
    its own position and the next one, instead of every later row. Stops after ``limit``
    problems (``None`` for no limit).
    """
    problems: list[ChainProblem] = []
    previous = start
    for offset, (document, stored) in enumerate(documents_with_chains):
        expected = link(previous, document)
        if stored != expected:
            stored_bytes = bytes(stored) if stored is not None else b""
            reason = (
                f"chain value has {len(stored_bytes)} bytes, expected {CHAIN_BYTES}"
                if len(stored_bytes) != CHAIN_BYTES
                else "chain value does not match blake3(previous chain || document)"
            )
            problems.append(
                ChainProblem(
                    position=first_position + offset,
                    reason=reason,
                    found=stored_bytes.hex(),
                    expected=expected.hex(),
                )
            )
            if limit is not None and len(problems) >= limit:
                break
        previous = bytes(stored) if stored is not None else expected
    return problems
