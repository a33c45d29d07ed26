"""The committed notebooks are exactly what their generators write (``notebooks/make_*.py``).

Each generator runs in a scratch copy of ``notebooks/`` (they write beside themselves), and every
notebook it writes must equal the committed one cell for cell: type, ID, source and metadata,
and the notebook's own metadata. Outputs are not compared: the committed notebooks are saved
unexecuted, and the suite executes them (``test_execute``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
GENERATORS = sorted(NOTEBOOKS.glob("make_*.py"))


def _shape(path: Path) -> dict[str, Any]:
    nb = nbformat.read(path, as_version=4)
    return {
        "metadata": dict(nb.metadata),
        "cells": [
            {
                "type": c.cell_type,
                "id": c.get("id"),
                "source": c.source,
                "metadata": dict(c.metadata),
                "outputs": c.get("outputs", []),
            }
            for c in nb.cells
        ],
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scratch = tmp_path_factory.mktemp("notebooks") / "notebooks"
    shutil.copytree(NOTEBOOKS, scratch, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
    # the generators link terms to the glossary beside notebooks/ (notebooks/glossary.py)
    shutil.copytree(NOTEBOOKS.parent / "tutorials", scratch.parent / "tutorials")
    for generator in GENERATORS:
        subprocess.run([sys.executable, generator.name], cwd=scratch, check=True)
    return scratch


def test_every_committed_notebook_has_a_generator(generated: Path) -> None:
    assert sorted(p.name for p in generated.glob("*.ipynb")) == sorted(
        p.name for p in NOTEBOOKS.glob("*.ipynb")
    )


@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_the_committed_notebook_is_what_its_generator_writes(generated: Path, name: str) -> None:
    assert _shape(NOTEBOOKS / name) == _shape(generated / name), (
        f"notebooks/{name} differs from what notebooks/make_*.py writes: run the generator "
        "and commit both"
    )
