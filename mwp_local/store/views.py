"""The documented SQL views over the Group log, and a read-only query helper.

This module owns the names, columns and meaning of what people query (``events``,
``work_items``, ``offers``, ...). Every view is a fold of the log tables alone (``log_events``,
``log_receipts``, ``log_rejections``), never of the Authority's projection tables, so that:

* the views live in the log file (``duckdb.connect(path, read_only=True)`` reads them without
  this package) and say what the signed Events say, whoever wrote them;
* the same definitions run on the Parquet export, which holds the log tables only: each view
  is written once, in a portable subset of DuckDB's SQL, and ``store.portable_sql`` turns it
  into Spark SQL (the committed files under ``store/sql/``).

Timestamps are ``TIMESTAMPTZ`` and durations ``INTERVAL`` in every view. Kind names come from
``store.view_kinds``. ``VIEW_DOCS`` describes every view and column with an example query, and
``ANALYSES`` holds the analysis queries of ``docs/sql.md``; that page is generated from both
(``render_markdown``), and the tests run every example on DuckDB and on Spark.

It must not write anything but the view definitions: ``sql()`` runs one ``SELECT`` (or
``EXPLAIN``) on its own cursor inside a transaction that is always rolled back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..authority.budgets import DELTA_MEMBER
from ..authority.model import BUDGET_DIMENSIONS, LIMIT_MEMBER
from . import view_kinds as k
from .sql_access import describe_refusal

if TYPE_CHECKING:  # DuckDB and pyarrow are imported on first use (figure 7)
    import duckdb
    import pyarrow as pa

    from .duckdb_log import DuckDBLogStore

__all__ = [
    "ANALYSES",
    "VIEW_DOCS",
    "Analysis",
    "ViewColumn",
    "ViewDoc",
    "create_views",
    "lag_note",
    "of_kinds",
    "render_markdown",
    "sql",
    "view_sql",
]


@dataclass(frozen=True, slots=True)
class ViewColumn:
    """One column of a view: its name, its DuckDB type and what it means."""

    name: str
    type: str
    meaning: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewDoc:
    """What one view shows, column by column, with an example query (and its ``$name``
    parameters, if any)."""

    description: str
    columns: tuple[ViewColumn, ...]
    example: str
    example_params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Analysis:
    """An analysis query of the documentation: the question it answers and its SQL (over the
    views only, portable like them)."""

    question: str
    query: str
    params: Mapping[str, Any] = field(default_factory=dict)


def _cols(*specs: str) -> tuple[ViewColumn, ...]:
    """Columns from ``"name TYPE: meaning"`` lines."""
    out = []
    for spec in specs:
        head, meaning = spec.split(": ", 1)
        name, type_ = head.split(" ", 1)
        out.append(ViewColumn(name, type_, meaning))
    return tuple(out)


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def of_kinds(*kinds: str) -> str:
    """The Events of any of ``kinds`` (wire spellings), as a subquery over ``log_events``: one
    ``kind = ...`` scan per kind, UNION ALL. DuckDB pushes an equality into the scan and reads the
    other columns only where it holds; ``kind IN (...)`` or ``OR`` filter after every row's
    ``payload`` was read."""
    scans = "\n        UNION ALL ".join(
        f"SELECT * FROM log_events WHERE kind = {_lit(kind)}" for kind in kinds
    )
    return f"({scans}) AS of_kinds"


#: ``{NAME}`` in a view's text → the quoted wire spelling of ``view_kinds.NAME``.
_KINDS = {
    name: _lit(value)
    for name, value in vars(k).items()
    if name.isupper() and isinstance(value, str)
}

_MISSION_STATE = (
    "CASE kind "
    + " ".join(
        f"WHEN {_lit(kind)} THEN {_lit(state)}" for kind, state in k.MISSION_STATE_AFTER.items()
    )
    + " END"
)


def _per_dimension(json_expr: str, members: Mapping[str, str]) -> str:
    """``CASE d.dimension WHEN ... END``: the member of ``json_expr`` holding each dimension."""
    whens = " ".join(
        f"WHEN {_lit(dim)} THEN {json_expr}->>'$.{members[dim]}'" for dim in BUDGET_DIMENSIONS
    )
    return f"CAST(CASE d.dimension {whens} END AS DOUBLE)"


_DIMENSIONS = ", ".join(f"({_lit(dim)})" for dim in BUDGET_DIMENSIONS)

# The view texts. Portable subset (what ``portable_sql`` turns into Spark SQL): JSON through
# ``->`` / ``->>`` with ``$.`` paths, JSON arrays through ``UNNEST(CAST(... AS VARCHAR[]))`` in
# the select list of a subquery over ``log_events``, ``row_number()`` for "the latest", no
# DuckDB-only functions. (Not ``CROSS JOIN UNNEST(e.payload...)``: DuckDB plans that as a lateral
# join and decorrelates it by hashing every distinct payload text twice.)
_SOURCES: dict[str, str] = {
    "events": """
SELECT position, group_id, sequence, aggregate_revision, event_id, kind,
       occurred_at_ts AS occurred_at, actor_type, actor_id, cause_type, cause_id,
       correlation_id, mission_id, work_item_id, from_state, to_state, payload, document
FROM log_events""",
    "rejections": """
SELECT position, CAST(received_at AS TIMESTAMPTZ) AS received_at, code, explanation, actor_id,
       action_id, kind, group_id, work_item_id, rule, stage, reason, details, command_text
FROM log_rejections""",
    "receipts": """
SELECT position, actor_id, action_id, kind, group_id,
       CAST(accepted_at AS TIMESTAMPTZ) AS accepted_at, command_hash, event_ids, receipt,
       command_document
FROM log_receipts""",
    "work_item_transitions": """
SELECT position, group_id, mission_id, sequence, event_id, work_item_id, kind, from_state,
       to_state, occurred_at_ts AS occurred_at, actor_type, actor_id
FROM log_events
WHERE to_state IS NOT NULL""",
    "work_item_states": """
SELECT work_item_id, mission_id, group_id, to_state AS state, occurred_at_ts AS entered_at,
       lead(occurred_at_ts) OVER (PARTITION BY work_item_id ORDER BY position) AS left_at,
       lead(occurred_at_ts) OVER (PARTITION BY work_item_id ORDER BY position)
         - occurred_at_ts AS duration,
       kind AS entered_by, lead(kind) OVER (PARTITION BY work_item_id ORDER BY position) AS left_by,
       position AS entered_position,
       lead(position) OVER (PARTITION BY work_item_id ORDER BY position) AS left_position
FROM log_events
WHERE to_state IS NOT NULL""",
    "work_items": f"""
WITH authorized AS (
  SELECT work_item_id, mission_id, group_id, occurred_at_ts AS created_at,
         CAST(payload->>'$.workItem.exclusive' AS BOOLEAN) AS exclusive
  FROM log_events WHERE kind = {{WORK_AUTHORIZED}}
), contracts AS (
  SELECT work_item_id, contract FROM (
    SELECT work_item_id,
           CASE WHEN kind = {{WORK_AUTHORIZED}} THEN payload->'$.workItem.contract'
                ELSE payload->'$.contract' END AS contract,
           row_number() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM {of_kinds(k.WORK_AUTHORIZED, k.WORK_CONTRACT_REVISED)}
  ) c WHERE n = 1
), states AS (
  SELECT work_item_id, to_state AS state FROM (
    SELECT work_item_id, to_state,
           row_number() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events WHERE to_state IS NOT NULL AND work_item_id IS NOT NULL
  ) s WHERE n = 1
), accepted AS (
  SELECT work_item_id, position, agent_id, ownership_epoch FROM (
    SELECT work_item_id, position, payload->>'$.owner.agentId' AS agent_id,
           CAST(payload->>'$.owner.ownershipEpoch' AS BIGINT) AS ownership_epoch,
           row_number() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events WHERE kind = {{WORK_OFFER_ACCEPTED}}
  ) a WHERE n = 1
), fenced AS (
  SELECT work_item_id, max(position) AS position
  FROM {of_kinds(k.WORK_OFFER_CREATED, k.WORK_UNBLOCKED)}
  WHERE kind = {{WORK_OFFER_CREATED}}
     OR (kind = {{WORK_UNBLOCKED}} AND payload->>'$.toState' = 'open')
  GROUP BY work_item_id
), started AS (
  SELECT work_item_id, execution_lease_id, attempt FROM (
    SELECT work_item_id, payload->>'$.executionLeaseId' AS execution_lease_id,
           CAST(payload->>'$.attempt' AS BIGINT) AS attempt,
           row_number() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events WHERE kind = {{WORK_STARTED}}
  ) s WHERE n = 1
), touched AS (
  SELECT work_item_id, max(aggregate_revision) AS revision, max(sequence) AS last_sequence,
         max(occurred_at_ts) AS updated_at
  FROM log_events WHERE work_item_id IS NOT NULL GROUP BY work_item_id
)
SELECT a.work_item_id, a.mission_id, a.group_id, s.state, t.revision,
       CAST(c.contract->>'$.contractVersion' AS BIGINT) AS contract_version, a.exclusive,
       c.contract->>'$.requestedUrgency' AS urgency,
       CAST(c.contract->>'$.deadline' AS TIMESTAMPTZ) AS deadline,
       CASE WHEN f.position IS NULL OR acc.position > f.position THEN acc.agent_id END
         AS owner_agent_id,
       coalesce(acc.ownership_epoch, 0) AS ownership_epoch,
       CASE WHEN s.state = 'active' THEN st.execution_lease_id END AS execution_lease_id,
       coalesce(st.attempt, 0) AS attempts, a.created_at, t.updated_at, t.last_sequence,
       c.contract
FROM authorized a
LEFT JOIN contracts c ON c.work_item_id = a.work_item_id
LEFT JOIN states s ON s.work_item_id = a.work_item_id
LEFT JOIN accepted acc ON acc.work_item_id = a.work_item_id
LEFT JOIN fenced f ON f.work_item_id = a.work_item_id
LEFT JOIN started st ON st.work_item_id = a.work_item_id
LEFT JOIN touched t ON t.work_item_id = a.work_item_id""",
    "offers": """
WITH created AS (
  SELECT CAST(payload->'$.offers' AS VARCHAR[]) AS offers,
         CAST(payload->'$.withdrawnOfferIds' AS VARCHAR[]) AS withdrawn,
         CAST(payload->>'$.contractVersion' AS BIGINT) AS contract_version,
         CAST(payload->>'$.urgent' AS BOOLEAN) AS urgent,
         work_item_id, mission_id, group_id, occurred_at_ts, event_id, kind, sequence, position
  FROM log_events WHERE kind = {WORK_OFFER_CREATED}
), made AS (
  SELECT o.v->>'$.offerId' AS offer_id, o.work_item_id, o.mission_id, o.group_id,
         o.v->>'$.agentId' AS agent_id, o.contract_version, o.urgent,
         o.occurred_at_ts AS offered_at, CAST(o.v->>'$.expiresAt' AS TIMESTAMPTZ) AS expires_at,
         o.event_id AS offer_event_id, o.sequence, o.position
  FROM (SELECT UNNEST(offers) AS v, work_item_id, mission_id, group_id, contract_version,
               urgent, occurred_at_ts, event_id, sequence, position
        FROM created) o
), accepted AS (
  SELECT payload->>'$.offerId' AS offer_id,
         CAST(payload->'$.lostOfferIds' AS VARCHAR[]) AS lost,
         position, occurred_at_ts, event_id, kind
  FROM log_events WHERE kind = {WORK_OFFER_ACCEPTED}
), answers AS (
  SELECT offer_id, position, occurred_at_ts, event_id, kind,
         'accepted' AS outcome, CAST(NULL AS VARCHAR) AS author_id,
         CAST(NULL AS VARCHAR) AS decline
  FROM accepted
  UNION ALL
  SELECT v, position, occurred_at_ts, event_id, kind, 'lost_race', NULL, NULL
  FROM (SELECT UNNEST(lost) AS v, position, occurred_at_ts, event_id, kind FROM accepted) l
  UNION ALL
  SELECT v, position, occurred_at_ts, event_id, kind, 'withdrawn', NULL, NULL
  FROM (SELECT UNNEST(withdrawn) AS v, position, occurred_at_ts, event_id, kind FROM created) w
  UNION ALL
  SELECT m.offer_id, e.position, e.occurred_at_ts, e.event_id, e.kind, 'withdrawn', NULL, NULL
  FROM log_events e JOIN made m ON m.work_item_id = e.work_item_id AND e.position > m.position
  WHERE e.kind = {WORK_CONTRACT_REVISED}
    AND (e.payload->>'$.renewedAcceptanceRequired' = 'true'
         OR (e.from_state = 'offered' AND e.to_state <> 'offered'))
  UNION ALL
  SELECT m.offer_id, e.position, e.occurred_at_ts, e.event_id, e.kind, 'withdrawn', NULL, NULL
  FROM log_events e JOIN made m ON m.work_item_id = e.work_item_id AND e.position > m.position
  WHERE e.from_state = 'offered' AND e.to_state <> 'offered'
    AND e.kind <> {WORK_OFFER_ACCEPTED} AND e.kind <> {WORK_CONTRACT_REVISED}
  UNION ALL
  SELECT p.v->>'$.data.offerId', p.position, p.occurred_at_ts, p.event_id, p.kind, 'declined',
         p.author_id, CAST(p.v->'$.data' AS VARCHAR)
  FROM (SELECT UNNEST(CAST(payload->'$.message.content' AS VARCHAR[])) AS v, position,
               occurred_at_ts, event_id, kind, payload->>'$.message.author.id' AS author_id
        FROM log_events WHERE kind = {MESSAGE_POSTED}) p
  WHERE p.v->>'$.type' = 'data_ref' AND p.v->>'$.schema' = {DECLINE_SCHEMA}
), first_answer AS (
  SELECT offer_id, position, occurred_at_ts, event_id, kind, outcome, decline FROM (
    SELECT m.offer_id, a.position, a.occurred_at_ts, a.event_id, a.kind, a.outcome, a.decline,
           row_number() OVER (PARTITION BY m.offer_id ORDER BY a.position, a.outcome) AS n
    FROM made m JOIN answers a ON a.offer_id = m.offer_id AND a.position > m.position
    WHERE a.outcome <> 'declined' OR a.author_id = m.agent_id
  ) f WHERE n = 1
), log_end AS (
  SELECT max(occurred_at_ts) AS at FROM log_events
), settled AS (
  SELECT m.*, f.position AS answer_position, f.occurred_at_ts AS answered_at,
         f.event_id AS answer_event_id, f.kind AS answer_kind, f.decline,
         CASE WHEN f.outcome = 'accepted' THEN 'accepted'
              WHEN m.expires_at <= coalesce(f.occurred_at_ts, le.at) THEN 'expired'
              WHEN f.outcome IS NOT NULL THEN f.outcome
              ELSE 'pending' END AS status
  FROM made m LEFT JOIN first_answer f ON f.offer_id = m.offer_id CROSS JOIN log_end le
)
SELECT offer_id, work_item_id, mission_id, group_id, agent_id, contract_version, urgent,
       offered_at, expires_at, status,
       CASE WHEN status = 'declined' THEN decline->>'$.reason' END AS decline_reason,
       CASE WHEN status = 'declined' THEN decline END AS decline,
       CASE WHEN status = 'expired' THEN expires_at
            WHEN status = 'pending' THEN NULL ELSE answered_at END AS settled_at,
       CASE WHEN status NOT IN ('expired', 'pending') THEN answer_event_id END
         AS settled_by_event_id,
       CASE WHEN status NOT IN ('expired', 'pending') THEN answer_kind END AS settled_by_kind,
       offer_event_id, sequence, position
FROM settled""",
    "leases": """
SELECT lease_id, lease_type, group_id, mission_id, work_item_id, holder_agent_id,
       session_epoch, ownership_epoch, coordinator_epoch, state, issued_at, expires_at,
       start_by, renewal_count, last_renewed_at, closed_at, closure_reason,
       closed_at - issued_at AS held_for, updated_at, last_event_id, document
FROM (
  SELECT l.v->>'$.leaseId' AS lease_id, l.v->>'$.leaseType' AS lease_type,
         l.v->>'$.groupId' AS group_id, l.v->>'$.missionId' AS mission_id,
         l.v->>'$.workItemId' AS work_item_id, l.v->>'$.holderAgentId' AS holder_agent_id,
         CAST(l.v->>'$.sessionEpoch' AS BIGINT) AS session_epoch,
         CAST(l.v->>'$.ownershipEpoch' AS BIGINT) AS ownership_epoch,
         CAST(l.v->>'$.coordinatorEpoch' AS BIGINT) AS coordinator_epoch,
         l.v->>'$.state' AS state, CAST(l.v->>'$.issuedAt' AS TIMESTAMPTZ) AS issued_at,
         CAST(l.v->>'$.expiresAt' AS TIMESTAMPTZ) AS expires_at,
         CAST(l.v->>'$.startBy' AS TIMESTAMPTZ) AS start_by,
         CAST(l.v->>'$.renewalCount' AS BIGINT) AS renewal_count,
         CAST(l.v->>'$.lastRenewedAt' AS TIMESTAMPTZ) AS last_renewed_at,
         CAST(l.v->>'$.closedAt' AS TIMESTAMPTZ) AS closed_at,
         l.v->>'$.closureReason' AS closure_reason, l.occurred_at_ts AS updated_at,
         l.event_id AS last_event_id, l.v AS document,
         row_number() OVER (PARTITION BY l.v->>'$.leaseId' ORDER BY l.position DESC) AS n
  FROM (SELECT UNNEST(CAST(payload->'$.leases' AS VARCHAR[])) AS v, occurred_at_ts, event_id,
               position
        FROM log_events) l
) t
WHERE n = 1""",
    "budgets": f"""
WITH scopes AS (
  SELECT 'mission' AS scope_type, payload->>'$.missionId' AS scope_id, mission_id, group_id,
         payload->'$.mission.budget' AS budget
  FROM log_events WHERE kind = {{MISSION_CREATED}}
  UNION ALL
  SELECT 'work_item', payload->>'$.workItem.workItemId', mission_id, group_id,
         payload->'$.workItem.contract.budget'
  FROM log_events WHERE kind = {{WORK_AUTHORIZED}}
), charged AS (
  SELECT scope_type, scope_id, cumulative FROM (
    SELECT a.v->>'$.scope.type' AS scope_type, a.v->>'$.scope.id' AS scope_id,
           a.v->'$.cumulative' AS cumulative,
           row_number() OVER (PARTITION BY a.v->>'$.scope.type', a.v->>'$.scope.id'
                              ORDER BY a.position DESC) AS n
    FROM (SELECT UNNEST(CAST(payload->'$.ancestry' AS VARCHAR[])) AS v, position
          FROM log_events WHERE kind = {{RESOURCE_USAGE_RECORDED}}) a
  ) c WHERE n = 1
), lines AS (
  SELECT s.scope_type, s.scope_id, s.mission_id, s.group_id, d.dimension,
         {_per_dimension("s.budget", LIMIT_MEMBER)} AS limit_value,
         coalesce({_per_dimension("c.cumulative", DELTA_MEMBER)}, 0.0) AS used_value
  FROM scopes s
  CROSS JOIN (VALUES {_DIMENSIONS}) AS d(dimension)
  LEFT JOIN charged c ON c.scope_type = s.scope_type AND c.scope_id = s.scope_id
)
SELECT scope_type, scope_id, mission_id, group_id, dimension, limit_value, used_value,
       limit_value - used_value AS remaining_value
FROM lines""",
    "signing_keys": """
SELECT key_id, principal_type, principal_id, algorithm, public_key, valid_from, valid_until,
       revoked_at, registered_at, event_id
FROM (
  SELECT k.v->>'$.keyId' AS key_id, 'agent' AS principal_type,
         k.payload->>'$.agentCard.agentId' AS principal_id, k.v->>'$.algorithm' AS algorithm,
         k.v->>'$.publicKey' AS public_key,
         CAST(k.v->>'$.validFrom' AS TIMESTAMPTZ) AS valid_from,
         CAST(k.v->>'$.validUntil' AS TIMESTAMPTZ) AS valid_until,
         CAST(k.v->>'$.revokedAt' AS TIMESTAMPTZ) AS revoked_at,
         k.occurred_at_ts AS registered_at, k.event_id,
         row_number() OVER (PARTITION BY k.v->>'$.keyId' ORDER BY k.position) AS n
  FROM (SELECT UNNEST(CAST(payload->'$.agentCard.publicKeys' AS VARCHAR[])) AS v, payload,
               occurred_at_ts, event_id, position
        FROM log_events WHERE kind = {AGENT_CARD_REGISTERED}) k
) t
WHERE n = 1""",
    "memberships": f"""
SELECT group_id, principal_id, principal_type, role, epoch, state, mission_id, changed_at,
       event_id, document
FROM (
  SELECT payload->>'$.membership.groupId' AS group_id,
         payload->>'$.membership.member.id' AS principal_id,
         payload->>'$.membership.member.type' AS principal_type,
         payload->>'$.membership.role' AS role,
         CAST(payload->>'$.membership.membershipEpoch' AS BIGINT) AS epoch,
         payload->>'$.membership.state' AS state, payload->>'$.missionId' AS mission_id,
         occurred_at_ts AS changed_at, event_id, payload->'$.membership' AS document,
         row_number() OVER (PARTITION BY payload->>'$.membership.groupId',
                            payload->>'$.membership.member.id' ORDER BY position DESC) AS n
  FROM {of_kinds(k.MEMBERSHIP_CHANGED, k.MEMBERSHIP_ENDED)}
) t
WHERE n = 1""",
    "missions": f"""
WITH created AS (
  SELECT payload->>'$.missionId' AS mission_id, group_id,
         payload->>'$.mission.objective' AS objective,
         payload->>'$.mission.missionOwner.type' AS owner_type,
         payload->>'$.mission.missionOwner.id' AS owner_id,
         payload->>'$.mission.parent.missionId' AS parent_mission_id,
         payload->>'$.mission.parent.workItemId' AS parent_work_item_id,
         CAST(payload->>'$.mission.deadline' AS TIMESTAMPTZ) AS deadline,
         occurred_at_ts AS created_at
  FROM log_events WHERE kind = {{MISSION_CREATED}}
), lifecycle AS (
  SELECT mission_id, state, updated_at FROM (
    SELECT payload->>'$.missionId' AS mission_id, {_MISSION_STATE} AS state,
           occurred_at_ts AS updated_at,
           row_number() OVER (PARTITION BY payload->>'$.missionId' ORDER BY position DESC) AS n
    FROM {of_kinds(*k.MISSION_STATE_AFTER)}
  ) l WHERE n = 1
), coordinators AS (
  SELECT mission_id, agent_id, epoch FROM (
    SELECT payload->>'$.missionId' AS mission_id,
           CASE WHEN kind = {{MISSION_CREATED}} THEN payload->>'$.mission.coordinator.agentId'
                ELSE payload->>'$.coordinator.agentId' END AS agent_id,
           CAST(CASE WHEN kind = {{MISSION_CREATED}}
                     THEN payload->>'$.mission.coordinator.coordinatorEpoch'
                     ELSE payload->>'$.coordinator.coordinatorEpoch' END AS BIGINT) AS epoch,
           row_number() OVER (PARTITION BY payload->>'$.missionId' ORDER BY position DESC) AS n
    FROM {of_kinds(k.MISSION_CREATED, k.MISSION_COORDINATOR_ASSIGNED)}
  ) c WHERE n = 1
), revisions AS (
  SELECT payload->>'$.missionId' AS mission_id, max(aggregate_revision) AS revision,
         max(sequence) AS last_sequence
  FROM {of_kinds(*k.MISSION_STATE_AFTER, k.MISSION_COORDINATOR_ASSIGNED)}
  GROUP BY payload->>'$.missionId'
)
SELECT c.mission_id, c.group_id, l.state, r.revision, c.objective, c.owner_type, c.owner_id,
       co.agent_id AS coordinator_agent_id, co.epoch AS coordinator_epoch,
       c.parent_mission_id, c.parent_work_item_id, c.deadline, c.created_at, l.updated_at,
       r.last_sequence
FROM created c
LEFT JOIN lifecycle l ON l.mission_id = c.mission_id
LEFT JOIN coordinators co ON co.mission_id = c.mission_id
LEFT JOIN revisions r ON r.mission_id = c.mission_id""",
    "agents": """
WITH cards AS (
  SELECT agent_id, card_version, max_concurrency, capabilities, registered_at FROM (
    SELECT payload->>'$.agentCard.agentId' AS agent_id,
           CAST(payload->>'$.agentCard.cardVersion' AS BIGINT) AS card_version,
           CAST(payload->>'$.agentCard.maxConcurrency' AS BIGINT) AS max_concurrency,
           payload->'$.agentCard.capabilities' AS capabilities, occurred_at_ts AS registered_at,
           row_number() OVER (PARTITION BY payload->>'$.agentCard.agentId'
                              ORDER BY position DESC) AS n
    FROM log_events WHERE kind = {AGENT_CARD_REGISTERED}
  ) c WHERE n = 1
), sessions AS (
  SELECT agent_id, session_epoch, opened_at FROM (
    SELECT payload->>'$.agentId' AS agent_id,
           CAST(payload->>'$.sessionEpoch' AS BIGINT) AS session_epoch,
           occurred_at_ts AS opened_at,
           row_number() OVER (PARTITION BY payload->>'$.agentId' ORDER BY position DESC) AS n
    FROM log_events WHERE kind = {SESSION_OPENED}
  ) s WHERE n = 1
)
SELECT c.agent_id, c.card_version AS agent_card_version,
       coalesce(s.session_epoch, 0) AS session_epoch, c.max_concurrency, c.capabilities,
       c.registered_at, s.opened_at AS session_opened_at
FROM cards c LEFT JOIN sessions s ON s.agent_id = c.agent_id""",
    # The provenance graph of §13.1 (``mwp_local.artifacts.provenance`` reads it).
    "artifact_edges": """
SELECT 'derived_from' AS edge, 'artifact' AS from_type,
       p.payload->>'$.artifact.contentHash' AS from_id, 'artifact' AS to_type,
       p.v AS to_id, p.payload->>'$.missionId' AS mission_id, p.group_id,
       p.payload->>'$.workItemId' AS work_item_id, p.event_id, p.sequence, p.position
FROM (SELECT UNNEST(CAST(payload->'$.artifact.sourceArtifactHashes' AS VARCHAR[])) AS v,
             payload, group_id, event_id, sequence, position
      FROM log_events WHERE kind = {ARTIFACT_PUBLISHED}) p
UNION ALL
SELECT 'produced_for', 'artifact', payload->>'$.artifact.contentHash', 'work_item',
       payload->>'$.workItemId', payload->>'$.missionId', group_id,
       payload->>'$.workItemId', event_id, sequence, position
FROM log_events WHERE kind = {ARTIFACT_PUBLISHED}
UNION ALL
SELECT 'part_of', 'work_item', payload->>'$.workItem.workItemId', 'mission',
       payload->>'$.missionId', payload->>'$.missionId', group_id,
       payload->>'$.workItem.workItemId', event_id, sequence, position
FROM log_events WHERE kind = {WORK_AUTHORIZED}
UNION ALL
SELECT 'child_of', 'mission', payload->>'$.missionId', 'work_item',
       payload->>'$.mission.parent.workItemId', payload->>'$.missionId', group_id,
       NULL, event_id, sequence, position
FROM log_events
WHERE kind = {MISSION_CREATED} AND payload->>'$.mission.parent.workItemId' IS NOT NULL""",
}

#: View name → its ``SELECT`` (DuckDB, portable subset). Order matters only for reading.
_VIEWS: Mapping[str, str] = {
    name: text.format_map(_KINDS).strip() for name, text in _SOURCES.items()
}

_TS = "TIMESTAMPTZ"
VIEW_DOCS: Mapping[str, ViewDoc] = {
    "events": ViewDoc(
        description=(
            "every accepted Event in log order: the envelope as typed columns, `payload` as "
            "JSON and `document`, the exact signed JSON text"
        ),
        columns=_cols(
            "position BIGINT: place in the whole log (1, 2, …), across Groups",
            "group_id VARCHAR: the Group whose log holds it (NULL: Organization-scoped)",
            "sequence BIGINT: its sequence in that Group (§15.2)",
            "aggregate_revision BIGINT: revision of the aggregate it changed (WorkItem, "
            "Mission, …)",
            "event_id VARCHAR: the Event ID",
            "kind VARCHAR: the Event kind, e.g. `work.offer.created`",
            f"occurred_at {_TS}: when the Group Authority accepted it",
            "actor_type VARCHAR: agent, human or service",
            "actor_id VARCHAR: the Principal whose Command caused it",
            "cause_type VARCHAR: command, event or timer",
            "cause_id VARCHAR: the Command's Action ID or the causing Event's ID",
            "correlation_id VARCHAR: the correlation ID the Command carried",
            "mission_id VARCHAR: the Mission it concerns, if any",
            "work_item_id VARCHAR: the WorkItem it concerns, if any",
            "from_state VARCHAR: the WorkItem's state before, for a state change of §10.2",
            "to_state VARCHAR: the WorkItem's state after (NULL unless the Event moved a WorkItem)",
            "payload JSON: the Event's payload",
            "document VARCHAR: the whole signed Event as it was written",
        ),
        example="SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind",
    ),
    "rejections": ViewDoc(
        description=(
            "every refused Command with its section-19 code, the rule that refused it and the "
            "Command text as received; a refusal changes nothing else"
        ),
        columns=_cols(
            "position BIGINT: order of the refusals",
            f"received_at {_TS}: when the Command was refused",
            "code VARCHAR: the section-19 error code, e.g. `STALE_OWNERSHIP_EPOCH`",
            "explanation VARCHAR: the refusal in words",
            "actor_id VARCHAR: who sent the Command (NULL if it could not be parsed)",
            "action_id VARCHAR: its Action ID",
            "kind VARCHAR: its Command kind",
            "group_id VARCHAR: the Group it addressed",
            "work_item_id VARCHAR: the WorkItem it named, if any",
            "rule VARCHAR: the rule of the specification that refused it",
            "stage VARCHAR: the verification stage that failed, for a signature refusal",
            "reason VARCHAR: that stage's reason",
            "details JSON: structured details (expected and actual values, …)",
            "command_text VARCHAR: the Command exactly as received",
        ),
        example="SELECT code, count(*) AS n FROM rejections GROUP BY code ORDER BY n DESC, code",
    ),
    "receipts": ViewDoc(
        description="the receipt of every accepted Command and the Event IDs it produced",
        columns=_cols(
            "position BIGINT: commit order",
            "actor_id VARCHAR: who sent the Command",
            "action_id VARCHAR: its Action ID (with `actor_id`, the idempotency key)",
            "kind VARCHAR: its Command kind",
            "group_id VARCHAR: the Group it addressed (NULL: Organization-scoped)",
            f"accepted_at {_TS}: when it was accepted",
            "command_hash VARCHAR: `sha256:` hash of the canonical Command",
            "event_ids VARCHAR[]: the Events it produced, in order",
            "receipt JSON: the receipt document",
            "command_document VARCHAR: the signed Command as received",
        ),
        example=(
            "SELECT actor_id, action_id, kind, accepted_at FROM receipts "
            "ORDER BY position DESC LIMIT 10"
        ),
    ),
    "work_items": ViewDoc(
        description=(
            "each WorkItem as the log leaves it: state (§10.2), revision, current Work "
            "Contract, owner and attempts"
        ),
        columns=_cols(
            "work_item_id VARCHAR: the WorkItem ID",
            "mission_id VARCHAR: its Mission",
            "group_id VARCHAR: its Group",
            "state VARCHAR: its state after the last Event that moved it",
            "revision BIGINT: the highest aggregate revision among the Events naming it",
            "contract_version BIGINT: version of its current Work Contract",
            "exclusive BOOLEAN: whether one Worker at a time may own it",
            "urgency VARCHAR: the contract's requested urgency",
            f"deadline {_TS}: the contract's deadline",
            "owner_agent_id VARCHAR: the Worker whose acceptance began the current Ownership "
            "Epoch; NULL before any acceptance and once it was offered again or unblocked to "
            "`open`",
            "ownership_epoch BIGINT: the latest Ownership Epoch (0 before any acceptance)",
            "execution_lease_id VARCHAR: the Execution Lease of the running attempt, while "
            "`active`",
            "attempts BIGINT: attempts started so far",
            f"created_at {_TS}: when it was authorized",
            f"updated_at {_TS}: time of the latest Event naming it",
            "last_sequence BIGINT: Group sequence of the latest Event naming it",
            "contract JSON: its current Work Contract (from `work.authorized` or the latest "
            "`work.contract.revised`)",
        ),
        example="SELECT state, count(*) AS n FROM work_items GROUP BY state ORDER BY state",
    ),
    "work_item_transitions": ViewDoc(
        description="every Event that moved a WorkItem between states of §10.2, in log order",
        columns=_cols(
            "position BIGINT: place in the log",
            "group_id VARCHAR: the Group",
            "mission_id VARCHAR: the Mission",
            "sequence BIGINT: sequence in the Group",
            "event_id VARCHAR: the Event",
            "work_item_id VARCHAR: the WorkItem",
            "kind VARCHAR: the Event kind",
            "from_state VARCHAR: state before (`none` or `open_work_proposal` for "
            "`work.authorized`)",
            "to_state VARCHAR: state after",
            f"occurred_at {_TS}: when",
            "actor_type VARCHAR: who caused it: agent, human or service",
            "actor_id VARCHAR: the Principal",
        ),
        example=(
            "SELECT sequence, kind, from_state, to_state, occurred_at FROM work_item_transitions "
            "WHERE work_item_id = $work_item_id ORDER BY position"
        ),
        example_params={"work_item_id": "urn:example:work-item:1"},
    ),
    "work_item_states": ViewDoc(
        description=(
            "every stay of a WorkItem in a state: from the transition that entered it to the "
            "next one, with its duration (a transition that keeps the state, such as a "
            "re-offer, starts a new stay)"
        ),
        columns=_cols(
            "work_item_id VARCHAR: the WorkItem",
            "mission_id VARCHAR: its Mission",
            "group_id VARCHAR: its Group",
            "state VARCHAR: the state of §10.2",
            f"entered_at {_TS}: when it entered the state",
            f"left_at {_TS}: when the next transition moved it (NULL: still there)",
            "duration INTERVAL: `left_at - entered_at` (NULL: still there)",
            "entered_by VARCHAR: the Event kind that entered the state",
            "left_by VARCHAR: the Event kind that left it",
            "entered_position BIGINT: log position of the entering Event",
            "left_position BIGINT: log position of the leaving Event",
        ),
        example=(
            "SELECT state, count(*) AS stays, avg(duration) AS mean, max(duration) AS longest "
            "FROM work_item_states WHERE duration IS NOT NULL GROUP BY state ORDER BY state"
        ),
    ),
    "offers": ViewDoc(
        description=(
            "every offer made (§10.3) with its real outcome: `pending`, `accepted`, `declined` "
            "(with the Worker's structured reason), `expired`, `withdrawn` or `lost_race`. The "
            "first of these in log order settles it: the acceptance (`work.offer.accepted` "
            "naming it), another candidate's acceptance (`lost_race`), the Worker's decline (a "
            "`message.posted` by that Worker with a `data_ref` of schema "
            f"`{k.DECLINE_SCHEMA}`), a withdrawal (a later offer listing it in "
            "`withdrawnOfferIds`, a contract revision that requires renewed acceptance, or the "
            "WorkItem leaving `offered` otherwise: failed, cancelled, blocked by a child "
            "Mission). It is `expired` when its `expiresAt` came first, or passed before the "
            "log's last Event with nothing settling it (the view has no clock of its own: "
            "expiry appends no Event, §10.2)"
        ),
        columns=_cols(
            "offer_id VARCHAR: the offer ID",
            "work_item_id VARCHAR: the WorkItem offered",
            "mission_id VARCHAR: its Mission",
            "group_id VARCHAR: its Group",
            "agent_id VARCHAR: the Worker it was made to",
            "contract_version BIGINT: the Work Contract version offered",
            "urgent BOOLEAN: part of an urgent offer to several candidates",
            f"offered_at {_TS}: when it was made",
            f"expires_at {_TS}: when it expires",
            "status VARCHAR: pending, accepted, declined, expired, withdrawn or lost_race",
            "decline_reason VARCHAR: for `declined`: capacity, deadline, capability, "
            "authorization, dependency or budget",
            "decline VARCHAR: for `declined`: the Worker's whole structured decline, JSON "
            "text (`offerId`, `reason`, `reasons`, `details`)",
            f"settled_at {_TS}: when the status was settled (`expires_at` for expired, NULL "
            "while pending)",
            "settled_by_event_id VARCHAR: the Event that settled it (NULL for expired and pending)",
            "settled_by_kind VARCHAR: that Event's kind",
            "offer_event_id VARCHAR: the `work.offer.created` Event",
            "sequence BIGINT: its Group sequence",
            "position BIGINT: its log position",
        ),
        example=(
            "SELECT decline_reason, count(*) AS n FROM offers WHERE status = 'declined' "
            "GROUP BY decline_reason ORDER BY n DESC, decline_reason"
        ),
    ),
    "leases": ViewDoc(
        description=(
            "every Coordinator, ownership, execution and blocked lease (§7.2, §11.3) as its "
            "latest Lease document in the log (Events carry the documents of the leases they "
            "create or change under `payload.leases`)"
        ),
        columns=_cols(
            "lease_id VARCHAR: the stable Lease ID",
            "lease_type VARCHAR: coordinator, ownership, execution or blocked",
            "group_id VARCHAR: the Group",
            "mission_id VARCHAR: the Mission",
            "work_item_id VARCHAR: the WorkItem (NULL for a Coordinator lease)",
            "holder_agent_id VARCHAR: the Agent holding it",
            "session_epoch BIGINT: the holder's Session Epoch",
            "ownership_epoch BIGINT: the Ownership Epoch it is fenced by",
            "coordinator_epoch BIGINT: the Coordinator Epoch (Coordinator leases)",
            "state VARCHAR: active, released, expired or revoked",
            f"issued_at {_TS}: when it was issued",
            f"expires_at {_TS}: when it expires (after the latest renewal)",
            f"start_by {_TS}: start-by deadline of an ownership lease",
            "renewal_count BIGINT: renewals so far",
            f"last_renewed_at {_TS}: the latest renewal",
            f"closed_at {_TS}: when it was released, expired or revoked (NULL: open)",
            "closure_reason VARCHAR: why it closed",
            "held_for INTERVAL: `closed_at - issued_at` (NULL while open)",
            f"updated_at {_TS}: time of the Event with its latest document",
            "last_event_id VARCHAR: that Event",
            "document VARCHAR: the latest Lease document (JSON text)",
        ),
        example=(
            "SELECT lease_type, holder_agent_id, state, expires_at FROM leases "
            "WHERE closed_at IS NULL ORDER BY expires_at"
        ),
    ),
    "budgets": ViewDoc(
        description=(
            "the six-dimensional budget ledger (§12) of every Mission and WorkItem: its limit "
            "(from `mission.created` or `work.authorized`) and its use so far (the cumulative "
            "usage in the latest `…resource_usage_recorded` charging it or a scope below it)"
        ),
        columns=_cols(
            "scope_type VARCHAR: mission or work_item",
            "scope_id VARCHAR: the Mission or WorkItem ID",
            "mission_id VARCHAR: the Mission it belongs to (itself, for a Mission)",
            "group_id VARCHAR: the Group",
            "dimension VARCHAR: financial, modelTokens, toolCalls, computeSeconds, "
            "wallClockSeconds or externalSideEffects",
            "limit_value DOUBLE: the limit (NULL: this scope sets none)",
            "used_value DOUBLE: used so far",
            "remaining_value DOUBLE: `limit_value - used_value` (NULL without a limit)",
        ),
        example=(
            "SELECT scope_type, scope_id, dimension, used_value, limit_value FROM budgets "
            "WHERE used_value >= 0.8 * limit_value ORDER BY scope_id, dimension"
        ),
    ),
    "signing_keys": ViewDoc(
        description=(
            "signing keys published in the log (the `publicKeys` of registered Agent Cards, "
            "§6.1), each as first registered; the Organization's own keys (humans, services) "
            "are in its Registry, outside the log (`mwp-local registry DIR`)"
        ),
        columns=_cols(
            "key_id VARCHAR: the key ID",
            "principal_type VARCHAR: agent",
            "principal_id VARCHAR: the Agent",
            "algorithm VARCHAR: Ed25519",
            "public_key VARCHAR: the public key (base64url)",
            f"valid_from {_TS}: start of validity",
            f"valid_until {_TS}: end of validity, if any",
            f"revoked_at {_TS}: revocation, if any",
            f"registered_at {_TS}: when the Agent Card carrying it was registered",
            "event_id VARCHAR: that registration Event",
        ),
        example=(
            "SELECT principal_id, key_id, valid_from, valid_until, revoked_at FROM signing_keys "
            "ORDER BY principal_id, valid_from"
        ),
    ),
    "memberships": ViewDoc(
        description="each Group Membership (§8) as its latest Membership document in the log",
        columns=_cols(
            "group_id VARCHAR: the Group",
            "principal_id VARCHAR: the member",
            "principal_type VARCHAR: agent, human or service",
            "role VARCHAR: its role, e.g. worker, coordinator, mission_owner",
            "epoch BIGINT: its Membership Epoch",
            "state VARCHAR: provisional, active or ended",
            "mission_id VARCHAR: the Group's Mission",
            f"changed_at {_TS}: when it last changed",
            "event_id VARCHAR: that Event",
            "document JSON: the Membership document",
        ),
        example=(
            "SELECT principal_id, role, epoch, state FROM memberships "
            "WHERE group_id = $group_id ORDER BY principal_id"
        ),
        example_params={"group_id": "urn:example:group:1"},
    ),
    "missions": ViewDoc(
        description="each Mission with its state of §7.1 after its latest lifecycle Event",
        columns=_cols(
            "mission_id VARCHAR: the Mission ID",
            "group_id VARCHAR: its Group",
            "state VARCHAR: active, awaiting_approval, approved, cancelled or failed",
            "revision BIGINT: its aggregate revision",
            "objective VARCHAR: its objective",
            "owner_type VARCHAR: the MissionOwner's type (human, or agent for a child Mission)",
            "owner_id VARCHAR: the MissionOwner",
            "coordinator_agent_id VARCHAR: the current Coordinator",
            "coordinator_epoch BIGINT: its Coordinator Epoch",
            "parent_mission_id VARCHAR: the parent Mission of a child Mission",
            "parent_work_item_id VARCHAR: the parent WorkItem of a child Mission",
            f"deadline {_TS}: its deadline",
            f"created_at {_TS}: when it was created",
            f"updated_at {_TS}: its latest state change",
            "last_sequence BIGINT: Group sequence of its latest lifecycle Event",
        ),
        example="SELECT mission_id, state, revision, objective FROM missions ORDER BY mission_id",
    ),
    "agents": ViewDoc(
        description=("registered Agents (§6): their latest Agent Card and current Session Epoch"),
        columns=_cols(
            "agent_id VARCHAR: the Agent ID",
            "agent_card_version BIGINT: version of its latest Agent Card",
            "session_epoch BIGINT: its latest Session Epoch (0: no Session opened)",
            "max_concurrency BIGINT: execution slots its card declares",
            "capabilities JSON: the card's capabilities (id, version, schemas, Evidence)",
            f"registered_at {_TS}: when that card was registered",
            f"session_opened_at {_TS}: when its latest Session opened",
        ),
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
        columns=_cols(
            "edge VARCHAR: derived_from, produced_for, part_of or child_of",
            "from_type VARCHAR: artifact, work_item or mission",
            "from_id VARCHAR: the node the edge leaves",
            "to_type VARCHAR: artifact, work_item or mission",
            "to_id VARCHAR: the node it points to",
            "mission_id VARCHAR: the Mission of the Event",
            "group_id VARCHAR: its Group",
            "work_item_id VARCHAR: the WorkItem, if any",
            "event_id VARCHAR: the Event the edge comes from",
            "sequence BIGINT: its Group sequence",
            "position BIGINT: its log position",
        ),
        example=(
            "SELECT to_id AS source, count(*) AS derived FROM artifact_edges "
            "WHERE edge = 'derived_from' GROUP BY to_id ORDER BY derived DESC, source"
        ),
    ),
}

#: The analysis queries of ``docs/sql.md`` (over the views only): the tests run each on DuckDB
#: and on Spark over the Parquet export and compare the results.
ANALYSES: Mapping[str, Analysis] = {
    "time_per_state": Analysis(
        question="How long do WorkItems spend in each state?",
        query=(
            "SELECT state, count(*) AS stays, avg(duration) AS mean, max(duration) AS longest\n"
            "FROM work_item_states WHERE duration IS NOT NULL\n"
            "GROUP BY state ORDER BY mean DESC, state"
        ),
    ),
    "most_loaded_worker": Analysis(
        question=(
            "Which Worker carried the most work? (time under Execution Leases, and how many)"
        ),
        query=(
            "SELECT holder_agent_id AS worker, count(*) AS executions,\n"
            "       CAST(sum(date_diff('second', issued_at, coalesce(closed_at, expires_at)))\n"
            "            AS BIGINT) AS busy_seconds\n"
            "FROM leases WHERE lease_type = 'execution'\n"
            "GROUP BY holder_agent_id ORDER BY busy_seconds DESC, worker"
        ),
    ),
    "declines_by_reason": Analysis(
        question="Why do Workers decline offers? (declines by reason and Worker)",
        query=(
            "SELECT decline_reason, agent_id, count(*) AS declines\n"
            "FROM offers WHERE status = 'declined'\n"
            "GROUP BY decline_reason, agent_id ORDER BY declines DESC, decline_reason, agent_id"
        ),
    ),
    "offer_outcomes": Analysis(
        question="What became of the offers each Worker received?",
        query=(
            "SELECT agent_id, status, count(*) AS offers\n"
            "FROM offers GROUP BY agent_id, status ORDER BY agent_id, status"
        ),
    ),
    "concurrent_executions": Analysis(
        question="How many executions did each Worker run at once, over time?",
        query=(
            "SELECT worker, changed_at,\n"
            "       CAST(sum(delta) OVER (PARTITION BY worker ORDER BY changed_at, delta\n"
            "            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS running\n"
            "FROM (SELECT holder_agent_id AS worker, issued_at AS changed_at, 1 AS delta\n"
            "      FROM leases WHERE lease_type = 'execution'\n"
            "      UNION ALL\n"
            "      SELECT holder_agent_id, coalesce(closed_at, expires_at), -1\n"
            "      FROM leases WHERE lease_type = 'execution') AS changes\n"
            "ORDER BY worker, changed_at, running"
        ),
    ),
    "worker_load_by_hour": Analysis(
        question="How many executions did each Worker start per hour?",
        query=(
            "SELECT holder_agent_id AS worker, date_trunc('hour', issued_at) AS hour,\n"
            "       count(*) AS started\n"
            "FROM leases WHERE lease_type = 'execution'\n"
            "GROUP BY holder_agent_id, date_trunc('hour', issued_at) ORDER BY hour, worker"
        ),
    ),
    "expected_cost_per_worker": Analysis(
        question="What did the Coordinator expect each offer to cost? (read from the payload)",
        query=(
            "SELECT agent_id, count(*) AS offers,\n"
            "       avg(CAST(e.payload ->> '$.selectionBasis.expectedCost' AS DOUBLE))\n"
            "         AS mean_cost\n"
            "FROM offers o JOIN events e ON e.event_id = o.offer_event_id\n"
            "GROUP BY agent_id ORDER BY agent_id"
        ),
    ),
}


def view_sql(name: str) -> str:
    """The ``SELECT`` behind a documented view (DuckDB; ``portable_sql`` has the Spark text)."""
    return _VIEWS[name]


def view_sources() -> Mapping[str, str]:
    """Every view's ``SELECT`` (DuckDB dialect), in the documented order (no view reads
    another, so any order creates them)."""
    return {name: _VIEWS[name] for name in VIEW_DOCS}


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """Create (or replace) every documented view on ``con``."""
    for name, select in view_sources().items():
        con.execute(f"CREATE OR REPLACE VIEW {name} AS {select}")


def sql(store: DuckDBLogStore, query: str, params: Mapping[str, Any] | None = None) -> pa.Table:
    """Run one read-only query against the store and return its result as an Arrow table.

    ``$name`` placeholders are bound from ``params`` (never pasted into the text). Only a single
    ``SELECT`` or ``EXPLAIN`` statement is accepted (``ValueError`` otherwise), and it runs on its
    own cursor inside a transaction that is rolled back, so it cannot change the log. A file
    outside the sandbox directory is refused (``PermissionError``) unless the store was opened
    with ``external_access`` (``store.sql_access``).
    """
    import duckdb  # loaded by the store's connection already

    read_only = {duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN}
    store.contain_queries()
    with store.cursor() as cur:
        statements = cur.extract_statements(query)
        if len(statements) != 1:
            raise ValueError(f"expected one SQL statement, got {len(statements)}")
        if statements[0].type not in read_only:
            raise ValueError(f"only SELECT queries are allowed, got {statements[0].type.name}")
        cur.begin()
        try:
            return durations(
                cur.sql(query, params=dict(params) if params else None).to_arrow_table()
            )
        except duckdb.PermissionException as error:
            raise PermissionError(describe_refusal(error)) from None
        finally:
            cur.rollback()


#: A query naming one of the Authority's own projection tables.
_PROJECTION_TABLE = re.compile(r"\bproj_\w+", re.IGNORECASE)


def lag_note(store: DuckDBLogStore, query: str) -> str | None:
    """What a person should know before trusting ``query``'s answer, or None.

    The documented views fold the log tables, so they are caught up whatever happened; the
    ``proj_*`` tables are another matter on a store whose writer stopped before writing its
    deferred projection rows (``projections_behind``, docs/durability.md) and that is open
    read-only, so it cannot render them: they hold an earlier commit's rows until the next
    writable open."""
    if not getattr(store, "projections_behind", False) or not _PROJECTION_TABLE.search(query):
        return None
    return (
        "note: this log's writer stopped before writing its projection tables (proj_*), so "
        "they show an earlier state than the log until the directory is opened writable "
        "once (a Sandbox or open_directory re-renders them); the documented views (events, "
        "work_items, …) fold the log itself and are current (docs/durability.md)"
    )


def durations(table: pa.Table) -> pa.Table:
    """``table`` with each INTERVAL column (Arrow month-day-nano) as an Arrow duration, so
    Python reads ``timedelta`` and pandas ``Timedelta``; a column holding months (never one of
    the views', whose durations are differences of instants) stays as it is."""
    import pyarrow as pa

    for i, column in enumerate(table.schema):
        if not pa.types.is_interval(column.type):
            continue
        values = table.column(i).to_pylist()
        if any(v is not None and v.months for v in values):
            continue
        micros = [
            None if v is None else v.days * 86_400_000_000 + v.nanoseconds // 1000 for v in values
        ]
        table = table.set_column(i, column.name, pa.array(micros, pa.duration("us")))
    return table


def render_markdown() -> str:
    """The views and the analysis queries as Markdown (what ``docs/sql.md`` is generated
    from)."""
    lines = ["| view | what it shows |", "| --- | --- |"]
    lines += [
        f"| [`{name}`](#{name}) | {_first_sentence(doc)} |" for name, doc in VIEW_DOCS.items()
    ]
    for name, doc in VIEW_DOCS.items():
        lines += ["", f"### {name}", "", doc.description[0].upper() + doc.description[1:] + ".", ""]
        lines += ["| column | type | meaning |", "| --- | --- | --- |"]
        lines += [f"| `{c.name}` | {c.type} | {c.meaning} |" for c in doc.columns]
        lines += ["", "```sql", doc.example, "```"]
    lines += ["", "## Analysis queries", ""]
    lines.append(
        "Each runs as it is in DuckDB and, over the Parquet export, in Spark SQL "
        "(the tests compare the two)."
    )
    for analysis in ANALYSES.values():
        lines += ["", analysis.question, "", "```sql", analysis.query, "```"]
    return "\n".join(lines) + "\n"


def _first_sentence(doc: ViewDoc) -> str:
    text = doc.description
    cut = text.find(". ")
    return text if cut < 0 else text[:cut]
