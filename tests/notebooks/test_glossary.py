"""Every term of ``tutorials/glossary.md`` is linked to its entry where a notebook or a lesson
first uses it, and every glossary link lands on an entry."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "tutorials" / "glossary.md"
DOCUMENTS = [
    *sorted((ROOT / "notebooks").glob("*.ipynb")),
    *sorted(p for p in (ROOT / "tutorials").glob("*.md") if p != GLOSSARY),
]
_LINK = re.compile(r"\[([^\]\n]*)\]\(([^)\s]*)\)")
_SKIP = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]+>|^#{1,6} [^\n]*$", re.DOTALL | re.MULTILINE)


def _patterns() -> dict[str, str]:
    sys.path.insert(0, str(ROOT / "notebooks"))
    try:
        import glossary  # the generators' term list (data); the checking below is this test's
    finally:
        sys.path.pop(0)
    return glossary.terms()


def _anchors() -> set[str]:
    """The entries' anchors: each heading's slug, written as an explicit ``<a id>`` before it
    (JupyterLab's own heading IDs keep the case and spaces of the text)."""
    text = GLOSSARY.read_text()
    headings = re.findall(r"^## (.+)$", text, flags=re.MULTILINE)
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}
    explicit = set(re.findall(r'^<a id="([a-z0-9-]+)"></a>\n\n## ', text, flags=re.MULTILINE))
    assert explicit == slugs
    return slugs


def _text(path: Path) -> str:
    if path.suffix == ".ipynb":
        cells = nbformat.read(path, as_version=4).cells
        return "\n\n".join(c.source for c in cells if c.cell_type == "markdown")
    return path.read_text()


def _plain(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The text without code, HTML and headings, links replaced by their text; and the span
    and target of each link in it."""
    text = _SKIP.sub(" ", text)
    out, spans, last = [], [], 0
    for link in _LINK.finditer(text):
        out.append(text[last : link.start()])
        start = sum(len(p) for p in out)
        out.append(link.group(1))
        spans.append((start, start + len(link.group(1)), link.group(2)))
        last = link.end()
    out.append(text[last:])
    return "".join(out), spans


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_each_term_is_linked_to_the_glossary_where_it_is_first_used(path: Path) -> None:
    plain, links = _plain(_text(path))
    patterns = _patterns()
    # a longer term owns its words ("Execution Lease" is not a use of "Lease ID")
    taken: list[tuple[int, int]] = []
    unlinked = []
    for term, pattern in patterns.items():
        other = [(a, b) for a, b, t in links if "glossary.md" not in t]  # another link's text
        first = next(
            (m for m in re.finditer(pattern, plain)
             if not any(a <= m.start() < b for a, b in taken + other)),
            None,
        )  # fmt: skip
        if first is None:
            continue
        taken += [(m.start(), m.end()) for m in re.finditer(pattern, plain)]
        slug = re.sub(r"[^\w\- ]", "", term.lower()).replace(" ", "-")
        inside = [t for a, b, t in links if a <= first.start() < b]
        if not inside or not inside[0].endswith(f"glossary.md#{slug}"):
            unlinked.append((term, plain[max(first.start() - 30, 0) : first.end() + 10]))
    assert unlinked == []


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_every_glossary_link_lands_on_an_entry(path: Path) -> None:
    anchors = _anchors()
    for _, target in _LINK.findall(_text(path)):
        if "glossary.md" in target:
            file, _, anchor = target.partition("#")
            assert (path.parent / file).resolve() == GLOSSARY, target
            assert not anchor or anchor in anchors, target


def test_the_terms_the_issue_names_are_explained_in_the_quickstart_and_lesson_1() -> None:
    for path in (
        ROOT / "notebooks" / "01_quickstart.ipynb",
        ROOT / "tutorials" / "01_first_steps.md",
    ):
        text = _text(path)
        for term, anchor in (("Ownership Epoch", "ownership-epoch"),
                             ("Execution Lease", "execution-lease"),
                             ("§10.2", "section-numbers"), ("MWP-WRK-013", "requirement-ids")):  # fmt: skip
            assert re.search(rf"\[{re.escape(term)}s?\]\([^)]*glossary\.md#{anchor}\)", text), (
                path.name,
                term,
            )
