"""Links the first use of each glossary term in a notebook's or a lesson's text to its entry in
``tutorials/glossary.md``.

The terms are the glossary's ``##`` headings; "§10.2"-style section numbers link to "Section
numbers", "MWP-WRK-013"-style IDs to "Requirement IDs". Code (fenced or inline), headings,
HTML and existing links are left alone; a term already linked counts as used, so running it
again changes nothing. ``make_quickstart.py``, ``make_notebooks.py`` and ``make_prototype.py``
pass their Markdown cells through ``link_cells``; ``python glossary.py`` rewrites the lessons in
``tutorials/``.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GLOSSARY = ROOT / "tutorials" / "glossary.md"

#: Terms written other than as their heading.
SPECIAL = {
    "Section numbers": r"§\s?\d+(?:\.\d+)*",
    "Requirement IDs": r"MWP-WRK-\d{3}",
    "Error codes": r"section-19(?: error)? codes?|error codes?",
    "Step mode": r"\b[Ss]tep mode\b",
    "Admission Control": r"\b[Aa]dmission control\b",
    "Checkpoint": r"\b[Cc]heckpoints?\b",
    "Work Offer": r"\b(?:Work )?[Oo]ffers?\b",
}
#: What is never searched: fenced code, inline code, links, HTML tags, heading lines.
_PROTECTED = re.compile(
    r"```.*?```|`[^`\n]*`|!?\[[^\]\n]*\]\([^)\n]*\)|<[^>\n]+>|^#{1,6} [^\n]*$",
    re.DOTALL | re.MULTILINE,
)
_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]*glossary\.md)#([a-z0-9-]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def terms(glossary: Path = GLOSSARY) -> dict[str, str]:
    """Heading → its pattern, longest first (so "Group Authority" wins over "Group")."""
    headings = re.findall(r"^## (.+)$", glossary.read_text(), flags=re.MULTILINE)
    patterns = {h: SPECIAL.get(h, rf"\b{re.escape(h)}s?\b") for h in headings}
    return dict(sorted(patterns.items(), key=lambda kv: -len(kv[0])))


def _combined(patterns: dict[str, str]) -> re.Pattern[str]:
    groups = "|".join(f"(?P<t{i}>{p})" for i, p in enumerate(patterns.values()))
    return re.compile(groups)


def link_text(text: str, href: str, seen: set[str], patterns: dict[str, str]) -> str:
    """``text`` with the first use of each term not in ``seen`` linked to ``href#slug``;
    ``seen`` gains the terms linked (and those already linked in ``text``)."""
    names = list(patterns)
    slugs = {slug(n): n for n in names}
    for found in _LINK.finditer(text):
        if found.group(2) in slugs:
            seen.add(slugs[found.group(2)])
    combined = _combined(patterns)

    def link(match: re.Match[str]) -> str:
        index = next(int(k[1:]) for k, v in match.groupdict().items() if v is not None)
        name = names[index]
        if name in seen:
            return match.group(0)
        seen.add(name)
        return f"[{match.group(0)}]({href}#{slug(name)})"

    out, last = [], 0
    for protected in _PROTECTED.finditer(text):
        out.append(combined.sub(link, text[last : protected.start()]))
        out.append(protected.group(0))
        last = protected.end()
    out.append(combined.sub(link, text[last:]))
    return "".join(out)


def link_cells(cells: Iterable[dict[str, object]], href: str = "../tutorials/glossary.md") -> None:
    """Link the first use of each term across a notebook's Markdown cells, in order."""
    patterns, seen = terms(), set[str]()
    for cell in cells:
        if cell["cell_type"] == "markdown":
            cell["source"] = link_text(str(cell["source"]), href, seen, patterns)


def link_lessons(folder: Path = GLOSSARY.parent) -> list[Path]:
    """Rewrite every lesson in ``folder`` (not the glossary itself); the files changed."""
    patterns, changed = terms(), []
    for path in sorted(folder.glob("*.md")):
        if path == GLOSSARY:
            continue
        before = path.read_text()
        after = link_text(before, "glossary.md", set(), patterns)
        if after != before:
            path.write_text(after)
            changed.append(path)
    return changed


if __name__ == "__main__":
    for path in link_lessons():
        print(f"linked {path.relative_to(ROOT)}", file=sys.stderr)
