"""The quickstart in a real JupyterLab and Chromium: run it, then use its widgets by clicking.

One page runs the notebook (module scope); each test then clicks one widget, waits on
Playwright's auto-waiting assertions (no sleeps) and saves a screenshot under
``test-output/<test>/``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Lab

pytestmark = pytest.mark.browser

#: A generous bound for the whole notebook to run on a busy 2-core machine.
RUN_ALL_MS = 180_000


def shoot(page: Any, target: Any, folder: Path, name: str) -> None:
    """Screenshots of ``target``'s notebook cell (the widget as drawn) and of the whole page."""
    from playwright.sync_api import expect

    cell = page.locator(".jp-Cell", has=target).first
    cell.scroll_into_view_if_needed()
    expect(cell).to_be_visible()
    cell.screenshot(path=str(folder / f"{name}.png"))
    page.screenshot(path=str(folder / f"{name}-page.png"))


@pytest.fixture(scope="module")
def quickstart(lab: Lab, browser_context: Any) -> Iterator[Any]:
    """The quickstart opened in JupyterLab and run to its last cell."""
    from playwright.sync_api import expect

    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(lab.notebook_url("01_quickstart.ipynb"))
    page.wait_for_function(
        "() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.sessionContext && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return k && k.status === 'idle'; }",
        timeout=120_000,
    )
    page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
    # the last cell's widget appears once every cell above it has run
    expect(page.locator(".mwp-time-travel")).to_be_visible(timeout=RUN_ALL_MS)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status"
        " === 'idle'",
        timeout=RUN_ALL_MS,
    )
    tracebacks = page.locator(".jp-OutputArea-output", has_text="Traceback")
    assert tracebacks.count() == 0, tracebacks.first.text_content()
    assert errors == [], errors  # no uncaught error in the page either
    yield page
    page.close()


def test_clicking_next_in_the_stepper_shows_the_next_event(
    quickstart: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    stepper = quickstart.locator(".mwp-stepper").first
    step = stepper.locator(".mwp-step")
    expect(step).to_contain_text("ACCEPTED")
    text = step.text_content() or ""
    found = re.search(r"Step (\d+)", text)
    assert found, text
    number = int(found.group(1))
    stepper.get_by_role("button", name="next").click()
    expect(step).to_contain_text(f"Step {number + 1} ")
    expect(stepper.locator("svg g.state")).to_have_count(11)
    shoot(quickstart, stepper, output_dir, "stepper")


def test_clicking_a_provenance_node_shows_its_manifest(quickstart: Any, output_dir: Path) -> None:
    from playwright.sync_api import expect

    graph = quickstart.locator(".mwp-provenance").first
    node = graph.locator("g.node[data-id^='sha256:']").first
    expect(node).to_be_visible()
    digest = node.get_attribute("data-id")
    node.click()
    inspector = graph.locator(".mwp-inspector")
    expect(inspector).to_contain_text("signed manifest")
    expect(inspector).to_contain_text(f'"contentHash": "{digest}"')
    expect(inspector).to_contain_text("hash check: content re-hashed")
    shoot(quickstart, graph, output_dir, "provenance")


def test_running_a_query_in_the_sql_console_shows_the_table(
    quickstart: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    console = quickstart.locator(".mwp-sql-console").first
    console.locator(".mwp-sql-query textarea").fill(
        "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind"
    )  # the console's parameter box still holds item=…, which this query does not name
    console.get_by_role("button", name="run").click()
    result = console.locator(".mwp-sql-result table")
    expect(result).to_contain_text("work.offer.accepted")
    expect(result.locator("tr").first).to_contain_text("kind")
    shoot(quickstart, console, output_dir, "sql_console")


def test_the_refused_command_shows_its_code_explanation_and_rule(
    quickstart: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    refusal = quickstart.locator(".jp-OutputArea-output", has_text="REJECTED WORK_LEASE_EXPIRED")
    expect(refusal).to_have_count(1)
    expect(refusal).to_contain_text("rule: §11.3")
    expect(refusal).to_contain_text("which is not the current lease")
    shoot(quickstart, refusal, output_dir, "refusal")
