"""The analysis charts of notebook 08 draw the analysis queries as static images (issue 24,
point 8), without a kernel."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.views import ANALYSES, sql

charts = pytest.importorskip("mwp_local.notebook.charts")
pytest.importorskip("matplotlib")


@pytest.mark.parametrize("name", sorted(charts.CHART_OF))
def test_each_chart_draws_its_analysis_as_png_and_svg(
    sample_runs: Mapping[str, Path], name: str
) -> None:
    with DuckDBLogStore(sample_runs["market"] / "group.duckdb", read_only=True) as store:
        table = sql(store, ANALYSES[name].query)
    chart = charts.CHART_OF[name](table)
    assert chart._repr_png_().startswith(b"\x89PNG")
    text = chart.svg()
    title = {"time_per_state": "Time per WorkItem state",
             "concurrent_executions": "Worker load over time",
             "declines_by_reason": "Declines by reason"}[name]  # fmt: skip
    assert title.split()[0] in text  # matplotlib writes text as glyph paths with ids
    assert "<svg" in text


def test_a_log_without_declines_says_so(sample_runs: Mapping[str, Path]) -> None:
    with DuckDBLogStore(sample_runs["learn"] / "group.duckdb", read_only=True) as store:
        table = sql(store, ANALYSES["declines_by_reason"].query)
    assert table.num_rows == 0
    assert charts.declines_by_reason(table)._repr_png_().startswith(b"\x89PNG")


def test_a_comparison_draws_one_panel_per_measure_with_durations_in_minutes() -> None:
    import duckdb

    # the shape notebook 09's query gives: a label, an INTERVAL and counts, one row per run
    table = duckdb.sql(
        "SELECT * FROM (VALUES ('built-in', INTERVAL 68 MINUTE, 0, 0),"
        " ('least-done', INTERVAL 78 MINUTE, 1, 1)) t(strategy, cycle_time, declines, moves)"
    ).to_arrow_table()
    chart = charts.comparison(table, by="strategy", title="Two runs")
    axes = chart.figure.get_axes()
    assert [a.get_title() for a in axes] == ["cycle time (minutes)", "declines", "moves"]
    heights = [[bar.get_height() for bar in a.patches] for a in axes]
    assert heights == [[68.0, 78.0], [0.0, 1.0], [0.0, 1.0]]
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["built-in", "least-done"]
    assert chart._repr_png_().startswith(b"\x89PNG")


def test_a_comparison_without_its_label_column_says_what_it_needs() -> None:
    import pyarrow as pa

    with pytest.raises(ValueError, match="'strategy' column"):
        charts.comparison(pa.table({"run": ["a"], "declines": [1]}))
