"""Notebook 09 (issue 22 point 6): a Mission prototyped in Python, two strategies compared.

The comparison table the notebook shows is checked against this test's own fold of the two
logs' signed Events (``log_events.document``, parsed here), never against the views the
notebook's query reads; and the notebook uses only what a user has: the package root, the
documented ``mwp_local.notebook`` widgets and charts, the standard library and DuckDB.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "09_prototype_your_own_mission.ipynb"
#: The Worker's structured decline (§10.3) is a Message with a data part of this schema.
DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"
#: What the notebook may import: the public API, documented notebook modules, and the rest.
ALLOWED = re.compile(r"^(mwp_local|mwp_local\.notebook(\.\w+)?|duckdb|tempfile|pathlib|json)$")


def _code_cells() -> list[str]:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    return [c.source for c in notebook.cells if c.cell_type == "code"]


def test_the_notebook_uses_only_the_public_api() -> None:
    imported = []
    for source in _code_cells():
        if source.startswith("%%"):  # a cell magic's body is not Python (SQL here)
            continue
        python = "\n".join(line for line in source.splitlines() if not line.startswith("%"))
        for node in ast.walk(ast.parse(python)):
            if isinstance(node, ast.Import):
                imported += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                imported.append(node.module or "")
    assert imported and all(ALLOWED.match(name) for name in imported), imported
    assert "bench" not in " ".join(_code_cells())


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def fold(log: Path) -> dict[str, Any]:
    """Cycle time, declines and reassignments of one log, from its signed Events alone."""
    with duckdb.connect(str(log), read_only=True) as con:
        documents = [r[0] for r in con.sql("SELECT document FROM log_events ORDER BY position")
                     .fetchall()]  # fmt: skip
    events = [json.loads(d) for d in documents]
    created = next(_at(e["occurredAt"]) for e in events if e["kind"] == "mission.created")
    approved = next(_at(e["occurredAt"]) for e in events if e["kind"] == "mission.approved")
    offered_to = {  # offer ID -> the Worker it was made to
        o["offerId"]: o["agentId"]
        for e in events
        if e["kind"] == "work.offer.created"
        for o in e["payload"]["offers"]
    }
    declines = sum(
        1
        for e in events
        if e["kind"] == "message.posted"
        for part in e["payload"]["message"]["content"]
        if part.get("type") == "data_ref"
        and part.get("schema") == DECLINE_SCHEMA
        and offered_to.get(part["data"]["offerId"]) == e["payload"]["message"]["author"]["id"]
    )
    accepted = Counter(
        e["payload"]["workItemId"] for e in events if e["kind"] == "work.offer.accepted"
    )
    return {
        "cycle_time": approved - created,
        "declines": declines,
        "reassignments": sum(n - 1 for n in accepted.values()),
    }


@pytest.mark.slow
def test_the_comparison_table_is_what_the_two_logs_say(tmp_path: Path) -> None:
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    # one cell more, run after the notebook's own: what the table shows and where the logs are
    notebook.cells.append(nbformat.v4.new_code_cell(
        "import json as _json\n"
        "def _seconds(v):  # an INTERVAL as Arrow gives it (MonthDayNano)\n"
        "    assert v.months == 0\n"
        "    return v.days * 86400 + v.nanoseconds / 1e9\n"
        "print(_json.dumps({'logs': {k: str(v) for k, v in logs.items()},\n"
        "                   'scratch': [str(sb.directory), *(str(v.parent) for v in logs.values())],\n"
        "                   'rows': [{**r, 'cycle_time': _seconds(r['cycle_time'])}\n"
        "                            for r in comparison.to_pylist()]}))"
    ))  # fmt: skip
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK.parent)}},
    ).execute()
    shown = json.loads(notebook.cells[-1].outputs[-1]["text"])
    try:
        rows = {r["strategy"]: r for r in shown["rows"]}
        assert set(rows) == {"built-in", "least-done"}
        for strategy, log in (("built-in", "builtin"), ("least-done", "least_done")):
            truth = fold(Path(shown["logs"][log]))
            assert rows[strategy]["cycle_time"] == truth["cycle_time"].total_seconds()
            assert rows[strategy]["declines"] == truth["declines"]
            assert rows[strategy]["reassignments"] == truth["reassignments"]
        # the strategies differ for the reason the text gives: bob's pause and his decline
        assert (rows["built-in"]["declines"], rows["built-in"]["reassignments"]) == (0, 0)
        assert (rows["least-done"]["declines"], rows["least-done"]["reassignments"]) == (1, 1)
        lost = rows["least-done"]["cycle_time"] - rows["built-in"]["cycle_time"]
        assert lost == timedelta(minutes=10).total_seconds()  # "ten minutes lost"
        text = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        assert "ten minutes lost" in text and "one decline" in text
    finally:
        for scratch in shown["scratch"]:  # the notebook's sandboxes (each in a mkdtemp)
            shutil.rmtree(Path(scratch).parent, ignore_errors=True)
