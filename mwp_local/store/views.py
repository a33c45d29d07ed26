"""The documented SQL views over the Group log, and a read-only query helper.

This module owns the names and columns people query (``events``, ``work_items``, ...): each view
is a plain ``SELECT`` over the log and projection tables in portable SQL (no DuckDB-only syntax),
so the same queries run on the Parquet export in other engines. ``VIEW_DOCS`` describes every view
with an example query; ``docs/sql.md`` is generated from it and the tests run every example.

It must not write anything but the view definitions: ``sql()`` runs one ``SELECT`` (or
``EXPLAIN``) on its own cursor inside a transaction that is always rolled back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import duckdb
import pyarrow as pa

from .records import PROJECTION_BY_NAME

if TYPE_CHECKING:
    from .duckdb_log import DuckDBLogStore

__all__ = ["VIEW_DOCS", "ViewDoc", "create_views", "render_markdown", "sql", "view_sql"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewDoc:
    """What one view shows, with an example query (and its ``$name`` parameters, if any)."""

    description: str
    example: str
    example_params: Mapping[str, Any] = field(default_factory=dict)


_EVENT_COLUMNS = (
    "position, group_id, sequence, aggregate_revision, event_id, kind, occurred_at, "
    "occurred_at_ts, actor_type, actor_id, cause_type, cause_id, correlation_id, mission_id, "
    "work_item_id, from_state, to_state, payload, document"
)


def _projection_view(table: str) -> str:
    columns = ", ".join(PROJECTION_BY_NAME[table].column_names)
    return f"SELECT {columns} FROM {table}"


#: View name → its ``SELECT``. Order matters only for reading.
_VIEWS: Mapping[str, str] = {
    "events": f"SELECT {_EVENT_COLUMNS} FROM log_events",
    "rejections": (
        "SELECT position, received_at, code, explanation, actor_id, action_id, kind, group_id, "
        "work_item_id, rule, stage, reason, details, command_text FROM log_rejections"
    ),
    "receipts": (
        "SELECT position, actor_id, action_id, kind, group_id, accepted_at, command_hash, "
        "event_ids, receipt, command_document FROM log_receipts"
    ),
    "work_items": _projection_view("proj_work_items"),
    "work_item_transitions": (
        "SELECT position, group_id, sequence, event_id, work_item_id, kind, from_state, to_state, "
        "occurred_at, occurred_at_ts, actor_type, actor_id FROM log_events "
        "WHERE to_state IS NOT NULL"
    ),
    "offers": _projection_view("proj_offers"),
    "leases": _projection_view("proj_leases"),
    "budgets": _projection_view("proj_budgets"),
    "signing_keys": _projection_view("proj_signing_keys"),
    "memberships": _projection_view("proj_memberships"),
    "missions": _projection_view("proj_missions"),
    "agents": _projection_view("proj_agents"),
    # The provenance graph of §13.1 (``mwp_local.artifacts.provenance`` reads it). Its JSON
    # paths (``->>``, ``json_each``) read the same in DuckDB and SQLite; other engines spell
    # them with their own JSON functions.
    "artifact_edges": """
SELECT 'derived_from' AS edge, 'artifact' AS from_type,
       p.payload->>'$.artifact.contentHash' AS from_id, 'artifact' AS to_type,
       s.value->>'$' AS to_id, p.payload->>'$.missionId' AS mission_id, p.group_id,
       p.payload->>'$.workItemId' AS work_item_id, p.event_id, p.sequence, p.position
FROM log_events p, json_each(p.payload->'$.artifact.sourceArtifactHashes') s
WHERE p.kind = 'artifact.published'
UNION ALL
SELECT 'produced_for', 'artifact', payload->>'$.artifact.contentHash', 'work_item',
       payload->>'$.workItemId', payload->>'$.missionId', group_id,
       payload->>'$.workItemId', event_id, sequence, position
FROM log_events WHERE kind = 'artifact.published'
UNION ALL
SELECT 'part_of', 'work_item', payload->>'$.workItem.workItemId', 'mission',
       payload->>'$.missionId', payload->>'$.missionId', group_id,
       payload->>'$.workItem.workItemId', event_id, sequence, position
FROM log_events WHERE kind = 'work.authorized'
UNION ALL
SELECT 'child_of', 'mission', payload->>'$.missionId', 'work_item',
       payload->>'$.mission.parent.workItemId', payload->>'$.missionId', group_id,
       NULL, event_id, sequence, position
FROM log_events
WHERE kind = 'mission.created' AND payload->>'$.mission.parent.workItemId' IS NOT NULL
""".strip(),
}

VIEW_DOCS: Mapping[str, ViewDoc] = {
    "events": ViewDoc(
        description=(
            "every accepted Event in log order: typed envelope columns, `payload` (JSON) and "
            "`document`, the exact signed JSON text"
        ),
        example="SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind",
    ),
    "rejections": ViewDoc(
        description=(
            "every refused Command with its section-19 code, the rule that refused it and the "
            "Command text as received"
        ),
        example="SELECT code, count(*) AS n FROM rejections GROUP BY code ORDER BY n DESC, code",
    ),
    "receipts": ViewDoc(
        description="the receipt of every accepted Command and the Event IDs it produced",
        example=(
            "SELECT actor_id, action_id, kind, accepted_at FROM receipts "
            "ORDER BY position DESC LIMIT 10"
        ),
    ),
    "work_items": ViewDoc(
        description=PROJECTION_BY_NAME["proj_work_items"].description,
        example="SELECT state, count(*) AS n FROM work_items GROUP BY state ORDER BY state",
    ),
    "work_item_transitions": ViewDoc(
        description="every Event that moved a WorkItem between states of §10.2, in order",
        example=(
            "SELECT sequence, kind, from_state, to_state, occurred_at FROM work_item_transitions "
            "WHERE work_item_id = $work_item_id ORDER BY position"
        ),
        example_params={"work_item_id": "urn:example:work-item:1"},
    ),
    "offers": ViewDoc(
        description=PROJECTION_BY_NAME["proj_offers"].description,
        example="SELECT agent_id, status, count(*) AS n FROM offers GROUP BY agent_id, status "
        "ORDER BY agent_id, status",
    ),
    "leases": ViewDoc(
        description=PROJECTION_BY_NAME["proj_leases"].description,
        example=(
            "SELECT lease_type, holder_agent_id, state, expires_at FROM leases "
            "WHERE closed_at IS NULL ORDER BY expires_at"
        ),
    ),
    "budgets": ViewDoc(
        description=PROJECTION_BY_NAME["proj_budgets"].description,
        example=(
            "SELECT scope_type, scope_id, dimension, used_value, limit_value FROM budgets "
            "WHERE used_value >= 0.8 * limit_value ORDER BY scope_id, dimension"
        ),
    ),
    "signing_keys": ViewDoc(
        description=PROJECTION_BY_NAME["proj_signing_keys"].description,
        example=(
            "SELECT principal_id, key_id, valid_from, valid_until, revoked_at FROM signing_keys "
            "ORDER BY principal_id, valid_from"
        ),
    ),
    "memberships": ViewDoc(
        description=PROJECTION_BY_NAME["proj_memberships"].description,
        example=(
            "SELECT principal_id, role, epoch, state FROM memberships "
            "WHERE group_id = $group_id ORDER BY principal_id"
        ),
        example_params={"group_id": "urn:example:group:1"},
    ),
    "missions": ViewDoc(
        description=PROJECTION_BY_NAME["proj_missions"].description,
        example="SELECT mission_id, state, revision, objective FROM missions ORDER BY mission_id",
    ),
    "agents": ViewDoc(
        description=PROJECTION_BY_NAME["proj_agents"].description,
        example=(
            "SELECT agent_id, agent_card_version, session_epoch, max_concurrency FROM agents "
            "ORDER BY agent_id"
        ),
    ),
    "artifact_edges": ViewDoc(
        description=(
            "the provenance graph (§13.1): `derived_from` Artifact → source Artifact and "
            "`produced_for` Artifact → WorkItem (from `artifact.published`), `part_of` WorkItem "
            "→ Mission (`work.authorized`), `child_of` child Mission → parent WorkItem; Artifacts "
            "are named by `sha256:` content hash"
        ),
        example=(
            "SELECT to_id AS source, count(*) AS derived FROM artifact_edges "
            "WHERE edge = 'derived_from' GROUP BY to_id ORDER BY derived DESC, source"
        ),
    ),
}


def view_sql(name: str) -> str:
    """The ``SELECT`` behind a documented view."""
    return _VIEWS[name]


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Create (or replace) every documented view on ``con``."""
    for name, select in _VIEWS.items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")


_READ_ONLY = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})


def sql(store: DuckDBLogStore, query: str, params: Mapping[str, Any] | None = None) -> pa.Table:
    """Run one read-only query against the store and return its result as an Arrow table.

    ``$name`` placeholders are bound from ``params`` (never pasted into the text). Only a single
    ``SELECT`` or ``EXPLAIN`` statement is accepted (``ValueError`` otherwise), and it runs on its
    own cursor inside a transaction that is rolled back, so it cannot change the log.
    """
    with store.cursor() as cur:
        statements = cur.extract_statements(query)
        if len(statements) != 1:
            raise ValueError(f"expected one SQL statement, got {len(statements)}")
        if statements[0].type not in _READ_ONLY:
            raise ValueError(f"only SELECT queries are allowed, got {statements[0].type.name}")
        cur.begin()
        try:
            return cur.sql(query, params=dict(params) if params else None).to_arrow_table()
        finally:
            cur.rollback()


def render_markdown() -> str:
    """The views as a Markdown section (what ``docs/sql.md`` is generated from)."""
    lines = ["| view | what it shows |", "| --- | --- |"]
    lines += [f"| `{name}` | {doc.description} |" for name, doc in VIEW_DOCS.items()]
    for name, doc in VIEW_DOCS.items():
        lines += ["", f"`{name}`:", "", "```sql", doc.example, "```"]
    return "\n".join(lines) + "\n"
