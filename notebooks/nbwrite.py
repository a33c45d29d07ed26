"""Writes a generated notebook: glossary links, stable cell IDs, the Python 3 kernelspec.

Each ``make_*.py`` generator builds its cells and hands them here, so
regenerating a notebook gives a clean diff (cell IDs are ``<prefix>-001``, ``<prefix>-002``, ...).
"""

from pathlib import Path

import nbformat as nbf

import glossary


def write(path: Path, cells: list, prefix: str) -> None:
    """Link ``cells``' terms to the glossary, number them and write the notebook to ``path``."""
    glossary.link_cells(cells)
    for n, cell in enumerate(cells, 1):
        cell["id"] = f"{prefix}-{n:03d}"  # stable IDs: regenerating gives a clean diff
    nb = nbf.v4.new_notebook(
        cells=cells,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbf.write(nb, path)
