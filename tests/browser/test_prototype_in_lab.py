"""Notebook 09 in a real JupyterLab and Chromium: run all, then find its DAG, its comparison
table and chart on the page as the browser drew them (issue 22 point 6).

Screenshots of the DAG's cell, the comparison's cell and the whole page go to
``test-output/<test>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import Lab, run_all
from .test_quickstart_in_lab import RUN_ALL_MS, shoot

pytestmark = pytest.mark.browser

#: The last code cell's output: the offers of both runs, with their decline reasons.
DONE = '.jp-OutputArea-output .mwp-result th:text-is("decline_reason")'


def _cells(row: Any) -> list[str]:
    cells = row.locator("td")
    return [(cells.nth(i).text_content() or "").strip() for i in range(cells.count())]


def test_notebook_09_runs_and_shows_its_dag_and_comparison(
    lab: Lab, browser_context: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(lab.notebook_url("09_prototype_your_own_mission.ipynb"))
        run_all(page, DONE, RUN_ALL_MS)
        assert errors == [], errors

        # the Mission DAG: the live widget, three WorkItems and the two dependencies between
        dag = page.locator(".mwp-mission-dag").first
        dag.scroll_into_view_if_needed()
        expect(dag.locator("svg g.node")).to_have_count(3)
        expect(dag.locator("svg g.edge")).to_have_count(2)
        for name in ("fetch", "sum", "report"):
            expect(dag.locator("svg g.node", has_text=name).first).to_be_visible()
        shoot(page, dag, output_dir, "dag")

        # the comparison table: one row per strategy, the counts the text explains
        table = page.locator(".jp-OutputArea-output .mwp-result").filter(
            has=page.locator('th:text-is("reassignments")')
        )
        expect(table).to_have_count(1)
        table.scroll_into_view_if_needed()
        expect(table).to_be_visible()
        rows = table.locator("tr:has(td)")
        expect(rows).to_have_count(2)
        shown = {cells[0]: cells[1:] for cells in (_cells(rows.nth(i)) for i in range(2))}
        assert set(shown) == {"built-in", "least-done"}
        assert shown["built-in"][1:] == ["0", "0"]  # declines, reassignments
        assert shown["least-done"][1:] == ["1", "1"]
        assert shown["built-in"][0] != shown["least-done"][0]  # cycle times differ
        # and its chart, a PNG drawn right below it
        chart = (
            page.locator(".jp-Cell", has=table)
            .locator("xpath=following-sibling::div[contains(@class, 'jp-Cell')][1]")
            .locator(".jp-OutputArea-output img")
        )
        expect(chart).to_be_visible()
        assert chart.evaluate("img => img.complete && img.naturalWidth > 0")
        shoot(page, table, output_dir, "comparison")
        chart.scroll_into_view_if_needed()
        chart.screenshot(path=str(output_dir / "comparison-chart.png"))
    finally:
        page.close()
