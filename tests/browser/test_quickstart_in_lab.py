"""The quickstart in a real JupyterLab and Chromium: run it, then use its widgets by clicking.

One page runs the notebook (module scope); each test then uses one widget, waits on
Playwright's auto-waiting assertions (no sleeps) and saves screenshots under
``test-output/<test>/``. What the page shows is read from the DOM as the browser drew it
(computed colours, SVG geometry), not from the code that built it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import Lab, run_all
from .measure import CONTRAST_JS, GRAPH_JS

pytestmark = pytest.mark.browser

#: A generous bound for the whole notebook to run on a busy 2-core machine.
RUN_ALL_MS = 180_000
#: WCAG AA for normal text.
CONTRAST = 4.5
THEMES = ("JupyterLab Dark", "JupyterLab Dark High Contrast", "JupyterLab Light")


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
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(lab.notebook_url("01_quickstart.ipynb"))
    # the last cell's widget appears once every cell above it has run
    run_all(page, ".mwp-time-travel", RUN_ALL_MS)
    assert errors == [], errors  # no uncaught error in the page either
    yield page
    page.close()


def _stepper(page: Any) -> Any:
    return page.locator(".mwp-stepper").first


def _show(stepper: Any, number: int) -> None:
    """Wait until the Stepper shows step ``number``."""
    from playwright.sync_api import expect

    expect(stepper.locator(".mwp-step .mwp-step-head")).to_contain_text(f"Step {number} ")


def test_the_stepper_lists_every_step_since_the_start_and_steps_back_and_forth(
    quickstart: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    stepper = _stepper(quickstart)
    # beside each live widget its static copy (for saved notebooks) is in the page, hidden
    copies = quickstart.locator(".jp-OutputArea-output .mwp-static")
    assert copies.count() >= 6
    assert all(not copies.nth(i).is_visible() for i in range(copies.count()))
    rows = stepper.locator(".mwp-step-history tr[data-id]")
    count = rows.count()
    assert count >= 7  # the refusal cell stepped until a Worker held a lease
    numbers = [int(rows.nth(i).get_attribute("data-id") or 0) for i in range(count)]
    assert numbers == list(range(1, count + 1))  # from step 1, made before the Stepper existed
    expect(stepper.locator(".mwp-position")).to_contain_text(f"Step {count} of {count}")
    rows.first.click()
    _show(stepper, 1)
    expect(stepper.locator(".mwp-step")).to_contain_text("mission.create")
    expect(stepper.locator(".mwp-step")).to_contain_text("Why:")
    expect(stepper.get_by_role("button", name="◀ back")).to_be_disabled()
    stepper.get_by_role("button", name="forward ▶").click()
    _show(stepper, 2)
    shoot(quickstart, stepper, output_dir, "history-step-2")
    stepper.get_by_role("button", name="next").click()
    _show(stepper, count + 1)
    expect(rows).to_have_count(count + 1)
    expect(stepper.locator("svg g.state")).to_have_count(11)
    shoot(quickstart, stepper, output_dir, "stepper")


def test_every_before_and_after_of_the_quickstart_compares_one_entity(
    quickstart: Any, output_dir: Path
) -> None:
    stepper = _stepper(quickstart)
    rows = stepper.locator(".mwp-step-history tr[data-id]")
    while rows.count() < 25:  # step on, past every WorkItem's first steps
        before = rows.count()
        stepper.get_by_role("button", name="next").click()
        _show(stepper, before + 1)
    rows.first.click()
    _show(stepper, 1)
    created = []
    for number in range(1, rows.count() + 1):
        if number > 1:
            stepper.get_by_role("button", name="forward ▶").click()
            _show(stepper, number)
        kind = stepper.locator(".mwp-step .mwp-step-head code").nth(1).text_content()
        diff = stepper.locator(".mwp-step table.mwp-diff tr")
        entity = diff.nth(1)
        name = entity.locator("th").text_content()
        before, after = (entity.locator("td").nth(i).text_content() for i in (0, 1))
        assert name in ("WorkItem", "Mission"), (number, name)
        assert before in (after, "did not exist"), (number, kind, before, after)
        if kind == "work.authorize":
            assert (name, before) == ("WorkItem", "did not exist"), number
            created.append(after)
            if len(created) == 1:
                shoot(quickstart, stepper, output_dir, f"step-{number}-work-authorize")
    assert len(created) == 3 == len(set(created))  # learn.toml's three WorkItems


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


def test_provenance_edges_have_arrowheads_and_no_edge_crosses_a_box(
    quickstart: Any, output_dir: Path
) -> None:
    graph = quickstart.locator(".mwp-provenance .mwp-clickable").first
    drawn = graph.evaluate(GRAPH_JS)
    boxes, edges = drawn["boxes"], drawn["edges"]
    assert len([b for b in boxes if b.startswith("urn:mwp-local:work:")]) == 3
    assert len([b for b in boxes if b.startswith("sha256:")]) == 3 and len(edges) == 8
    inside = []
    for edge in edges:
        assert edge["head"] is not None and edge["headFill"] not in (None, "none")
        x, y, w, h = edge["head"]
        tx, ty, _, th = boxes[edge["to"]]
        assert abs((x + w) - tx) < 1.5 and ty <= y + h / 2 <= ty + th, edge  # tip at its target
        for px, py in edge["samples"]:
            for node, (bx, by, bw, bh) in boxes.items():
                if bx + 1.5 < px < bx + bw - 1.5 and by + 1.5 < py < by + bh - 1.5:
                    inside.append((edge["from"], edge["to"], node, px, py))
    assert inside == []
    (output_dir / "edges.json").write_text(json.dumps(drawn, indent=1))
    shoot(quickstart, graph, output_dir, "provenance-edges")


def test_the_provenance_graph_zooms_and_pans(quickstart: Any, output_dir: Path) -> None:
    from playwright.sync_api import expect

    graph = quickstart.locator(".mwp-provenance .mwp-clickable").first
    graph.get_by_role("button", name="1:1").click()
    expect(graph).to_have_attribute("data-zoom", "1.000")
    graph.get_by_role("button", name="+").click()
    expect(graph).to_have_attribute("data-zoom", "1.250")
    stage = graph.locator(".mwp-stage")
    before = stage.evaluate("s => s.style.transform")
    box = graph.locator(".mwp-viewport").bounding_box()
    quickstart.mouse.move(box["x"] + 40, box["y"] + box["height"] - 10)
    quickstart.mouse.down()
    quickstart.mouse.move(box["x"] + 140, box["y"] + box["height"] - 30, steps=5)
    quickstart.mouse.up()
    assert stage.evaluate("s => s.style.transform") != before  # panned
    shoot(quickstart, graph, output_dir, "zoomed")
    graph.get_by_role("button", name="fit").click()
    zoom = float(graph.get_attribute("data-zoom") or 0)
    assert 0 < zoom <= 1
    graph.get_by_role("button", name="1:1").click()


def test_the_sql_console_shows_the_refusal_and_runs_a_query(
    quickstart: Any, output_dir: Path
) -> None:
    from playwright.sync_api import expect

    console = quickstart.locator(".mwp-sql-console").first
    result = console.locator(".mwp-sql-result table")
    expect(result).to_contain_text("WORK_LEASE_EXPIRED")  # the refusal sent to `sb`
    console.locator(".mwp-sql-query textarea").fill(
        "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind"
    )
    console.get_by_role("button", name="run").click()
    expect(result).to_contain_text("work.offer.accepted")
    expect(result.locator("tr").first).to_contain_text("kind")
    console.locator(".mwp-sql-query textarea").fill("SELECT kindd FROM events")
    console.get_by_role("button", name="run").click()
    expect(console.locator(".mwp-error")).to_contain_text('Referenced column "kindd" not found')
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


def _theme(page: Any, name: str) -> None:
    page.evaluate(
        f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: {json.dumps(name)}}})"
    )
    page.wait_for_function(
        "(name) => document.body.dataset.jpThemeName === name", arg=name, timeout=30_000
    )
    # the theme's stylesheet is in once its variables are
    page.wait_for_function(
        "(light) => getComputedStyle(document.body).getPropertyValue('--jp-layout-color0')"
        ".trim() !== '' && document.body.dataset.jpThemeLight === light",
        arg="true" if "Light" in name else "false",
        timeout=30_000,
    )


def test_text_in_the_stepper_and_the_tables_has_contrast_in_every_theme(
    quickstart: Any, output_dir: Path
) -> None:
    measured: dict[str, Any] = {}
    stepper = _stepper(quickstart)
    stepper.locator(".mwp-step-history tr[data-id]").nth(1).click()  # a work.authorize: a diff
    _show(stepper, 2)
    try:
        for theme in THEMES:
            _theme(quickstart, theme)
            texts = quickstart.evaluate(
                CONTRAST_JS, [".mwp-stepper", ".jp-OutputArea-output table"]
            )
            low = [t for t in texts if t["ratio"] < CONTRAST]
            measured[theme] = {
                "texts": len(texts),
                "lowest": min(t["ratio"] for t in texts),
                "below": low,
            }
            slug = re.sub(r"\W+", "-", theme.lower())
            shoot(quickstart, stepper, output_dir, f"stepper-{slug}")
            table = quickstart.locator(".jp-OutputArea-output .mwp-result table").first
            shoot(quickstart, table, output_dir, f"table-{slug}")
    finally:
        _theme(quickstart, "JupyterLab Light")
        (output_dir / "contrast.json").write_text(json.dumps(measured, indent=1))
    for theme, found in measured.items():
        assert found["texts"] > 100, theme  # the Stepper's history, step, machine, tables
        assert found["below"] == [], theme


def test_a_term_links_to_its_glossary_entry(quickstart: Any, output_dir: Path) -> None:
    from playwright.sync_api import expect

    # JupyterLab resolves the relative link to /files/tutorials/glossary.md?_xsrf=…#ownership-epoch
    link = quickstart.locator(
        ".jp-RenderedMarkdown a[href*='/tutorials/glossary.md'][href$='#ownership-epoch']"
    )
    expect(link).to_have_count(1)  # linked once: where the quickstart first uses it
    link.scroll_into_view_if_needed()
    link.click()
    tab = quickstart.locator(".lm-TabBar-tab", has_text="glossary.md")
    expect(tab).to_be_visible()
    entry = quickstart.locator(".jp-MainAreaWidget:visible h2", has_text="Ownership Epoch")
    expect(entry).to_be_in_viewport()  # scrolled to the entry
    expect(quickstart.locator(".jp-MainAreaWidget:visible")).to_contain_text(
        "A counter on each WorkItem that goes up every time a new owner wins it"
    )
    quickstart.screenshot(path=str(output_dir / "glossary.png"))
    quickstart.locator(".lm-TabBar-tab", has_text="01_quickstart.ipynb").click()
