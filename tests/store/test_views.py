"""The documented SQL views and the read-only ``sql()`` helper."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import Batch, ProjectionDelta
from mwp_local.store.views import VIEW_DOCS, render_markdown, sql

from .factory import GROUP_A, LogFactory, budget_row, mission_row

REQUIRED_EVENT_COLUMNS = {
    "group_id",
    "sequence",
    "event_id",
    "kind",
    "occurred_at",
    "actor_type",
    "actor_id",
    "work_item_id",
    "correlation_id",
    "payload",
    "document",
    "position",
    "mission_id",
    "cause_type",
    "cause_id",
    "aggregate_revision",
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[DuckDBLogStore]:
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "views.duckdb") as store:
        item = "urn:example:work-item:1"
        proposed = factory.event(kind="work.proposed", work_item_id=item, to_state="proposed")
        posted = factory.event(kind="message.posted")
        offered = factory.event(
            kind="work.offered", work_item_id=item, from_state="proposed", to_state="offered"
        )
        store.commit(
            Batch(
                events=(proposed, posted, offered),
                receipts=(factory.receipt((proposed, posted, offered)),),
                rejections=(factory.rejection(details_json='{"expected":3}'),),
                projections=ProjectionDelta(
                    upserts={
                        "proj_missions": (mission_row("urn:m:1"),),
                        "proj_budgets": (budget_row(item, "tokens", 9.0),),
                    }
                ),
            )
        )
        yield store


def test_every_documented_view_exists_and_its_example_runs(store: DuckDBLogStore) -> None:
    for name, doc in VIEW_DOCS.items():
        assert sql(store, f"SELECT count(*) AS n FROM {name}").num_rows == 1
        sql(store, doc.example, doc.example_params)


def test_events_view_has_the_documented_columns_and_exact_documents(
    store: DuckDBLogStore,
) -> None:
    table = sql(store, "SELECT * FROM events ORDER BY position")
    assert set(table.column_names) >= REQUIRED_EVENT_COLUMNS
    assert table.column("document").to_pylist() == [e.document for e in store.events()]


def test_payload_is_queryable_as_json(store: DuckDBLogStore) -> None:
    table = sql(store, "SELECT payload->>'$.n' AS n FROM events ORDER BY position")
    assert table.column("n").to_pylist() == ["1", "2", "3"]


def test_work_item_transitions_lists_only_state_changes_in_order(store: DuckDBLogStore) -> None:
    example = VIEW_DOCS["work_item_transitions"]
    rows = sql(store, example.example, example.example_params).to_pylist()
    assert [(r["kind"], r["from_state"], r["to_state"]) for r in rows] == [
        ("work.proposed", None, "proposed"),
        ("work.offered", "proposed", "offered"),
    ]


def test_views_read_the_log_not_the_projection_tables(store: DuckDBLogStore) -> None:
    # The fixture wrote projection rows with no Event behind them: no view shows them.
    assert store.projection_rows("proj_missions") != []
    assert sql(store, "SELECT mission_id FROM missions").to_pylist() == []
    assert sql(store, VIEW_DOCS["budgets"].example).num_rows == 0


def test_rejections_and_receipts_views_read_their_tables(store: DuckDBLogStore) -> None:
    (rejection,) = sql(
        store, "SELECT code, details->>'$.expected' AS e FROM rejections"
    ).to_pylist()
    assert rejection == {"code": "STALE_REVISION", "e": "3"}
    (receipt,) = sql(store, "SELECT event_ids, group_id FROM receipts").to_pylist()
    assert len(receipt["event_ids"]) == 3
    assert receipt["group_id"] == GROUP_A


def test_named_parameters_are_bound_not_pasted(store: DuckDBLogStore) -> None:
    hostile = "x' OR '1'='1"
    assert sql(store, "SELECT * FROM events WHERE kind = $kind", {"kind": hostile}).num_rows == 0
    assert (
        sql(store, "SELECT * FROM events WHERE kind = $kind", {"kind": "work.offered"}).num_rows
        == 1
    )


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM log_events",
        "INSERT INTO proj_missions (mission_id) VALUES ('x')",
        "DROP VIEW events",
        "CREATE TABLE t AS SELECT 1",
        "SELECT 1; DELETE FROM log_events",
        "COPY log_events TO 'out.csv'",
        "ATTACH 'other.duckdb'",
    ],
)
def test_sql_refuses_anything_but_one_read_only_statement(
    store: DuckDBLogStore, query: str
) -> None:
    with pytest.raises(ValueError):
        sql(store, query)
    assert store.event_count() == sql(store, "SELECT count(*) AS n FROM log_events")["n"][0].as_py()


def test_explain_analyze_of_a_delete_changes_nothing(store: DuckDBLogStore) -> None:
    sql(store, "EXPLAIN ANALYZE DELETE FROM log_events")
    assert sql(store, "SELECT count(*) AS n FROM log_events")["n"][0].as_py() == 3


def test_views_survive_a_reopen_read_only(store: DuckDBLogStore) -> None:
    path = store.path
    store.close()
    with DuckDBLogStore(path, read_only=True) as again:
        for name in VIEW_DOCS:
            sql(again, f"SELECT * FROM {name} LIMIT 1")


def test_markdown_documents_every_view_with_its_example() -> None:
    text = render_markdown()
    for name, doc in VIEW_DOCS.items():
        assert f"`{name}`" in text
        assert doc.example in text


def test_every_view_in_the_file_is_documented(store: DuckDBLogStore) -> None:
    names = sql(store, "SELECT view_name FROM duckdb_views() WHERE NOT internal")
    assert set(names.column("view_name").to_pylist()) == set(VIEW_DOCS)
