"""Verified replay for ``GroupLog.rebuild_projections(verify_signatures=True)``: the same state
as ``replay(..., verify_signatures=True)``, faster.

Two shortcuts, both safe to take because any doubt falls back to the plain path:

* the signing bytes of each Event are cut from the canonical text the log stores
  (``signing.stored_signing_bytes``) instead of re-encoding the parsed document (RFC 8785 was
  about a quarter of a verified rebuild);
* stage 6, the Ed25519 equation, runs on two pool threads in batches while this thread parses,
  checks stages 2-5 against the Registry as it stands at that Event, and folds (libsodium
  releases the GIL).

The first Event that fails anything (a stage, a signature, ``evolve``) stops the fast path and
the plain ``replay`` runs from the start, so the error raised is exactly the plain path's first
failure. ``verify-log`` and import never come here (they take the plain path).
tests/test_fast_paths.py checks both paths give the same state and refuse the same forgeries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from ..authority import AuthorityState
from ..authority.evolve import evolve
from ..authority.organization import Organization
from ..protocol.jsontext import parse_strict
from ..protocol.signing import PendingEquation, profile_for, verify_stored
from ..protocol.tables import PROTOCOL_TABLES, StateTables
from .base import LogStore

__all__ = ["replay_verified"]

#: Equations evaluated per pool task (one hand-off costs about a tenth of one equation).
BATCH = 128
#: Batches in flight before this thread waits for the oldest (bounds memory on a large log).
IN_FLIGHT = 64


class _Failed(Exception):
    """A signature did not verify."""


def _all_hold(batch: list[PendingEquation]) -> bool:
    return all(equation.holds() for equation in batch)


def replay_verified(
    org: Organization,
    store: LogStore,
    documents: Iterator[str],
    *,
    tables: StateTables = PROTOCOL_TABLES,
) -> AuthorityState | None:
    """The state ``replay(org, store, verify_signatures=True)`` folds from ``documents`` (the
    log's stored Event texts in order), or ``None`` when an Event failed anything: the caller
    then runs the plain path, which raises that Event's error."""
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    profile = profile_for("event")
    batch: list[PendingEquation] = []
    pending: deque[Future[bool]] = deque()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="mwp-verify") as pool:
        try:
            for text in documents:
                document = parse_strict(text)
                batch.append(verify_stored(profile, document, text, state.registry))
                evolve(state, document, tables)
                if len(batch) == BATCH:
                    pending.append(pool.submit(_all_hold, batch))
                    batch = []
                    if len(pending) > IN_FLIGHT and not pending.popleft().result():
                        raise _Failed
            pending.append(pool.submit(_all_hold, batch))
            if not all(future.result() for future in pending):
                raise _Failed
        except Exception:  # _Failed or any error: the plain path names the first failure
            for future in pending:
                future.cancel()
            return None
    for receipt in store.receipts():
        state.receipts[(receipt.actor_id, receipt.action_id)] = receipt
    state.take_touched()
    return state
