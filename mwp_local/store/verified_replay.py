"""Verified replay for ``GroupLog.rebuild_projections(verify_signatures=True)``: the same state
as ``replay(..., verify_signatures=True)``, faster, on the log this store wrote itself.

Three shortcuts, safe to take because any doubt falls back to the plain path:

* each stored text is decoded as this store's own canonical text, and the schema stage is not
  run again (``trusted_replay`` says why that holds with signatures verified, and what it
  trusts);
* the signing bytes of each Event are cut from the canonical text the log stores
  (``signing.stored_signing_bytes``) instead of re-encoding the parsed document;
* stage 6, the Ed25519 equation, runs on two pool threads in batches while this thread checks
  stages 3-5 against the Registry as it stands at that Event and folds (libsodium releases the
  GIL).

The first Event that fails anything (a stage, bytes that cannot be cut, a signature,
``evolve``) stops the fast path and the plain ``replay`` runs from the start, so the error
raised is exactly the plain path's first failure. ``verify-log`` and import never come here
(they take the plain path). tests/test_fast_paths.py checks both paths give the same state and
refuse the same forgeries.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor

from ..authority import AuthorityState
from ..authority.evolve import evolve
from ..authority.organization import Organization
from ..protocol.signing import PendingEquation, profile_for, verify_own_stored
from ..protocol.tables import PROTOCOL_TABLES, StateTables
from .base import LogStore
from .trusted_replay import decode_own

__all__ = ["replay_verified"]

#: Equations evaluated per pool task (one hand-off costs about a tenth of one equation).
BATCH = 128
#: Batches in flight before this thread waits for the oldest (bounds memory on a large log).
IN_FLIGHT = 64


class _Failed(Exception):
    """A signature did not verify, or its signing bytes could not be cut from the text."""


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
                document = decode_own(text)
                equation = verify_own_stored(profile, document, text, state.registry)
                if equation is None:
                    raise _Failed
                batch.append(equation)
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
