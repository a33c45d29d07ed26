"""The lease lifecycle of §7.2 and §11.3, as data: issued active, renewed, then released,
revoked or expired, never reopened.

No Command and no Event kind of its own drives a lease: a lease changes inside the Event of the
WorkItem or Mission transition that changes it (``payload.leases`` carries the new Lease
document). The Authority looks each change up here when it closes a lease; replay checks every
Lease document an Event carries against the lease's previous state with ``between``.
"""

from __future__ import annotations

from enum import StrEnum

from ..documents.lease import LeaseState
from .core import Row, TransitionTable


class LeaseTransition(StrEnum):
    """What can happen to a lease."""

    ISSUE = "issue"
    RENEW = "renew"
    RELEASE = "release"
    REVOKE = "revoke"
    EXPIRE = "expire"


L = LeaseState
LT = LeaseTransition

LEASE_TABLE: TransitionTable[LeaseState, LeaseTransition] = TransitionTable(
    "Lease",
    (
        Row(
            transition=LT.ISSUE,
            sources=frozenset({L.NONE}),
            targets=(L.ACTIVE,),
            note="Creating a Mission or assigning a Coordinator (Coordinator lease), accepting an "
            "offer, checkpointing, unblocking or replacing a Session (ownership lease), starting "
            "(Execution Lease) or blocking (blocked lease)",
        ),
        Row(
            transition=LT.RENEW,
            sources=frozenset({L.ACTIVE}),
            targets=(L.ACTIVE,),
            note="The same Lease ID with a later expiry (work_execution_lease_renew, "
            "mission.renew_coordinator)",
        ),
        Row(
            transition=LT.RELEASE,
            sources=frozenset({L.ACTIVE}),
            targets=(L.RELEASED,),
            note="Checkpoint, block and submission release the Execution Lease; starting releases "
            "the ownership lease, unblocking the blocked lease, accepting the result every lease",
        ),
        Row(
            transition=LT.REVOKE,
            sources=frozenset({L.ACTIVE}),
            targets=(L.REVOKED,),
            note="Session replacement, reassignment, cancellation, failure and child-Mission "
            "creation revoke it",
        ),
        Row(
            transition=LT.EXPIRE,
            sources=frozenset({L.ACTIVE}),
            targets=(L.EXPIRED,),
            note="Timeout expires it (a lease_expired Event), as does fencing an expired owner "
            "for a re-offer or an unblock",
        ),
    ),
    terminal=frozenset({L.RELEASED, L.REVOKED, L.EXPIRED}),
)
