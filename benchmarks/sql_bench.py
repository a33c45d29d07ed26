"""Figure 4: the documented SQL views and five typical analysis queries on a 1M-Event log, and
Parquet export.

Owns building that log fast and the queries. A real log comes first: WorkItem cycles through the
Group Authority (signed Events, receipts, projection rows, a few rejections). It is then
replicated inside DuckDB, in bulk, into 8 Groups until the log holds about a million Events:
each replica gets its own WorkItem IDs, UUIDs and Group sequences (rewritten in the typed
columns and in the document text alike), its timestamps shifted in the typed columns, and
positions that run 1..N, so the file opens as a valid ``DuckDBLogStore`` and the views see
realistic rows. The rewritten documents no longer match their signatures or chain values; the
file is for timing SQL, never for ``verify-log``.

Queries run through ``mwp_local.store.views.sql`` (the documented path: read-only, bound
parameters, Arrow result). The reference for each is a bare full scan of ``log_events`` in the
same run; the export's is DuckDB's own ``COPY ... TO parquet``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from harness import Entry, Measure, Target
from workload import Workload

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.parquet import export_parquet
from mwp_local.store.views import VIEW_DOCS, sql

GROUPS = 8


@dataclass(frozen=True, slots=True)
class Sizes:
    """The log to build and how often each query runs."""

    base_items: int
    events: int
    reps: int
    export_reps: int


FULL = Sizes(base_items=100, events=1_000_000, reps=5, export_reps=3)
QUICK = Sizes(base_items=4, events=3_000, reps=1, export_reps=1)

#: Five questions people ask of a Mission log, in the SQL they would write.
ANALYSIS: dict[str, str] = {
    "Events per Group and kind": (
        "SELECT group_id, kind, count(*) AS n FROM events GROUP BY group_id, kind "
        "ORDER BY group_id, n DESC"
    ),
    "time spent in each WorkItem state (lag window)": (
        "SELECT from_state, count(*) AS n, avg(dwell) AS mean_seconds FROM ("
        " SELECT from_state, epoch(occurred_at) - epoch(lag(occurred_at) OVER"
        " (PARTITION BY work_item_id ORDER BY position)) AS dwell FROM work_item_transitions"
        ") t WHERE dwell IS NOT NULL GROUP BY from_state ORDER BY from_state"
    ),
    "cycle time authorized → result accepted, per Group": (
        "SELECT group_id, count(*) AS items, median(done - began) AS median_cycle,"
        " quantile_cont(epoch(done) - epoch(began), 0.95) AS p95_seconds FROM ("
        " SELECT group_id, work_item_id,"
        " min(occurred_at) FILTER (WHERE kind = 'work.authorized') AS began,"
        " max(occurred_at) FILTER (WHERE kind = 'work.result.accepted') AS done"
        " FROM events WHERE work_item_id IS NOT NULL GROUP BY group_id, work_item_id"
        ") t WHERE done IS NOT NULL GROUP BY group_id ORDER BY group_id"
    ),
    "busiest actors per hour": (
        "SELECT actor_id, date_trunc('hour', occurred_at) AS hour, count(*) AS n FROM events "
        "GROUP BY actor_id, hour ORDER BY n DESC, actor_id, hour LIMIT 20"
    ),
    "offers per Worker and expected cost (JSON payload)": (
        "SELECT payload ->> '$.offers[0].agentId' AS agent, count(*) AS offers,"
        " avg(CAST(payload ->> '$.selectionBasis.expectedCost' AS DOUBLE)) AS mean_cost "
        "FROM events WHERE kind = 'work.offer.created' GROUP BY agent ORDER BY agent"
    ),
}

REFERENCE = "SELECT count(*), count(DISTINCT kind) FROM log_events"


def _base_log(path: Path, items: int) -> None:
    """A real log: WorkItem cycles through the Authority, and three kinds of rejection."""
    workload = Workload.open(DuckDBLogStore(path))
    workload.run_cycles(range(items), batch=max(1, min(items, 50)))
    coordinator = workload.org.get("coordinator")
    done = {"workItemId": "urn:mwp-local:work:bench-0000000"}
    refused = [
        workload.command(coordinator, "work.accept_result", done),
        workload.command(coordinator, "work.accept_result", done, coordinator_epoch=99),
        workload.command(coordinator, "work.accept_result", done, issued_at="2026-07-14T00:00:00Z"),
    ]
    for outcome in workload.log.submit_many(refused, workload.now()):
        assert not outcome.ok
    workload.log.store.close()


def _rid(column: str) -> str:
    """SQL rewriting the IDs in a text column for replica ``r`` (Group ``g``)."""
    text = column
    work = "'urn:mwp-local:work:b' || printf('%05d', r) || '-'"
    text = f"replace({text}, 'urn:mwp-local:work:bench-', {work})"
    text = f"replace({text}, 'urn:mwp-local:group:bench', 'urn:mwp-local:group:bench-' || g)"
    text = f"replace({text}, 'urn:mwp-local:mission:bench', 'urn:mwp-local:mission:bench-' || g)"
    return (
        f"regexp_replace({text}, 'urn:uuid:[0-9a-f]{{8}}', 'urn:uuid:' || printf('%08x', r), 'g')"
    )


def build_log(path: Path, sizes: Sizes, workdir: Path) -> dict[str, Any]:
    """Build the large log at ``path``; returns what it holds."""
    base = workdir / "base.duckdb"
    _base_log(base, sizes.base_items)
    DuckDBLogStore(path).close()  # the tables, views and schema version of a real log
    con = duckdb.connect(str(path))
    con.execute(f"ATTACH '{base}' AS base (READ_ONLY)")
    (item_events,) = con.execute(
        "SELECT count(*) FROM base.log_events WHERE work_item_id IS NOT NULL"
    ).fetchall()[0]
    (setup_events,) = con.execute(
        "SELECT count(*) FROM base.log_events WHERE group_id IS NOT NULL AND work_item_id IS NULL"
    ).fetchall()[0]
    replicas = max(GROUPS, -(-(sizes.events - GROUPS * setup_events) // item_events))
    con.execute(
        f"CREATE TEMP TABLE reps AS SELECT r, r % {GROUPS} AS g FROM range({replicas}) t(r)"
    )
    # Which rows each replica gets, with its new sequence and an order that becomes position:
    # the Organization's events once, each Group's set-up events once (replica r < 8), every
    # WorkItem Event once per replica.
    con.execute(
        f"""
        CREATE TEMP TABLE plan AS
        WITH ranked AS (
          SELECT position AS src, group_id IS NULL AS org, work_item_id IS NULL AS setup,
                 row_number() OVER (
                   PARTITION BY group_id IS NULL, work_item_id IS NULL ORDER BY position
                 ) AS k
          FROM base.log_events
        )
        SELECT src, 0 AS r, 0 AS g, NULL::BIGINT AS seq, 0 AS ord FROM ranked WHERE org
        UNION ALL
        SELECT src, r, g, k AS seq, 1 AS ord FROM ranked, reps
          WHERE NOT org AND setup AND r < {GROUPS}
        UNION ALL
        SELECT src, r, g, {setup_events} + (r // {GROUPS}) * {item_events} + k AS seq, 2 AS ord
          FROM ranked, reps WHERE NOT setup
        """
    )
    shift = "(r * 60000000)"  # one minute per replica, in the typed columns only
    con.execute(
        f"""
        INSERT INTO log_events
        SELECT row_number() OVER (ORDER BY p.ord, p.r, e.position) AS position,
          CASE WHEN e.group_id IS NULL THEN NULL ELSE {_rid("e.group_id")} END,
          p.seq,
          e.aggregate_revision,
          {_rid("e.event_id")},
          e.kind,
          strftime(make_timestamp(e.occurred_at_us + {shift}), '%Y-%m-%dT%H:%M:%S.%gZ'),
          e.occurred_at_us + {shift},
          e.occurred_at_ts + to_microseconds({shift}),
          e.actor_type, e.actor_id, e.cause_type, {_rid("e.cause_id")}, {_rid("e.correlation_id")},
          {_rid("e.work_item_id")}, {_rid("e.mission_id")}, e.from_state, e.to_state,
          {_rid("CAST(e.payload AS VARCHAR)")},
          regexp_replace(
            {_rid("e.document")}, '"sequence":[0-9]+', '"sequence":' || coalesce(p.seq, 0)
          ),
          '\\x00'::BLOB
        FROM plan p JOIN base.log_events e ON e.position = p.src
        """
    )
    # One receipt per Command of every replica (the bootstrap ones once), and rejections.
    con.execute(
        f"""
        INSERT INTO log_receipts
        SELECT row_number() OVER (ORDER BY reps.r, x.position), x.actor_id, {_rid("x.action_id")},
          x.command_hash, {_rid("x.command_document")}, x.kind, {_rid("x.group_id")},
          x.accepted_at, list_transform(x.event_ids, lambda i: {_rid("i")}),
          {_rid("CAST(x.receipt AS VARCHAR)")}
        FROM base.log_receipts x, (SELECT r, g FROM reps) reps
        WHERE x.group_id IS NOT NULL AND (reps.r < {GROUPS} OR x.kind NOT IN ('mission.create'))
           OR x.group_id IS NULL AND reps.r = 0
        """
    )
    con.execute(
        f"""
        INSERT INTO log_rejections
        SELECT row_number() OVER (ORDER BY reps.r, x.position), x.received_at, x.actor_id,
          {_rid("x.action_id")}, x.kind, {_rid("x.group_id")}, {_rid("x.work_item_id")}, x.code,
          x.explanation, x.rule, x.stage, x.reason, x.details, x.command_text
        FROM base.log_rejections x, (SELECT r, g FROM reps WHERE r < 100) reps
        """
    )
    # Projections: per replica for WorkItem rows, per Group for Mission-level rows, once else.
    per_item = {
        "proj_work_items": "TRUE",
        "proj_offers": "TRUE",
        "proj_leases": "x.work_item_id IS NOT NULL",
        "proj_budgets": "x.scope_type = 'work_item'",
    }
    per_group = {
        "proj_leases": "x.work_item_id IS NULL",
        "proj_budgets": "x.scope_type = 'mission'",
        "proj_missions": "TRUE",
        "proj_memberships": "TRUE",
    }
    for table in ("proj_agents", "proj_signing_keys"):
        con.execute(f"INSERT INTO {table} SELECT * FROM base.{table}")
    for table, where in [*((t, w) for t, w in per_item.items()), *per_group.items()]:
        columns = [
            (name, kind)
            for name, kind in con.execute(
                f"SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_catalog = 'base' AND table_name = '{table}' ORDER BY ordinal_position"
            ).fetchall()
        ]
        select = ", ".join(
            _rid(f"x.{name}") if kind == "VARCHAR" else f"x.{name}" for name, kind in columns
        )
        scope = f"reps.r < {GROUPS}" if (table, where) in per_group.items() else "TRUE"
        con.execute(
            f"INSERT INTO {table} SELECT {select} FROM base.{table} x, reps "
            f"WHERE ({where}) AND {scope}"
        )
    sample = con.execute(
        "SELECT work_item_id FROM log_events WHERE work_item_id IS NOT NULL "
        "ORDER BY position DESC LIMIT 1"
    ).fetchall()[0][0]
    counts = {
        name: con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
        for name in ("log_events", "log_receipts", "log_rejections", "proj_work_items")
    }
    con.execute("DETACH base")
    con.execute("CHECKPOINT")
    con.close()
    return {"replicas": replicas, "sample_work_item": sample, **counts}


def figure_4(sizes: Sizes) -> list[Entry]:
    """Every documented view's example query, five analysis queries, and Parquet export."""
    with tempfile.TemporaryDirectory(prefix="mwp-bench-sql-") as tmp:
        work = Path(tmp)
        path = work / "large.duckdb"
        began = time.perf_counter()
        built = build_log(path, sizes, work)
        build_seconds = time.perf_counter() - began
        store = DuckDBLogStore(path, read_only=True)
        try:
            return _measure(store, sizes, built, build_seconds, work)
        finally:
            store.close()


def _time_query(
    store: DuckDBLogStore, query: str, params: dict[str, Any], reps: int
) -> list[float]:
    sql(store, query, params)  # warm-up: the first run reads the file into DuckDB's cache
    out = []
    for _ in range(reps):
        began = time.perf_counter()
        sql(store, query, params)
        out.append((time.perf_counter() - began) * 1000)
    return out


def _measure(
    store: DuckDBLogStore, sizes: Sizes, built: dict[str, Any], build_seconds: float, work: Path
) -> list[Entry]:
    events = store.event_count()
    reference = Measure(
        "full scan of log_events", "ms", tuple(_time_query(store, REFERENCE, {}, sizes.reps))
    )
    params_for = {
        "work_item_id": built["sample_work_item"],
        "group_id": "urn:mwp-local:group:bench-3",
    }
    target = Target(text="≤ 500 ms", at_most=500)
    shared = {"events": events, "work_items": built["proj_work_items"]}
    entries = []
    for n, (view, doc) in enumerate(VIEW_DOCS.items(), start=1):
        params = {k: params_for.get(k, v) for k, v in doc.example_params.items()}
        entries.append(
            Entry(
                figure=f"4.v{n}",
                name=f"view {view}: documented example",
                unit="ms",
                values=_time_query(store, doc.example, params, sizes.reps),
                ceiling=reference,
                ratio_meaning="time in bare full scans of log_events",
                target=target,
                parameters={**shared, "query": doc.example, "params": params},
            )
        )
    for n, (title, query) in enumerate(ANALYSIS.items(), start=1):
        entries.append(
            Entry(
                figure=f"4.q{n}",
                name=f"query: {title}",
                unit="ms",
                values=_time_query(store, query, {}, sizes.reps),
                ceiling=reference,
                ratio_meaning="time in bare full scans of log_events",
                target=target,
                parameters={**shared, "query": query},
            )
        )
    rates, raw = [], []
    for _ in range(sizes.export_reps):
        out = work / "export"
        began = time.perf_counter()
        export_parquet(store, out, overwrite=True)
        rates.append(events / (time.perf_counter() - began))
        shutil.rmtree(out)
        with store.cursor() as cur:
            began = time.perf_counter()
            cur.execute(
                f"COPY (SELECT * FROM log_events ORDER BY position) TO '{work / 'raw.parquet'}' "
                "(FORMAT parquet, COMPRESSION zstd)"
            )
            raw.append(events / (time.perf_counter() - began))
        (work / "raw.parquet").unlink()
    entries.append(
        Entry(
            figure="4.x",
            name="Parquet export (events, receipts, rejections)",
            unit="Events/s",
            values=rates,
            ceiling=Measure("DuckDB COPY log_events TO parquet (zstd)", "Events/s", tuple(raw)),
            ratio_meaning="share of DuckDB's own single-file export rate",
            target=Target(text="≥ 1.0 of DuckDB's COPY of the Events", ratio_at_least=1.0),
            parameters={
                "events": events,
                "receipts": built["log_receipts"],
                "build_seconds": round(build_seconds, 1),
            },
            notes=(
                "mwp-local export --parquet: Hive-partitioned by Group, events, receipts and "
                "rejections; Events/s counts Events only."
            ),
        )
    )
    return entries
