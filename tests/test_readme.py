"""The README stays true: its SQL view table is the one the code documents, and it opens with
the two set-up commands."""

from __future__ import annotations

from pathlib import Path

from mwp_local.store.views import render_markdown

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def test_the_readme_lists_every_documented_view_exactly_as_the_code_does() -> None:
    assert render_markdown() in README


def test_the_readme_opens_with_the_two_set_up_commands() -> None:
    head = README[: README.index("## ")]
    assert "make demo" in head and "make test" in head
