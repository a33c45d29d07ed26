"""The typed value of ``lease.schema.json``: :class:`Lease`.

Its shape and the lease type and state vocabularies live in ``documents.lease``. It must not read a
clock or perform I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..lease import LEASE, LeaseState, LeaseType
from ..shapes import Shape
from ..wire import WireObject

__all__ = ["Lease"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease(WireObject):
    """A fenced lease held by one Agent session (section 11.3)."""

    __shape__: ClassVar[Shape] = LEASE
    __what__: ClassVar[str] = "lease"

    lease_id: str
    lease_type: LeaseType
    mission_id: str
    group_id: str
    work_item_id: str | None = None
    holder_agent_id: str
    session_epoch: int
    coordinator_epoch: int | None = None
    ownership_epoch: int | None = None
    start_by: str | None = None
    issued_at: str
    starts_at: str
    expires_at: str
    grace_expires_at: str | None = None
    state: LeaseState
    renewal_count: int
    last_renewed_at: str | None = None
    closed_at: str | None = None
    closure_reason: str | None = None
