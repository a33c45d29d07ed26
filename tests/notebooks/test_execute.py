"""Every notebook under notebooks/ runs top to bottom in a real kernel without an error, shows
no raw reprs, and its ``jupyter nbconvert --to html`` export holds every drawing.

A widget's output is only a reference to a model in the kernel; what a saved notebook or an
HTML export can show is the static copy each widget displays right after itself. So for every
widget view the next output must be that copy, holding a drawing (SVG or a table), and the
export must contain each copy. The quickstart's copies are also checked against a run of the
same mission file made here, from its own Events.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

#: The slow tier: each notebook starts a kernel and runs every cell.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET = "application/vnd.jupyter.widget-view+json"
#: How the repr of a value looks when nothing draws it.
RAW = re.compile(r"^(RunSummary\(|RestartReport\(|StepReport\(|pyarrow\.Table|MonthDayNano)")


def _execute(path: Path, tmp_path: Path) -> Any:
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    nbformat.write(notebook, tmp_path / path.name)  # the executed copy, for inspection
    return notebook


class _Drawings(HTMLParser):
    """What each static copy (``div.mwp-static``) of a page draws, in page order."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, Any]] = []
        self.depth = 0  # inside a static copy: how many open <div>s deep

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if self.depth == 0:
            if tag == "div" and "mwp-static" in classes:
                self.found.append({"view": attributes.get("data-view"), "svg": 0, "node": 0,
                                   "edge": 0, "tr": 0, "ids": []})  # fmt: skip
                self.depth = 1
            return
        if tag == "div":
            self.depth += 1
        drawing = self.found[-1]
        if tag == "svg":
            drawing["svg"] += 1
        elif tag == "tr":
            drawing["tr"] += 1
        elif tag == "g" and ("node" in classes or "edge" in classes):
            drawing["node" if "node" in classes else "edge"] += 1
        if attributes.get("data-id"):
            drawing["ids"].append(attributes["data-id"])

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag == "div":
            self.depth -= 1


def _drawings(html: str) -> list[dict[str, Any]]:
    parser = _Drawings()
    parser.feed(html)
    return parser.found


def _static_copies(notebook: Any) -> list[tuple[str, str]]:
    """``(widget model ID, the HTML output right after it)`` for every widget view."""
    pairs = []
    for cell in notebook.cells:
        outputs = cell.get("outputs", [])
        for i, output in enumerate(outputs):
            if WIDGET in output.get("data", {}):
                following = outputs[i + 1] if i + 1 < len(outputs) else {}
                html = following.get("data", {}).get("text/html", "")
                pairs.append((output["data"][WIDGET]["model_id"], "".join(html)))
    return pairs


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_the_notebook_runs_and_its_html_export_holds_every_drawing(
    path: Path, tmp_path: Path
) -> None:
    notebook = _execute(path, tmp_path)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            assert output.get("output_type") != "error", output
            plain = "".join(output.get("data", {}).get("text/plain", ""))
            assert not (RAW.match(plain) and "text/html" not in output.get("data", {})), plain
    copies = _static_copies(notebook)
    for model, html in copies:
        assert 'class="mwp mwp-static"' in html, f"widget {model} has no static copy after it"
        assert "<svg" in html or "<table" in html, f"widget {model}'s copy draws nothing"
    executed = tmp_path / path.name
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(executed)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    exported = _drawings(executed.with_suffix(".html").read_text())
    # nbconvert re-serializes HTML (attribute order, case), so compare what is drawn: per
    # static copy, its view and how many SVGs, boxes, edges and table rows it holds
    assert exported == [d for _, html in copies for d in _drawings(html)]


def test_the_quickstart_saves_the_steps_and_artifacts_of_its_own_run(tmp_path: Path) -> None:
    from mwp_local.drivers.sandbox import Sandbox
    from mwp_local.protocol.jsontext import parse_strict

    notebook = _execute(ROOT / "notebooks" / "01_quickstart.ipynb", tmp_path)
    copies = {m: h for m, h in _static_copies(notebook)}
    views = {re.search(r'data-view="([^"]+)"', h).group(1): h for h in copies.values()}  # type: ignore[union-attr]
    assert set(views) >= {"stepper", "mission-graph", "provenance", "sql-console", "time-travel"}
    # the same mission file and seed, run here: its Events are what the notebook's `done` wrote
    done = Sandbox(tmp_path / "done", ROOT / "sample_missions" / "learn.toml", seed=1)
    done.run()
    events = [parse_strict(e.document) for e in done.log.store.events()]
    done.close()
    steppers = [h for h in copies.values() if 'data-view="stepper"' in h]
    finished = steppers[-1]  # the Stepper that ran `done` to the end
    steps = len(done.history)
    assert sorted(int(n) for n in re.findall(r'<tr data-id="(\d+)"', finished)) == list(
        range(1, steps + 1)
    )
    artifacts = {e["payload"]["artifact"]["contentHash"] for e in events
                 if e["kind"] == "artifact.published"}  # fmt: skip
    drawn = set(re.findall(r'data-id="(sha256:[0-9a-f]{64})"', views["provenance"]))
    assert drawn == artifacts and len(artifacts) == 3
    # the first Stepper saw every step since the start, the one before it was made included
    first = steppers[0]
    assert 'data-id="1"' in first and "mission.create" in first
