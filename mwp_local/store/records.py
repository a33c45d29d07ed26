"""What a log store commits in one transaction (``Batch``: the Authority's records and the
projection rows rendered from its state) and the declared shape of every projection table.

Data definitions only: no SQL, no I/O. Every record is immutable.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..authority.records import EventRecord, ReceiptRecord, RejectionRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectionTable:
    """The declared shape of one projection table: ordered ``(name, SQL type)`` columns and key."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    description: str = ""
    #: The column names in order (derived from ``columns``; read for every row written or
    #: compared, so computed once).
    column_names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    #: The same names as a set (``coerce_row`` refuses a row with any other).
    column_set: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = tuple(name for name, _ in self.columns)
        object.__setattr__(self, "column_names", names)
        object.__setattr__(self, "column_set", frozenset(names))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProjectionDelta:
    """Rows to upsert (whole rows, by key) and keys to delete, per projection table."""

    upserts: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    deletes: Mapping[str, tuple[tuple[Any, ...], ...]] = field(default_factory=dict)

    def is_empty(self) -> bool:
        """Whether the delta changes nothing."""
        return not any(self.upserts.values()) and not any(self.deletes.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class Batch:
    """Everything one store transaction commits: all of it, or none of it."""

    events: tuple[EventRecord, ...] = ()
    receipts: tuple[ReceiptRecord, ...] = ()
    rejections: tuple[RejectionRecord, ...] = ()
    projections: ProjectionDelta = field(default_factory=ProjectionDelta)


def _table(name: str, description: str, key: tuple[str, ...], *columns: str) -> ProjectionTable:
    parsed = tuple((c.split(" ", 1)[0], c.split(" ", 1)[1]) for c in columns)
    return ProjectionTable(name=name, columns=parsed, key=key, description=description)


#: The projection tables, rebuilt from the log by replay. Views with friendlier names sit on top.
PROJECTIONS: tuple[ProjectionTable, ...] = (
    _table(
        "proj_missions",
        "current state of each Mission (§7.1)",
        ("mission_id",),
        "mission_id VARCHAR",
        "group_id VARCHAR",
        "state VARCHAR",
        "revision BIGINT",
        "objective VARCHAR",
        "owner_type VARCHAR",
        "owner_id VARCHAR",
        "coordinator_agent_id VARCHAR",
        "coordinator_epoch BIGINT",
        "parent_mission_id VARCHAR",
        "parent_work_item_id VARCHAR",
        "deadline VARCHAR",
        "last_sequence BIGINT",
    ),
    _table(
        "proj_work_items",
        "current state of each WorkItem (§10.2), with its WorkItem document",
        ("work_item_id",),
        "work_item_id VARCHAR",
        "mission_id VARCHAR",
        "group_id VARCHAR",
        "state VARCHAR",
        "revision BIGINT",
        "contract_version BIGINT",
        "exclusive BOOLEAN",
        "owner_agent_id VARCHAR",
        "ownership_epoch BIGINT",
        "execution_lease_id VARCHAR",
        "urgency VARCHAR",
        "deadline VARCHAR",
        "attempts BIGINT",
        "last_sequence BIGINT",
        "document VARCHAR",
    ),
    _table(
        "proj_offers",
        "every offer made, with its status",
        ("offer_id",),
        "offer_id VARCHAR",
        "work_item_id VARCHAR",
        "group_id VARCHAR",
        "agent_id VARCHAR",
        "contract_version BIGINT",
        "status VARCHAR",
        "expires_at VARCHAR",
        "decline_reason VARCHAR",
        "last_sequence BIGINT",
    ),
    _table(
        "proj_leases",
        "Coordinator, ownership, execution and blocked leases (§7.2, §11.3)",
        ("lease_id",),
        "lease_id VARCHAR",
        "lease_type VARCHAR",
        "group_id VARCHAR",
        "mission_id VARCHAR",
        "work_item_id VARCHAR",
        "holder_agent_id VARCHAR",
        "session_epoch BIGINT",
        "ownership_epoch BIGINT",
        "coordinator_epoch BIGINT",
        "state VARCHAR",
        "issued_at VARCHAR",
        "expires_at VARCHAR",
        "renewal_count BIGINT",
        "closed_at VARCHAR",
        "closure_reason VARCHAR",
        "document VARCHAR",
    ),
    _table(
        "proj_budgets",
        "six-dimensional budget ledger per Mission and WorkItem (§12)",
        ("scope_type", "scope_id", "dimension"),
        "scope_type VARCHAR",
        "scope_id VARCHAR",
        "dimension VARCHAR",
        "limit_value DOUBLE",
        "used_value DOUBLE",
        "remaining_value DOUBLE",
    ),
    _table(
        "proj_memberships",
        "Group Memberships and their epochs (§8)",
        ("group_id", "principal_id"),
        "group_id VARCHAR",
        "principal_id VARCHAR",
        "principal_type VARCHAR",
        "role VARCHAR",
        "epoch BIGINT",
        "state VARCHAR",
    ),
    _table(
        "proj_agents",
        "registered Agents, their Agent Card version and current Session Epoch (§6)",
        ("agent_id",),
        "agent_id VARCHAR",
        "agent_card_version BIGINT",
        "session_epoch BIGINT",
        "max_concurrency BIGINT",
        "capabilities VARCHAR",
    ),
    _table(
        "proj_signing_keys",
        "signing-key bindings of the Registry with their effective validity (§6.4)",
        ("key_id",),
        "key_id VARCHAR",
        "principal_type VARCHAR",
        "principal_id VARCHAR",
        "algorithm VARCHAR",
        "public_key VARCHAR",
        "valid_from VARCHAR",
        "valid_until VARCHAR",
        "revoked_at VARCHAR",
    ),
)

PROJECTION_BY_NAME: Mapping[str, ProjectionTable] = {t.name: t for t in PROJECTIONS}
