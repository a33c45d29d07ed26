"""The README and the pages under docs/ stay true: the README is short and opens with the two
set-up commands, its Python example runs, its command list is the command line's, every relative
link in README.md and docs/*.md leads to a file that exists (and to a heading that exists, when
it names one), and docs/sql.md holds the SQL view reference exactly as the code documents it."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest

from mwp_local.cli import SUBCOMMANDS
from mwp_local.store.views import render_markdown

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "benchmarks" / "README.md",
]

#: ``[text](target)``, the only link form these pages use.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = heading.strip().lower().replace("`", "")
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.MULTILINE)}


def _relative_links(path: Path) -> list[str]:
    return [
        target
        for target in LINK.findall(_prose(path.read_text(encoding="utf-8")))
        if not re.match(r"[a-z][a-z0-9+.-]*:", target)  # http:, https:, mailto:
    ]


def test_the_readme_is_at_most_200_lines() -> None:
    assert len(README.splitlines()) <= 200


def test_the_readme_opens_with_the_two_set_up_commands() -> None:
    head = README[: README.index("## ")]
    assert "make demo" in head and "make test" in head


def test_the_readme_names_the_notebook_and_the_tutorials_to_go_on_with() -> None:
    assert "jupyter lab notebooks/01_quickstart.ipynb" in README
    assert "(tutorials/README.md)" in README


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_an_existing_file_and_heading(page: Path) -> None:
    assert page.is_file()
    for target in _relative_links(page):
        file_part, _, anchor = target.partition("#")
        destination = (page.parent / file_part).resolve() if file_part else page
        assert destination.exists(), f"{page.name}: {target} does not exist"
        if anchor and destination.suffix == ".md":
            assert anchor in _anchors(destination), f"{page.name}: {target} names no heading"


def test_the_readme_links_every_docs_page() -> None:
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in _relative_links(ROOT / "README.md")}
    for page in (ROOT / "docs").glob("*.md"):
        assert page.resolve() in linked, f"README.md does not link {page.name}"


def test_the_readme_lists_each_command_of_the_command_line_once() -> None:
    block = README[README.index("## The command line") :]
    block = block[block.index("```text") : block.index("```\n", block.index("```text") + 7)]
    listed = [line.split()[1] for line in block.splitlines() if line.startswith("mwp-local ")]
    assert sorted(listed) == sorted(SUBCOMMANDS)


def test_the_readme_python_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    example = README[README.index("```python\n") + len("```python\n") :]
    example = example[: example.index("```")]
    monkeypatch.chdir(ROOT)  # it names sample_missions/ relative to the repository
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # its mkdtemp() lands here
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "README.md", "exec"), {})
    assert "Mission export-button: approved" in out.getvalue()


def test_docs_sql_lists_every_documented_view_exactly_as_the_code_does() -> None:
    assert render_markdown() in (ROOT / "docs" / "sql.md").read_text(encoding="utf-8")
