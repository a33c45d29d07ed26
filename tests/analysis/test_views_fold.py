"""Every documented view holds exactly what an independent fold of the signed Events says
(``fold.py``), on real runs of the sample Missions; every view's columns are the documented
ones, with their documented types; and where a view and the Authority's own projection tables
mean the same thing, they agree."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from mwp_local.agents.coordinator.contracts import DECLINE_SCHEMA as COORDINATOR_DECLINE
from mwp_local.agents.worker.admission import DECLINE_SCHEMA as WORKER_DECLINE
from mwp_local.store import view_kinds
from mwp_local.store.views import ANALYSES, VIEW_DOCS

from . import fold
from .conftest import RUNS

#: The key of each view's rows.
KEYS = {
    "events": ("position",),
    "rejections": ("position",),
    "receipts": ("position",),
    "work_items": ("work_item_id",),
    "work_item_transitions": ("position",),
    "work_item_states": ("entered_position",),
    "offers": ("offer_id",),
    "leases": ("lease_id",),
    "budgets": ("scope_type", "scope_id", "dimension"),
    "signing_keys": ("key_id",),
    "memberships": ("group_id", "principal_id"),
    "missions": ("mission_id",),
    "agents": ("agent_id",),
    "artifact_edges": ("edge", "from_id", "to_id", "position"),
}
#: Columns holding JSON (compared as parsed values).
JSON_COLUMNS = {"payload", "document", "details", "receipt", "contract", "decline", "capabilities"}


def normal(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS and isinstance(value, str):
        return json.loads(value)
    if column == "document" and isinstance(value, str):
        return json.loads(value)
    return value


def rows_of(path: Path, view: str) -> list[dict[str, Any]]:
    """The view's rows as DuckDB's Python client gives them (INTERVAL as timedelta)."""
    con = duckdb.connect(str(path / "group.duckdb"), read_only=True)
    try:
        result = con.execute(f"SELECT * FROM {view}")
        names = [d[0] for d in result.description]
        rows = result.fetchall()
    finally:
        con.close()
    return [{c: normal(c, v) for c, v in zip(names, row, strict=True)} for row in rows]


def by_key(rows: list[dict[str, Any]], key: tuple[str, ...]) -> dict[tuple[Any, ...], Any]:
    out = {tuple(r[k] for k in key): r for r in rows}
    assert len(out) == len(rows), "the key is not unique"
    return out


@pytest.fixture(scope="module")
def logs(sample_runs: Mapping[str, Path]) -> dict[str, fold.Log]:
    return {name: fold.Log(str(path / "group.duckdb")) for name, path in sample_runs.items()}


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("view", list(VIEW_DOCS))
def test_the_view_equals_an_independent_fold_of_the_events(
    sample_runs: Mapping[str, Path], logs: dict[str, fold.Log], view: str, run: str
) -> None:
    got = by_key(rows_of(sample_runs[run], view), KEYS[view])
    want = by_key(
        [{c: normal(c, v) for c, v in r.items()} for r in fold.FOLDS[view](logs[run])], KEYS[view]
    )
    assert set(got) == set(want)
    for key, row in want.items():
        assert got[key] == row, key


def test_the_runs_show_every_offer_outcome_and_every_decline_has_its_reason(
    sample_runs: Mapping[str, Path],
) -> None:
    statuses: set[str] = set()
    for run in RUNS:
        rows = rows_of(sample_runs[run], "offers")
        statuses |= {r["status"] for r in rows}
        for r in rows:
            assert (r["decline_reason"] is not None) == (r["status"] == "declined")
            assert (r["settled_at"] is None) == (r["status"] == "pending")
    assert statuses >= {"accepted", "declined", "expired", "withdrawn", "lost_race"}


@pytest.mark.parametrize("view", list(VIEW_DOCS))
def test_the_view_has_the_documented_columns_and_types(
    sample_runs: Mapping[str, Path], view: str
) -> None:
    con = duckdb.connect(str(sample_runs["learn"] / "group.duckdb"), read_only=True)
    try:
        described = con.execute(f"DESCRIBE {view}").fetchall()
    finally:
        con.close()
    spelled = {"TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ"}
    got = [(name, spelled.get(kind, kind)) for name, kind, *_ in described]
    assert got == [(c.name, c.type) for c in VIEW_DOCS[view].columns]


def test_every_timestamp_is_typed_and_every_duration_an_interval() -> None:
    for name, doc in VIEW_DOCS.items():
        for column in doc.columns:
            if column.name.endswith(("_at", "_by", "_from", "_until", "deadline")) and (
                column.type == "VARCHAR"
            ):
                assert column.name in {"entered_by", "left_by", "settled_by_kind"}, (name, column)
            if column.name in {"duration", "held_for"}:
                assert column.type == "INTERVAL"


@pytest.mark.parametrize("run", RUNS)
def test_views_agree_with_the_authoritys_projections_where_they_mean_the_same(
    sample_runs: Mapping[str, Path], run: str
) -> None:
    con = duckdb.connect(str(sample_runs[run] / "group.duckdb"), read_only=True)

    def same(query_view: str, query_projection: str) -> None:
        assert sorted(con.execute(query_view).fetchall()) == sorted(
            con.execute(query_projection).fetchall()
        )

    try:
        columns = "work_item_id, state, revision, contract_version, ownership_epoch, attempts"
        same(f"SELECT {columns} FROM work_items", f"SELECT {columns} FROM proj_work_items")
        columns = "lease_id, lease_type, holder_agent_id, state, renewal_count, closure_reason"
        same(f"SELECT {columns} FROM leases", f"SELECT {columns} FROM proj_leases")
        columns = "scope_type, scope_id, dimension, limit_value, used_value, remaining_value"
        same(f"SELECT {columns} FROM budgets", f"SELECT {columns} FROM proj_budgets")
        columns = "group_id, principal_id, role, epoch, state"
        same(f"SELECT {columns} FROM memberships", f"SELECT {columns} FROM proj_memberships")
        columns = "mission_id, state, revision, coordinator_agent_id, coordinator_epoch"
        same(f"SELECT {columns} FROM missions", f"SELECT {columns} FROM proj_missions")
        columns = "agent_id, agent_card_version, session_epoch, max_concurrency"
        same(f"SELECT {columns} FROM agents", f"SELECT {columns} FROM proj_agents")
        # The Authority's own offer status knows no decline and no expiry (neither changes
        # what it may accept); where it says accepted or lost_race, so does the view.
        same(
            "SELECT offer_id, status FROM offers WHERE status IN ('accepted', 'lost_race')",
            "SELECT offer_id, status FROM proj_offers WHERE status IN ('accepted', 'lost_race')",
        )
    finally:
        con.close()


def test_the_decline_schema_is_the_one_the_agents_post() -> None:
    assert view_kinds.DECLINE_SCHEMA == WORKER_DECLINE == COORDINATOR_DECLINE


def test_a_stay_lasts_from_one_transition_to_the_next(sample_runs: Mapping[str, Path]) -> None:
    for row in rows_of(sample_runs["flagship"], "work_item_states"):
        if row["left_at"] is not None:
            assert row["duration"] == row["left_at"] - row["entered_at"] >= timedelta(0)


@pytest.mark.parametrize("run", RUNS)
def test_every_analysis_query_runs_and_answers(sample_runs: Mapping[str, Path], run: str) -> None:
    for name, analysis in ANALYSES.items():
        rows = rows_of_query(sample_runs[run], analysis.query)
        if name in ("time_per_state", "most_loaded_worker", "concurrent_executions"):
            assert rows, name
    declines = rows_of_query(sample_runs["market"], ANALYSES["declines_by_reason"].query)
    assert declines and all(r["decline_reason"] == "capacity" for r in declines)


def rows_of_query(path: Path, query: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(path / "group.duckdb"), read_only=True)
    try:
        result = con.execute(query)
        names = [d[0] for d in result.description]
        return [dict(zip(names, row, strict=True)) for row in result.fetchall()]
    finally:
        con.close()
