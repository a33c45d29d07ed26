"""A saved, executed notebook reopened in JupyterLab, after its kernel is gone: every drawing is
still there.

The quickstart runs in a real JupyterLab, the Stepper is clicked once, the notebook is saved and
its kernel shut down; a fresh page opens the saved file. No widget model survives (JupyterLab
says so where each widget was); each widget's static copy is drawn in its place, showing the
state the widget was last in. The count of copies comes from the saved file itself.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from .conftest import Lab, run_all, wait_idle

pytestmark = pytest.mark.browser

RUN_ALL_MS = 180_000
NAME = "saved_quickstart.ipynb"
WIDGET = "application/vnd.jupyter.widget-view+json"


def _saved_widgets(path: Path) -> int:
    notebook = json.loads(path.read_text())
    return sum(
        WIDGET in output.get("data", {})
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
    )


def _wait_saved(path: Path, needle: str, deadline_s: float = 60.0) -> None:
    """Wait until the file on disk holds ``needle`` (the save is asynchronous)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if needle in path.read_text():
            return
        time.sleep(0.2)  # poll interval, bounded by the deadline
    raise AssertionError(f"{path.name} was not saved with {needle!r} in {deadline_s} s")


def _shut_down_kernels(lab: Lab) -> None:
    api = f"{lab.url}/api/sessions?token={lab.token}"
    with urllib.request.urlopen(api, timeout=10) as response:
        sessions = json.loads(response.read())
    for session in sessions:
        request = urllib.request.Request(
            f"{lab.url}/api/sessions/{session['id']}?token={lab.token}", method="DELETE"
        )
        urllib.request.urlopen(request, timeout=30).close()


def test_a_saved_notebook_reopens_with_every_drawing_rendered(
    lab: Lab, browser_context: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    path = lab.root / "notebooks" / NAME
    shutil.copy(lab.root / "notebooks" / "01_quickstart.ipynb", path)
    page = browser_context.new_page()
    page.goto(lab.notebook_url(NAME))
    run_all(page, ".mwp-time-travel", RUN_ALL_MS)
    stepper = page.locator(".mwp-stepper").first
    rows = stepper.locator(".mwp-step-history tr[data-id]").count()
    stepper.get_by_role("button", name="next").click()
    expect(stepper.locator(".mwp-step .mwp-step-head")).to_contain_text(f"Step {rows + 1} ")
    wait_idle(page, 60_000)
    page.evaluate("window.jupyterapp.commands.execute('docmanager:save')")
    _wait_saved(path, f"<b>Step {rows + 1}</b>")  # the copy after the click is in the file
    page.close()
    _shut_down_kernels(lab)
    expected = _saved_widgets(path)
    assert expected >= 6  # Stepper x2, Mission DAG, console, provenance, TimeTravel

    page = browser_context.new_page()
    page.goto(lab.notebook_url(NAME))
    copies = page.locator(".jp-OutputArea-output .mwp-static")
    expect(copies).to_have_count(expected, timeout=120_000)
    expect(page.locator(".mwp-live")).to_have_count(0)  # no live widget came back
    missing = page.locator(".jp-OutputArea-output", has_text="model not found")
    views = set()
    for i in range(expected):
        copy = copies.nth(i)
        copy.scroll_into_view_if_needed()
        expect(copy).to_be_visible()
        assert copy.locator("svg, table").count() > 0, copy.get_attribute("data-view")
        views.add(copy.get_attribute("data-view"))
    assert views == {"stepper", "mission-graph", "sql-console", "provenance", "time-travel"}
    first = copies.first
    expect(first).to_contain_text(f"Step {rows + 1} of {rows + 1}")  # as it was last clicked
    provenance = page.locator(".mwp-static[data-view='provenance']")
    expect(provenance.locator("g.node")).to_have_count(7)
    expect(provenance.locator("g.edge path.arrowhead")).to_have_count(8)
    for name, target in (("stepper", first), ("provenance", provenance)):
        page.locator(".jp-Cell", has=target).first.screenshot(path=str(output_dir / f"{name}.png"))
    page.screenshot(path=str(output_dir / "page.png"))
    (output_dir / "missing-models.txt").write_text(
        f"{missing.count()} outputs say 'model not found'; {expected} static copies drawn\n"
    )
    page.close()
