"""Requirement-coverage tags for the concept notebooks: which MWP-WRK requirement a cell shows,
and whether it was shown accepted or rejected.

``show`` tags a demonstration that is not a single Command (a Worker's inbox, the Scheduler, the
blob store); ``Bench.accept`` / ``Bench.refuse`` (``notebook.bench``) tag the Command they send.
``coverage()`` lists what this kernel showed, per requirement. Teaching support: the protocol
does not know about it, and nothing below the notebook layer uses it.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ..render.html import STYLE

#: Every requirement shown in this kernel: ID → {"accepted", "rejected"}.
SHOWN: dict[str, set[str]] = {}

VERDICTS = ("accepted", "rejected")


class Shown:
    """One demonstration: the requirement, the verdict, and what to look at (HTML)."""

    def __init__(self, req: str, verdict: str, body: str, outcome: Any = None) -> None:
        if verdict not in VERDICTS:
            raise ValueError(f"Shown({req!r}, {verdict!r}): a verdict is 'accepted' or 'rejected'")
        self.req, self.verdict, self.body, self.outcome = req, verdict, body, outcome
        SHOWN.setdefault(req, set()).add(verdict)

    def _repr_html_(self) -> str:
        colour = "#2ca02c" if self.verdict == "accepted" else "#d62728"
        return (
            f'{STYLE}<div class="mwp" style="border-left:4px solid {colour};padding-left:8px">'
            f"<b>{escape(self.req)}</b> shown <b>{escape(self.verdict)}</b>{self.body}</div>"
        )


def show(req: str, verdict: str, what: str) -> Shown:
    """Tag a demonstration that is not one Command (``verdict``: accepted or rejected)."""
    return Shown(req, verdict, f"<div>{escape(what)}</div>")


class Html:
    """Ready HTML, drawn as it is."""

    def __init__(self, html: str) -> None:
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


def coverage() -> Html:
    """What this kernel showed, per requirement."""
    rows = "".join(
        f"<tr><td>{escape(r)}</td><td>{', '.join(sorted(v))}</td></tr>"
        for r, v in sorted(SHOWN.items())
    )
    return Html(f"{STYLE}<div class='mwp'><table><tr><th>requirement</th><th>shown</th></tr>"
                f"{rows}</table></div>")  # fmt: skip
