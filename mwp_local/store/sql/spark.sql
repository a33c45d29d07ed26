-- mwp_local: the documented views and the analysis queries of docs/sql.md in Spark SQL, over the
-- Parquet export of a Group log (`mwp-local export DIR --parquet OUT`). Generated from
-- mwp_local.store.views by mwp_local.store.portable_sql; do not edit.
--
-- First name the export's three datasets (Spark reads the `group` partition as the Group ID):
--   CREATE OR REPLACE TEMPORARY VIEW log_events USING parquet OPTIONS (path 'OUT/events');
--   CREATE OR REPLACE TEMPORARY VIEW log_receipts USING parquet OPTIONS (path 'OUT/receipts');
--   CREATE OR REPLACE TEMPORARY VIEW log_rejections USING parquet OPTIONS (path 'OUT/rejections');
-- then run the views in this order, with spark.sql.session.timeZone set to UTC for timestamps
-- that read as the log's. In Python, mwp_local.store.spark.register(spark, OUT) does all this.

-- view: events
CREATE OR REPLACE TEMPORARY VIEW events AS

SELECT
  position,
  group_id,
  sequence,
  aggregate_revision,
  event_id,
  kind,
  occurred_at_ts AS occurred_at,
  actor_type,
  actor_id,
  cause_type,
  cause_id,
  correlation_id,
  mission_id,
  work_item_id,
  from_state,
  to_state,
  payload,
  document
FROM log_events;

-- view: rejections
CREATE OR REPLACE TEMPORARY VIEW rejections AS

SELECT
  position,
  CAST(received_at AS TIMESTAMP) AS received_at,
  code,
  explanation,
  actor_id,
  action_id,
  kind,
  group_id,
  work_item_id,
  rule,
  stage,
  reason,
  details,
  command_text
FROM log_rejections;

-- view: receipts
CREATE OR REPLACE TEMPORARY VIEW receipts AS

SELECT
  position,
  actor_id,
  action_id,
  kind,
  group_id,
  CAST(accepted_at AS TIMESTAMP) AS accepted_at,
  command_hash,
  event_ids,
  receipt,
  command_document
FROM log_receipts;

-- view: work_items
CREATE OR REPLACE TEMPORARY VIEW work_items AS

WITH authorized AS (
  SELECT
    work_item_id,
    mission_id,
    group_id,
    occurred_at_ts AS created_at,
    CAST(GET_JSON_OBJECT(payload, '$.workItem.exclusive') AS BOOLEAN) AS exclusive
  FROM log_events
  WHERE
    kind = 'work.authorized'
), contracts AS (
  SELECT
    work_item_id,
    contract
  FROM (
    SELECT
      work_item_id,
      CASE
        WHEN kind = 'work.authorized'
        THEN GET_JSON_OBJECT(payload, '$.workItem.contract')
        ELSE GET_JSON_OBJECT(payload, '$.contract')
      END AS contract,
      ROW_NUMBER() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM (
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'work.authorized'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'work.contract.revised'
    ) AS of_kinds
  ) AS c
  WHERE
    n = 1
), states AS (
  SELECT
    work_item_id,
    to_state AS state
  FROM (
    SELECT
      work_item_id,
      to_state,
      ROW_NUMBER() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events
    WHERE
      NOT to_state IS NULL AND NOT work_item_id IS NULL
  ) AS s
  WHERE
    n = 1
), accepted AS (
  SELECT
    work_item_id,
    position,
    agent_id,
    ownership_epoch
  FROM (
    SELECT
      work_item_id,
      position,
      GET_JSON_OBJECT(payload, '$.owner.agentId') AS agent_id,
      CAST(GET_JSON_OBJECT(payload, '$.owner.ownershipEpoch') AS BIGINT) AS ownership_epoch,
      ROW_NUMBER() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events
    WHERE
      kind = 'work.offer.accepted'
  ) AS a
  WHERE
    n = 1
), fenced AS (
  SELECT
    work_item_id,
    MAX(position) AS position
  FROM (
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'work.offer.created'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'work.unblocked'
  ) AS of_kinds
  WHERE
    kind = 'work.offer.created'
    OR (
      kind = 'work.unblocked' AND GET_JSON_OBJECT(payload, '$.toState') = 'open'
    )
  GROUP BY
    work_item_id
), started AS (
  SELECT
    work_item_id,
    execution_lease_id,
    attempt
  FROM (
    SELECT
      work_item_id,
      GET_JSON_OBJECT(payload, '$.executionLeaseId') AS execution_lease_id,
      CAST(GET_JSON_OBJECT(payload, '$.attempt') AS BIGINT) AS attempt,
      ROW_NUMBER() OVER (PARTITION BY work_item_id ORDER BY position DESC) AS n
    FROM log_events
    WHERE
      kind = 'work.started'
  ) AS s
  WHERE
    n = 1
), touched AS (
  SELECT
    work_item_id,
    MAX(aggregate_revision) AS revision,
    MAX(sequence) AS last_sequence,
    MAX(occurred_at_ts) AS updated_at
  FROM log_events
  WHERE
    NOT work_item_id IS NULL
  GROUP BY
    work_item_id
)
SELECT
  a.work_item_id,
  a.mission_id,
  a.group_id,
  s.state,
  t.revision,
  CAST(GET_JSON_OBJECT(c.contract, '$.contractVersion') AS BIGINT) AS contract_version,
  a.exclusive,
  GET_JSON_OBJECT(c.contract, '$.requestedUrgency') AS urgency,
  CAST(GET_JSON_OBJECT(c.contract, '$.deadline') AS TIMESTAMP) AS deadline,
  CASE WHEN f.position IS NULL OR acc.position > f.position THEN acc.agent_id END AS owner_agent_id,
  COALESCE(acc.ownership_epoch, 0) AS ownership_epoch,
  CASE WHEN s.state = 'active' THEN st.execution_lease_id END AS execution_lease_id,
  COALESCE(st.attempt, 0) AS attempts,
  a.created_at,
  t.updated_at,
  t.last_sequence,
  c.contract
FROM authorized AS a
LEFT JOIN contracts AS c
  ON c.work_item_id = a.work_item_id
LEFT JOIN states AS s
  ON s.work_item_id = a.work_item_id
LEFT JOIN accepted AS acc
  ON acc.work_item_id = a.work_item_id
LEFT JOIN fenced AS f
  ON f.work_item_id = a.work_item_id
LEFT JOIN started AS st
  ON st.work_item_id = a.work_item_id
LEFT JOIN touched AS t
  ON t.work_item_id = a.work_item_id;

-- view: work_item_transitions
CREATE OR REPLACE TEMPORARY VIEW work_item_transitions AS

SELECT
  position,
  group_id,
  mission_id,
  sequence,
  event_id,
  work_item_id,
  kind,
  from_state,
  to_state,
  occurred_at_ts AS occurred_at,
  actor_type,
  actor_id
FROM log_events
WHERE
  NOT to_state IS NULL;

-- view: work_item_states
CREATE OR REPLACE TEMPORARY VIEW work_item_states AS

SELECT
  work_item_id,
  mission_id,
  group_id,
  to_state AS state,
  occurred_at_ts AS entered_at,
  LEAD(occurred_at_ts) OVER (PARTITION BY work_item_id ORDER BY position NULLS LAST) AS left_at,
  LEAD(occurred_at_ts) OVER (PARTITION BY work_item_id ORDER BY position NULLS LAST) - occurred_at_ts AS duration,
  kind AS entered_by,
  LEAD(kind) OVER (PARTITION BY work_item_id ORDER BY position NULLS LAST) AS left_by,
  position AS entered_position,
  LEAD(position) OVER (PARTITION BY work_item_id ORDER BY position NULLS LAST) AS left_position
FROM log_events
WHERE
  NOT to_state IS NULL;

-- view: offers
CREATE OR REPLACE TEMPORARY VIEW offers AS

WITH created AS (
  SELECT
    FROM_JSON(GET_JSON_OBJECT(payload, '$.offers'), 'ARRAY<STRING>') AS offers,
    FROM_JSON(GET_JSON_OBJECT(payload, '$.withdrawnOfferIds'), 'ARRAY<STRING>') AS withdrawn,
    CAST(GET_JSON_OBJECT(payload, '$.contractVersion') AS BIGINT) AS contract_version,
    CAST(GET_JSON_OBJECT(payload, '$.urgent') AS BOOLEAN) AS urgent,
    work_item_id,
    mission_id,
    group_id,
    occurred_at_ts,
    event_id,
    kind,
    sequence,
    position
  FROM log_events
  WHERE
    kind = 'work.offer.created'
), made AS (
  SELECT
    GET_JSON_OBJECT(o.v, '$.offerId') AS offer_id,
    o.work_item_id,
    o.mission_id,
    o.group_id,
    GET_JSON_OBJECT(o.v, '$.agentId') AS agent_id,
    o.contract_version,
    o.urgent,
    o.occurred_at_ts AS offered_at,
    CAST(GET_JSON_OBJECT(o.v, '$.expiresAt') AS TIMESTAMP) AS expires_at,
    o.event_id AS offer_event_id,
    o.sequence,
    o.position
  FROM (
    SELECT
      EXPLODE(offers) AS v,
      work_item_id,
      mission_id,
      group_id,
      contract_version,
      urgent,
      occurred_at_ts,
      event_id,
      sequence,
      position
    FROM created
  ) AS o
), accepted AS (
  SELECT
    GET_JSON_OBJECT(payload, '$.offerId') AS offer_id,
    FROM_JSON(GET_JSON_OBJECT(payload, '$.lostOfferIds'), 'ARRAY<STRING>') AS lost,
    position,
    occurred_at_ts,
    event_id,
    kind
  FROM log_events
  WHERE
    kind = 'work.offer.accepted'
), answers AS (
  SELECT
    offer_id,
    position,
    occurred_at_ts,
    event_id,
    kind,
    'accepted' AS outcome,
    CAST(NULL AS STRING) AS author_id,
    CAST(NULL AS STRING) AS decline
  FROM accepted
  UNION ALL
  SELECT
    v,
    position,
    occurred_at_ts,
    event_id,
    kind,
    'lost_race',
    NULL,
    NULL
  FROM (
    SELECT
      EXPLODE(lost) AS v,
      position,
      occurred_at_ts,
      event_id,
      kind
    FROM accepted
  ) AS l
  UNION ALL
  SELECT
    v,
    position,
    occurred_at_ts,
    event_id,
    kind,
    'withdrawn',
    NULL,
    NULL
  FROM (
    SELECT
      EXPLODE(withdrawn) AS v,
      position,
      occurred_at_ts,
      event_id,
      kind
    FROM created
  ) AS w
  UNION ALL
  SELECT
    m.offer_id,
    e.position,
    e.occurred_at_ts,
    e.event_id,
    e.kind,
    'withdrawn',
    NULL,
    NULL
  FROM log_events AS e
  JOIN made AS m
    ON m.work_item_id = e.work_item_id AND e.position > m.position
  WHERE
    e.kind = 'work.contract.revised'
    AND (
      GET_JSON_OBJECT(e.payload, '$.renewedAcceptanceRequired') = 'true'
      OR (
        e.from_state = 'offered' AND e.to_state <> 'offered'
      )
    )
  UNION ALL
  SELECT
    m.offer_id,
    e.position,
    e.occurred_at_ts,
    e.event_id,
    e.kind,
    'withdrawn',
    NULL,
    NULL
  FROM log_events AS e
  JOIN made AS m
    ON m.work_item_id = e.work_item_id AND e.position > m.position
  WHERE
    e.from_state = 'offered'
    AND e.to_state <> 'offered'
    AND e.kind <> 'work.offer.accepted'
    AND e.kind <> 'work.contract.revised'
  UNION ALL
  SELECT
    GET_JSON_OBJECT(p.v, '$.data.offerId'),
    p.position,
    p.occurred_at_ts,
    p.event_id,
    p.kind,
    'declined',
    p.author_id,
    CAST(GET_JSON_OBJECT(p.v, '$.data') AS STRING)
  FROM (
    SELECT
      EXPLODE(FROM_JSON(GET_JSON_OBJECT(payload, '$.message.content'), 'ARRAY<STRING>')) AS v,
      position,
      occurred_at_ts,
      event_id,
      kind,
      GET_JSON_OBJECT(payload, '$.message.author.id') AS author_id
    FROM log_events
    WHERE
      kind = 'message.posted'
  ) AS p
  WHERE
    GET_JSON_OBJECT(p.v, '$.type') = 'data_ref'
    AND GET_JSON_OBJECT(p.v, '$.schema') = 'urn:mwp-local:schema:offer-decline'
), first_answer AS (
  SELECT
    offer_id,
    position,
    occurred_at_ts,
    event_id,
    kind,
    outcome,
    decline
  FROM (
    SELECT
      m.offer_id,
      a.position,
      a.occurred_at_ts,
      a.event_id,
      a.kind,
      a.outcome,
      a.decline,
      ROW_NUMBER() OVER (PARTITION BY m.offer_id ORDER BY a.position NULLS LAST, a.outcome NULLS LAST) AS n
    FROM made AS m
    JOIN answers AS a
      ON a.offer_id = m.offer_id AND a.position > m.position
    WHERE
      a.outcome <> 'declined' OR a.author_id = m.agent_id
  ) AS f
  WHERE
    n = 1
), log_end AS (
  SELECT
    MAX(occurred_at_ts) AS at
  FROM log_events
), settled AS (
  SELECT
    m.*,
    f.position AS answer_position,
    f.occurred_at_ts AS answered_at,
    f.event_id AS answer_event_id,
    f.kind AS answer_kind,
    f.decline,
    CASE
      WHEN f.outcome = 'accepted'
      THEN 'accepted'
      WHEN m.expires_at <= COALESCE(f.occurred_at_ts, le.at)
      THEN 'expired'
      WHEN NOT f.outcome IS NULL
      THEN f.outcome
      ELSE 'pending'
    END AS status
  FROM made AS m
  LEFT JOIN first_answer AS f
    ON f.offer_id = m.offer_id
  CROSS JOIN log_end AS le
)
SELECT
  offer_id,
  work_item_id,
  mission_id,
  group_id,
  agent_id,
  contract_version,
  urgent,
  offered_at,
  expires_at,
  status,
  CASE WHEN status = 'declined' THEN GET_JSON_OBJECT(decline, '$.reason') END AS decline_reason,
  CASE WHEN status = 'declined' THEN decline END AS decline,
  CASE
    WHEN status = 'expired'
    THEN expires_at
    WHEN status = 'pending'
    THEN NULL
    ELSE answered_at
  END AS settled_at,
  CASE WHEN NOT status IN ('expired', 'pending') THEN answer_event_id END AS settled_by_event_id,
  CASE WHEN NOT status IN ('expired', 'pending') THEN answer_kind END AS settled_by_kind,
  offer_event_id,
  sequence,
  position
FROM settled;

-- view: leases
CREATE OR REPLACE TEMPORARY VIEW leases AS

SELECT
  lease_id,
  lease_type,
  group_id,
  mission_id,
  work_item_id,
  holder_agent_id,
  session_epoch,
  ownership_epoch,
  coordinator_epoch,
  state,
  issued_at,
  expires_at,
  start_by,
  renewal_count,
  last_renewed_at,
  closed_at,
  closure_reason,
  closed_at - issued_at AS held_for,
  updated_at,
  last_event_id,
  document
FROM (
  SELECT
    GET_JSON_OBJECT(l.v, '$.leaseId') AS lease_id,
    GET_JSON_OBJECT(l.v, '$.leaseType') AS lease_type,
    GET_JSON_OBJECT(l.v, '$.groupId') AS group_id,
    GET_JSON_OBJECT(l.v, '$.missionId') AS mission_id,
    GET_JSON_OBJECT(l.v, '$.workItemId') AS work_item_id,
    GET_JSON_OBJECT(l.v, '$.holderAgentId') AS holder_agent_id,
    CAST(GET_JSON_OBJECT(l.v, '$.sessionEpoch') AS BIGINT) AS session_epoch,
    CAST(GET_JSON_OBJECT(l.v, '$.ownershipEpoch') AS BIGINT) AS ownership_epoch,
    CAST(GET_JSON_OBJECT(l.v, '$.coordinatorEpoch') AS BIGINT) AS coordinator_epoch,
    GET_JSON_OBJECT(l.v, '$.state') AS state,
    CAST(GET_JSON_OBJECT(l.v, '$.issuedAt') AS TIMESTAMP) AS issued_at,
    CAST(GET_JSON_OBJECT(l.v, '$.expiresAt') AS TIMESTAMP) AS expires_at,
    CAST(GET_JSON_OBJECT(l.v, '$.startBy') AS TIMESTAMP) AS start_by,
    CAST(GET_JSON_OBJECT(l.v, '$.renewalCount') AS BIGINT) AS renewal_count,
    CAST(GET_JSON_OBJECT(l.v, '$.lastRenewedAt') AS TIMESTAMP) AS last_renewed_at,
    CAST(GET_JSON_OBJECT(l.v, '$.closedAt') AS TIMESTAMP) AS closed_at,
    GET_JSON_OBJECT(l.v, '$.closureReason') AS closure_reason,
    l.occurred_at_ts AS updated_at,
    l.event_id AS last_event_id,
    l.v AS document,
    ROW_NUMBER() OVER (PARTITION BY GET_JSON_OBJECT(l.v, '$.leaseId') ORDER BY l.position DESC) AS n
  FROM (
    SELECT
      EXPLODE(FROM_JSON(GET_JSON_OBJECT(payload, '$.leases'), 'ARRAY<STRING>')) AS v,
      occurred_at_ts,
      event_id,
      position
    FROM log_events
  ) AS l
) AS t
WHERE
  n = 1;

-- view: budgets
CREATE OR REPLACE TEMPORARY VIEW budgets AS

WITH scopes AS (
  SELECT
    'mission' AS scope_type,
    GET_JSON_OBJECT(payload, '$.missionId') AS scope_id,
    mission_id,
    group_id,
    GET_JSON_OBJECT(payload, '$.mission.budget') AS budget
  FROM log_events
  WHERE
    kind = 'mission.created'
  UNION ALL
  SELECT
    'work_item',
    GET_JSON_OBJECT(payload, '$.workItem.workItemId'),
    mission_id,
    group_id,
    GET_JSON_OBJECT(payload, '$.workItem.contract.budget')
  FROM log_events
  WHERE
    kind = 'work.authorized'
), charged AS (
  SELECT
    scope_type,
    scope_id,
    cumulative
  FROM (
    SELECT
      GET_JSON_OBJECT(a.v, '$.scope.type') AS scope_type,
      GET_JSON_OBJECT(a.v, '$.scope.id') AS scope_id,
      GET_JSON_OBJECT(a.v, '$.cumulative') AS cumulative,
      ROW_NUMBER() OVER (
        PARTITION BY GET_JSON_OBJECT(a.v, '$.scope.type'), GET_JSON_OBJECT(a.v, '$.scope.id')
        ORDER BY a.position DESC
      ) AS n
    FROM (
      SELECT
        EXPLODE(FROM_JSON(GET_JSON_OBJECT(payload, '$.ancestry'), 'ARRAY<STRING>')) AS v,
        position
      FROM log_events
      WHERE
        kind = 'ext.missionweaveprotocol.core.resource_usage_recorded'
    ) AS a
  ) AS c
  WHERE
    n = 1
), lines AS (
  SELECT
    s.scope_type,
    s.scope_id,
    s.mission_id,
    s.group_id,
    d.dimension,
    CAST(CASE d.dimension
      WHEN 'financial'
      THEN GET_JSON_OBJECT(s.budget, '$.financialLimit')
      WHEN 'modelTokens'
      THEN GET_JSON_OBJECT(s.budget, '$.modelTokenLimit')
      WHEN 'toolCalls'
      THEN GET_JSON_OBJECT(s.budget, '$.toolCallLimit')
      WHEN 'computeSeconds'
      THEN GET_JSON_OBJECT(s.budget, '$.computeSecondsLimit')
      WHEN 'wallClockSeconds'
      THEN GET_JSON_OBJECT(s.budget, '$.wallClockSecondsLimit')
      WHEN 'externalSideEffects'
      THEN GET_JSON_OBJECT(s.budget, '$.externalSideEffectLimit')
    END AS DOUBLE) AS limit_value,
    COALESCE(
      CAST(CASE d.dimension
        WHEN 'financial'
        THEN GET_JSON_OBJECT(c.cumulative, '$.financial')
        WHEN 'modelTokens'
        THEN GET_JSON_OBJECT(c.cumulative, '$.modelTokens')
        WHEN 'toolCalls'
        THEN GET_JSON_OBJECT(c.cumulative, '$.toolCalls')
        WHEN 'computeSeconds'
        THEN GET_JSON_OBJECT(c.cumulative, '$.computeSeconds')
        WHEN 'wallClockSeconds'
        THEN GET_JSON_OBJECT(c.cumulative, '$.wallClockSeconds')
        WHEN 'externalSideEffects'
        THEN GET_JSON_OBJECT(c.cumulative, '$.externalSideEffects')
      END AS DOUBLE),
      0.0
    ) AS used_value
  FROM scopes AS s
  CROSS JOIN VALUES
    ('financial'),
    ('modelTokens'),
    ('toolCalls'),
    ('computeSeconds'),
    ('wallClockSeconds'),
    ('externalSideEffects') AS d(dimension)
  LEFT JOIN charged AS c
    ON c.scope_type = s.scope_type AND c.scope_id = s.scope_id
)
SELECT
  scope_type,
  scope_id,
  mission_id,
  group_id,
  dimension,
  limit_value,
  used_value,
  limit_value - used_value AS remaining_value
FROM lines;

-- view: signing_keys
CREATE OR REPLACE TEMPORARY VIEW signing_keys AS

SELECT
  key_id,
  principal_type,
  principal_id,
  algorithm,
  public_key,
  valid_from,
  valid_until,
  revoked_at,
  registered_at,
  event_id
FROM (
  SELECT
    GET_JSON_OBJECT(k.v, '$.keyId') AS key_id,
    'agent' AS principal_type,
    GET_JSON_OBJECT(k.payload, '$.agentCard.agentId') AS principal_id,
    GET_JSON_OBJECT(k.v, '$.algorithm') AS algorithm,
    GET_JSON_OBJECT(k.v, '$.publicKey') AS public_key,
    CAST(GET_JSON_OBJECT(k.v, '$.validFrom') AS TIMESTAMP) AS valid_from,
    CAST(GET_JSON_OBJECT(k.v, '$.validUntil') AS TIMESTAMP) AS valid_until,
    CAST(GET_JSON_OBJECT(k.v, '$.revokedAt') AS TIMESTAMP) AS revoked_at,
    k.occurred_at_ts AS registered_at,
    k.event_id,
    ROW_NUMBER() OVER (PARTITION BY GET_JSON_OBJECT(k.v, '$.keyId') ORDER BY k.position NULLS LAST) AS n
  FROM (
    SELECT
      EXPLODE(FROM_JSON(GET_JSON_OBJECT(payload, '$.agentCard.publicKeys'), 'ARRAY<STRING>')) AS v,
      payload,
      occurred_at_ts,
      event_id,
      position
    FROM log_events
    WHERE
      kind = 'ext.missionweaveprotocol.registry.agent_card_registered'
  ) AS k
) AS t
WHERE
  n = 1;

-- view: memberships
CREATE OR REPLACE TEMPORARY VIEW memberships AS

SELECT
  group_id,
  principal_id,
  principal_type,
  role,
  epoch,
  state,
  mission_id,
  changed_at,
  event_id,
  document
FROM (
  SELECT
    GET_JSON_OBJECT(payload, '$.membership.groupId') AS group_id,
    GET_JSON_OBJECT(payload, '$.membership.member.id') AS principal_id,
    GET_JSON_OBJECT(payload, '$.membership.member.type') AS principal_type,
    GET_JSON_OBJECT(payload, '$.membership.role') AS role,
    CAST(GET_JSON_OBJECT(payload, '$.membership.membershipEpoch') AS BIGINT) AS epoch,
    GET_JSON_OBJECT(payload, '$.membership.state') AS state,
    GET_JSON_OBJECT(payload, '$.missionId') AS mission_id,
    occurred_at_ts AS changed_at,
    event_id,
    GET_JSON_OBJECT(payload, '$.membership') AS document,
    ROW_NUMBER() OVER (
      PARTITION BY GET_JSON_OBJECT(payload, '$.membership.groupId'), GET_JSON_OBJECT(payload, '$.membership.member.id')
      ORDER BY position DESC
    ) AS n
  FROM (
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'membership.changed'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'membership.ended'
  ) AS of_kinds
) AS t
WHERE
  n = 1;

-- view: missions
CREATE OR REPLACE TEMPORARY VIEW missions AS

WITH created AS (
  SELECT
    GET_JSON_OBJECT(payload, '$.missionId') AS mission_id,
    group_id,
    GET_JSON_OBJECT(payload, '$.mission.objective') AS objective,
    GET_JSON_OBJECT(payload, '$.mission.missionOwner.type') AS owner_type,
    GET_JSON_OBJECT(payload, '$.mission.missionOwner.id') AS owner_id,
    GET_JSON_OBJECT(payload, '$.mission.parent.missionId') AS parent_mission_id,
    GET_JSON_OBJECT(payload, '$.mission.parent.workItemId') AS parent_work_item_id,
    CAST(GET_JSON_OBJECT(payload, '$.mission.deadline') AS TIMESTAMP) AS deadline,
    occurred_at_ts AS created_at
  FROM log_events
  WHERE
    kind = 'mission.created'
), lifecycle AS (
  SELECT
    mission_id,
    state,
    updated_at
  FROM (
    SELECT
      GET_JSON_OBJECT(payload, '$.missionId') AS mission_id,
      CASE kind
        WHEN 'mission.created'
        THEN 'active'
        WHEN 'mission.submitted_for_approval'
        THEN 'awaiting_approval'
        WHEN 'mission.changes_requested'
        THEN 'active'
        WHEN 'mission.approved'
        THEN 'approved'
        WHEN 'mission.cancelled'
        THEN 'cancelled'
        WHEN 'mission.terminated'
        THEN 'failed'
      END AS state,
      occurred_at_ts AS updated_at,
      ROW_NUMBER() OVER (PARTITION BY GET_JSON_OBJECT(payload, '$.missionId') ORDER BY position DESC) AS n
    FROM (
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.created'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.submitted_for_approval'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.changes_requested'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.approved'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.cancelled'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.terminated'
    ) AS of_kinds
  ) AS l
  WHERE
    n = 1
), coordinators AS (
  SELECT
    mission_id,
    agent_id,
    epoch
  FROM (
    SELECT
      GET_JSON_OBJECT(payload, '$.missionId') AS mission_id,
      CASE
        WHEN kind = 'mission.created'
        THEN GET_JSON_OBJECT(payload, '$.mission.coordinator.agentId')
        ELSE GET_JSON_OBJECT(payload, '$.coordinator.agentId')
      END AS agent_id,
      CAST(CASE
        WHEN kind = 'mission.created'
        THEN GET_JSON_OBJECT(payload, '$.mission.coordinator.coordinatorEpoch')
        ELSE GET_JSON_OBJECT(payload, '$.coordinator.coordinatorEpoch')
      END AS BIGINT) AS epoch,
      ROW_NUMBER() OVER (PARTITION BY GET_JSON_OBJECT(payload, '$.missionId') ORDER BY position DESC) AS n
    FROM (
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.created'
      UNION ALL
      SELECT
        *
      FROM log_events
      WHERE
        kind = 'mission.coordinator.assigned'
    ) AS of_kinds
  ) AS c
  WHERE
    n = 1
), revisions AS (
  SELECT
    GET_JSON_OBJECT(payload, '$.missionId') AS mission_id,
    MAX(aggregate_revision) AS revision,
    MAX(sequence) AS last_sequence
  FROM (
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.created'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.submitted_for_approval'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.changes_requested'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.approved'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.cancelled'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.terminated'
    UNION ALL
    SELECT
      *
    FROM log_events
    WHERE
      kind = 'mission.coordinator.assigned'
  ) AS of_kinds
  GROUP BY
    GET_JSON_OBJECT(payload, '$.missionId')
)
SELECT
  c.mission_id,
  c.group_id,
  l.state,
  r.revision,
  c.objective,
  c.owner_type,
  c.owner_id,
  co.agent_id AS coordinator_agent_id,
  co.epoch AS coordinator_epoch,
  c.parent_mission_id,
  c.parent_work_item_id,
  c.deadline,
  c.created_at,
  l.updated_at,
  r.last_sequence
FROM created AS c
LEFT JOIN lifecycle AS l
  ON l.mission_id = c.mission_id
LEFT JOIN coordinators AS co
  ON co.mission_id = c.mission_id
LEFT JOIN revisions AS r
  ON r.mission_id = c.mission_id;

-- view: agents
CREATE OR REPLACE TEMPORARY VIEW agents AS

WITH cards AS (
  SELECT
    agent_id,
    card_version,
    max_concurrency,
    capabilities,
    registered_at
  FROM (
    SELECT
      GET_JSON_OBJECT(payload, '$.agentCard.agentId') AS agent_id,
      CAST(GET_JSON_OBJECT(payload, '$.agentCard.cardVersion') AS BIGINT) AS card_version,
      CAST(GET_JSON_OBJECT(payload, '$.agentCard.maxConcurrency') AS BIGINT) AS max_concurrency,
      GET_JSON_OBJECT(payload, '$.agentCard.capabilities') AS capabilities,
      occurred_at_ts AS registered_at,
      ROW_NUMBER() OVER (
        PARTITION BY GET_JSON_OBJECT(payload, '$.agentCard.agentId')
        ORDER BY position DESC
      ) AS n
    FROM log_events
    WHERE
      kind = 'ext.missionweaveprotocol.registry.agent_card_registered'
  ) AS c
  WHERE
    n = 1
), sessions AS (
  SELECT
    agent_id,
    session_epoch,
    opened_at
  FROM (
    SELECT
      GET_JSON_OBJECT(payload, '$.agentId') AS agent_id,
      CAST(GET_JSON_OBJECT(payload, '$.sessionEpoch') AS BIGINT) AS session_epoch,
      occurred_at_ts AS opened_at,
      ROW_NUMBER() OVER (PARTITION BY GET_JSON_OBJECT(payload, '$.agentId') ORDER BY position DESC) AS n
    FROM log_events
    WHERE
      kind = 'ext.missionweaveprotocol.identity.session_opened'
  ) AS s
  WHERE
    n = 1
)
SELECT
  c.agent_id,
  c.card_version AS agent_card_version,
  COALESCE(s.session_epoch, 0) AS session_epoch,
  c.max_concurrency,
  c.capabilities,
  c.registered_at,
  s.opened_at AS session_opened_at
FROM cards AS c
LEFT JOIN sessions AS s
  ON s.agent_id = c.agent_id;

-- view: artifact_edges
CREATE OR REPLACE TEMPORARY VIEW artifact_edges AS

SELECT
  'derived_from' AS edge,
  'artifact' AS from_type,
  GET_JSON_OBJECT(p.payload, '$.artifact.contentHash') AS from_id,
  'artifact' AS to_type,
  p.v AS to_id,
  GET_JSON_OBJECT(p.payload, '$.missionId') AS mission_id,
  p.group_id,
  GET_JSON_OBJECT(p.payload, '$.workItemId') AS work_item_id,
  p.event_id,
  p.sequence,
  p.position
FROM (
  SELECT
    EXPLODE(
      FROM_JSON(GET_JSON_OBJECT(payload, '$.artifact.sourceArtifactHashes'), 'ARRAY<STRING>')
    ) AS v,
    payload,
    group_id,
    event_id,
    sequence,
    position
  FROM log_events
  WHERE
    kind = 'artifact.published'
) AS p
UNION ALL
SELECT
  'produced_for',
  'artifact',
  GET_JSON_OBJECT(payload, '$.artifact.contentHash'),
  'work_item',
  GET_JSON_OBJECT(payload, '$.workItemId'),
  GET_JSON_OBJECT(payload, '$.missionId'),
  group_id,
  GET_JSON_OBJECT(payload, '$.workItemId'),
  event_id,
  sequence,
  position
FROM log_events
WHERE
  kind = 'artifact.published'
UNION ALL
SELECT
  'part_of',
  'work_item',
  GET_JSON_OBJECT(payload, '$.workItem.workItemId'),
  'mission',
  GET_JSON_OBJECT(payload, '$.missionId'),
  GET_JSON_OBJECT(payload, '$.missionId'),
  group_id,
  GET_JSON_OBJECT(payload, '$.workItem.workItemId'),
  event_id,
  sequence,
  position
FROM log_events
WHERE
  kind = 'work.authorized'
UNION ALL
SELECT
  'child_of',
  'mission',
  GET_JSON_OBJECT(payload, '$.missionId'),
  'work_item',
  GET_JSON_OBJECT(payload, '$.mission.parent.workItemId'),
  GET_JSON_OBJECT(payload, '$.missionId'),
  group_id,
  NULL,
  event_id,
  sequence,
  position
FROM log_events
WHERE
  kind = 'mission.created'
  AND NOT GET_JSON_OBJECT(payload, '$.mission.parent.workItemId') IS NULL;

-- analysis: time_per_state
SELECT
  state,
  COUNT(*) AS stays,
  AVG(duration) AS mean,
  MAX(duration) AS longest
FROM work_item_states
WHERE
  NOT duration IS NULL
GROUP BY
  state
ORDER BY
  mean DESC,
  state NULLS LAST;

-- analysis: most_loaded_worker
SELECT
  holder_agent_id AS worker,
  COUNT(*) AS executions,
  CAST(SUM(DATEDIFF(SECOND, issued_at, COALESCE(closed_at, expires_at))) AS BIGINT) AS busy_seconds
FROM leases
WHERE
  lease_type = 'execution'
GROUP BY
  holder_agent_id
ORDER BY
  busy_seconds DESC,
  worker NULLS LAST;

-- analysis: declines_by_reason
SELECT
  decline_reason,
  agent_id,
  COUNT(*) AS declines
FROM offers
WHERE
  status = 'declined'
GROUP BY
  decline_reason,
  agent_id
ORDER BY
  declines DESC,
  decline_reason NULLS LAST,
  agent_id NULLS LAST;

-- analysis: offer_outcomes
SELECT
  agent_id,
  status,
  COUNT(*) AS offers
FROM offers
GROUP BY
  agent_id,
  status
ORDER BY
  agent_id NULLS LAST,
  status NULLS LAST;

-- analysis: concurrent_executions
SELECT
  worker,
  changed_at,
  CAST(SUM(delta) OVER (
    PARTITION BY worker
    ORDER BY changed_at NULLS LAST, delta NULLS LAST
    ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW
  ) AS BIGINT) AS running
FROM (
  SELECT
    holder_agent_id AS worker,
    issued_at AS changed_at,
    1 AS delta
  FROM leases
  WHERE
    lease_type = 'execution'
  UNION ALL
  SELECT
    holder_agent_id,
    COALESCE(closed_at, expires_at),
    -1
  FROM leases
  WHERE
    lease_type = 'execution'
) AS changes
ORDER BY
  worker NULLS LAST,
  changed_at NULLS LAST,
  running NULLS LAST;

-- analysis: worker_load_by_hour
SELECT
  holder_agent_id AS worker,
  DATE_TRUNC('HOUR', issued_at) AS hour,
  COUNT(*) AS started
FROM leases
WHERE
  lease_type = 'execution'
GROUP BY
  holder_agent_id,
  DATE_TRUNC('HOUR', issued_at)
ORDER BY
  hour NULLS LAST,
  worker NULLS LAST;

-- analysis: expected_cost_per_worker
SELECT
  agent_id,
  COUNT(*) AS offers,
  AVG(CAST(GET_JSON_OBJECT(e.payload, '$.selectionBasis.expectedCost') AS DOUBLE)) AS mean_cost
FROM offers AS o
JOIN events AS e
  ON e.event_id = o.offer_event_id
GROUP BY
  agent_id
ORDER BY
  agent_id NULLS LAST;
