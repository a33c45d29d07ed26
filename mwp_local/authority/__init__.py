"""The Group Authority: decides Commands and produces signed Events, with no I/O.

``Authority.handle(command_bytes, now)`` runs the Command through the pipeline of section 15.1
(strict parse, protocol version, schema, six-stage signature verification, freshness, rate
policy, actor, Session / Membership / Coordinator epochs, then the state tables, then the row's
fences: Ownership Epoch, Lease ID, role, expected revision, then delegation, budget and policy)
and returns either the signed Events it accepts, with their receipt, or a
``ProtocolError`` with the exact section-19 code. State changes only by folding accepted Events
through ``evolve``, which replay uses too. Storage is an adapter (``mwp_local.store``).
"""

from .config import AuthorityConfig, RatePolicy
from .pipeline import Accepted, Authority, Outcome, Rejected
from .state import AuthorityState

__all__ = [
    "Accepted",
    "Authority",
    "AuthorityConfig",
    "AuthorityState",
    "Outcome",
    "RatePolicy",
    "Rejected",
]
