"""``lease.schema.json``: fenced Coordinator, ownership, Execution and blocked leases (11.3).

Owns the Lease shape (which epochs and timestamps each lease type carries, renewal bookkeeping,
and the closure fields that only a closed lease has) and its type and state vocabularies. Expiry,
renewal and fencing *decisions* are made elsewhere; this module must not read a clock or perform
I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from .common import ID, POSITIVE_INTEGER, SAFE_INTEGER, TIMESTAMP
from .shapes import Const, Enum, Minimum, Str
from .structures import Forbids, Has, If, Obj, Where

__all__ = ["LEASE", "LEASE_WIRE_STATES", "LeaseState", "LeaseType"]


class LeaseType(StrEnum):
    """What a lease fences."""

    COORDINATOR = "coordinator"
    OWNERSHIP = "ownership"
    EXECUTION = "execution"
    BLOCKED = "blocked"


class LeaseState(StrEnum):
    """A lease is active until it expires, is revoked, or is released; ``NONE`` is the lease
    table's pre-state (not issued yet), never a wire value (``LEASE_WIRE_STATES``)."""

    NONE = "none"
    ACTIVE = "active"
    EXPIRED = "expired"
    REVOKED = "revoked"
    RELEASED = "released"


#: The states a Lease document carries.
LEASE_WIRE_STATES: Final = tuple(s for s in LeaseState if s is not LeaseState.NONE)


LEASE: Final = Obj(
    {
        "leaseId": ID,
        "leaseType": Enum.of(LeaseType),
        "missionId": ID,
        "groupId": ID,
        "holderAgentId": ID,
        "sessionEpoch": POSITIVE_INTEGER,
        "issuedAt": TIMESTAMP,
        "startsAt": TIMESTAMP,
        "expiresAt": TIMESTAMP,
        "state": Enum.of(LEASE_WIRE_STATES),
        "renewalCount": SAFE_INTEGER,
    },
    {
        "workItemId": ID,
        "coordinatorEpoch": POSITIVE_INTEGER,
        "ownershipEpoch": POSITIVE_INTEGER,
        "startBy": TIMESTAMP,
        "graceExpiresAt": TIMESTAMP,
        "lastRenewedAt": TIMESTAMP,
        "closedAt": TIMESTAMP,
        "closureReason": Str(
            pattern="\\S", max_len=512, hint="a reason with at least one non-space character"
        ),
    },
    rules=[
        If(
            Has(leaseType=Const(LeaseType.COORDINATOR)),
            then=Where(required=["coordinatorEpoch"]),
            then_why="a Coordinator lease carries the Coordinator Epoch",
        ),
        If(
            Has(leaseType=Enum(LeaseType.OWNERSHIP, LeaseType.EXECUTION, LeaseType.BLOCKED)),
            then=Where(required=["workItemId", "ownershipEpoch"]),
            then_why="a WorkItem lease names its WorkItem and Ownership Epoch",
        ),
        If(
            Has(leaseType=Const(LeaseType.OWNERSHIP)),
            then=Where(required=["startBy"]),
            then_why="an ownership lease says by when execution must start",
        ),
        If(
            Has(leaseType=Const(LeaseType.EXECUTION)),
            # ``capabilityTokenId`` is also named by the official schema; it is not a member
            # of the Lease at all, so it is refused as unknown anyway.
            then=Forbids("coordinatorEpoch", "startBy", "graceExpiresAt", "capabilityTokenId"),
            then_why="an Execution Lease carries none of the other lease types' fields",
        ),
        If(
            Has(renewalCount=Minimum(1)),
            then=Where(required=["lastRenewedAt"]),
            then_why="a renewed lease records its last renewal",
        ),
        If(
            Has(renewalCount=Const(0)),
            then=Forbids("lastRenewedAt"),
            then_why="a lease never renewed has no renewal time",
        ),
        If(
            Has(state=Const(LeaseState.ACTIVE)),
            then=Forbids("closedAt", "closureReason"),
            then_why="an active lease is not closed",
            otherwise=Where(required=["closedAt", "closureReason"]),
            else_why="a lease that is no longer active records when and why it closed",
        ),
    ],
)
