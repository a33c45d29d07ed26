"""Trusted decoding for ``GroupLog.rebuild_projections()``: the state ``replay(org, store)``
folds, with each stored Event text decoded by orjson instead of the strict parser of §6.4
stage 1 (``trusted_documents`` feeds ``group_log.fold``; ``decode_own`` feeds the verified
rebuild, see below).

What is trusted, and why. Every Event text in the log was written by this store's commit from
``EventRecord.document``, which ``authority.pipeline.event_record`` sets to ``jcs.canonicalize``
of the parsed Event, for the Events the Authority signs and for those import admits
(``log_import`` builds its records with the same ``event_record``). RFC 8785 text made from a
parsed value has no duplicate member name, no byte-order mark, no non-finite number, no unpaired
surrogate and nothing after the value: exactly what the strict parser exists to refuse. On a log
only the sandbox wrote, orjson therefore decodes the value the strict parser does, at a fraction
of its cost (stage 1 was about a quarter of a rebuild). The plain rebuild already trusts the
file for everything else (it checks no signature and no chain value).

What this path no longer checks: that the texts are strict JSON. A file edited by hand (or by
another program) to repeat a member name is folded with the last value, where the plain path
raises ``PROTOCOL_VIOLATION`` (stage ``parse``, ``duplicate-member``). Text orjson refuses
(invalid JSON, invalid UTF-8, an integer beyond 64 bits, a lone surrogate) goes to the strict
parser, which accepts it or raises the plain path's error. ``evolve`` still audits every Event
against the state tables (``ReplayError``), as on the plain path.

With signatures verified (``verified_replay``) the same decoding is used, and the schema
(§6.4 stage 2) is not checked again either: the Authority checked it before the store wrote
the text, and each Event's signature, verified over bytes cut from that very text, proves the
text is what was signed, so a changed byte fails the equation whatever it made the value. What
this path then no longer checks: that a signed text is strict JSON and schema-valid, i.e. that
the signer only signed such texts (an Authority's own key signing a duplicate member name or a
schema-invalid Event would be folded where the plain path raises). ``evolve``'s audit and every
other stage (the envelope, the key at that point of the Registry, the equation) still run.

When the plain path is used instead: ``verify-log`` and import (which must judge a file they
did not write), opening a ``GroupLog`` and ``replay(...)``, and any verified rebuild whose fast
path failed anything (its error is the plain path's). tests/test_fast_paths.py checks both
paths give the same state and projections, and that a tampered file is refused by what still
checks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ..protocol.jsontext import parse_strict

__all__ = ["decode_own", "trusted_documents"]


def decode_own(text: str) -> Any:
    """One stored Event text decoded by orjson; what orjson refuses is given to
    ``parse_strict``, which decodes it or raises the plain path's error."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # not JSON orjson reads: the strict parser names why
        return parse_strict(text)


def trusted_documents(texts: Iterable[str]) -> Iterator[dict[str, Any]]:
    """Each stored Event text decoded by orjson, in order; what orjson refuses is given to
    ``parse_strict``, which decodes it or raises the plain path's error."""
    loads, refused = orjson.loads, orjson.JSONDecodeError
    for text in texts:
        try:
            yield loads(text)
        except refused:  # not JSON orjson reads: the strict parser accepts it or names why
            yield parse_strict(text)
