"""The Group Authority: decides Commands and produces signed Events, with no I/O.

``Authority.handle(command_bytes, now)`` runs the Command through the pipeline of section 15.1
(strict parse, schema, six-stage signature verification, freshness, actor, Session / Membership /
Coordinator / Ownership epochs, Lease ID, expected revision, role, delegation, budget and policy,
then the state tables) and returns either the signed Events it accepts, with their receipt, or a
``ProtocolError`` with the exact section-19 code. State changes only by folding accepted Events
through ``evolve``, which replay uses too. Storage is an adapter (``mwp_local.store``).
"""

from .config import AuthorityConfig
from .pipeline import Accepted, Authority, Outcome, Rejected
from .state import AuthorityState

__all__ = ["Accepted", "Authority", "AuthorityConfig", "AuthorityState", "Outcome", "Rejected"]
