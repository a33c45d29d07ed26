"""Every MWP-WRK requirement is shown in the notebooks, once accepted and once rejected, and
named in the text of each notebook that shows it. Gaps would be listed in ``KNOWN_GAPS`` (as
expected failures naming what is missing), never faked."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
ALL_IDS = [f"MWP-WRK-{n:03d}" for n in range(1, 32)]
_CALL = re.compile(
    r"\.(accept|refuse)\(\s*'(MWP-WRK-\d{3})'|show\(\s*'(MWP-WRK-\d{3})',\s*'(accepted|rejected)'"
)

#: What the notebooks do not show yet, and why (update this when a notebook closes a gap).
KNOWN_GAPS: dict[str, str] = {}

#: Requirements a notebook must show, both ways, with the objects named (its code cells that
#: show the requirement use at least one of them): delivery on the real bus and its frames.
SHOWN_WITH: dict[str, dict[str, tuple[str, ...]]] = {
    "07_delivery_replay_and_snapshots.ipynb": {
        "MWP-WRK-029": ("frames.event(", "db.new_bus(", "tape."),
        "MWP-WRK-030": ("bus.", "frames.", "restorations"),
    },
}


def _shown() -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[str]]]:
    """Per ID: the verdicts shown in code, the notebooks whose code shows it, and the notebooks
    whose text names it."""
    verdicts: dict[str, set[str]] = {}
    shown_in: dict[str, set[str]] = {}
    named: dict[str, set[str]] = {}
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                for found in re.findall(r"MWP-WRK-\d{3}", cell.source):
                    named.setdefault(found, set()).add(path.name)
                continue
            for method, req, show_req, verdict in _CALL.findall(cell.source):
                shown_in.setdefault(req or show_req, set()).add(path.name)
                if method:
                    verdicts.setdefault(req, set()).add(
                        "accepted" if method == "accept" else "rejected"
                    )
                else:
                    verdicts.setdefault(show_req, set()).add(verdict)
    return verdicts, shown_in, named


def test_every_requirement_shown_in_a_notebook_is_named_in_its_text() -> None:
    _, shown_in, named = _shown()
    unnamed = {req: sorted(books - named.get(req, set())) for req, books in shown_in.items()}
    assert {req: books for req, books in unnamed.items() if books} == {}


@pytest.mark.parametrize("req", ALL_IDS)
def test_the_requirement_is_shown_accepted_and_rejected(req: str) -> None:
    verdicts, _, _ = _shown()
    complete = verdicts.get(req, set()) == {"accepted", "rejected"}
    if req in KNOWN_GAPS:
        assert not complete, f"{req} is covered now: remove it from KNOWN_GAPS"
        pytest.xfail(f"not yet shown: {KNOWN_GAPS[req]} (seen: {sorted(verdicts.get(req, ()))})")
    assert complete, f"{req} shown only {sorted(verdicts.get(req, ()))}"


@pytest.mark.parametrize(("name", "req"), [(n, r) for n, reqs in SHOWN_WITH.items() for r in reqs])
def test_the_notebook_shows_the_requirement_with_the_real_objects(name: str, req: str) -> None:
    notebook = nbformat.read(NOTEBOOKS[0].parent / name, as_version=4)
    verdicts: set[str] = set()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for _method, _req, show_req, verdict in _CALL.findall(cell.source):
            if show_req == req and any(o in cell.source for o in SHOWN_WITH[name][req]):
                verdicts.add(verdict)
    assert verdicts == {"accepted", "rejected"}, verdicts


def test_no_notebook_is_left_with_todo_text() -> None:
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        assert not [c for c in notebook.cells if "TODO" in c.source], path.name
