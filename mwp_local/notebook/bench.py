"""The concept notebooks' bench: a ``client.Workbench`` whose checked sends are tagged with the
MWP-WRK requirement the cell demonstrates.

``accept(req, who, kind, payload)`` sends a Command that must be accepted and shows its Events;
``refuse(req, code, who, kind, payload)`` sends one that must be refused with ``code``, proves
the log did not change and shows why. Both return a ``coverage.Shown`` (the tag
``coverage()`` lists). Everything else (``send``, ``ok``, the Mission steps, the clock) is the
Workbench's; ``GROUP``, ``MISSION`` and ``CAP`` are its defaults.
"""

from __future__ import annotations

from typing import Any

from ..client.workbench import CAP, GROUP, MISSION, REVIEW, START, Workbench
from .coverage import SHOWN, Shown, coverage, show


class Bench(Workbench):
    """A Workbench whose ``accept`` and ``refuse`` tag the requirement they show."""

    def accept(self, req: str, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Shown:
        """Send a Command, expect it accepted, and show its Events."""
        reply = self.send(who, kind, payload, **over)
        return Shown(req, "accepted", reply.body_html(), reply.accepted())

    def refuse(
        self, req: str, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
    ) -> Shown:
        """Send a Command, expect it refused with ``code``, prove nothing changed, show why."""
        reply = self.must_refuse(code, who, kind, payload, **over)
        body = reply.body_html() + "<div><small>the log is unchanged</small></div>"
        return Shown(req, "rejected", body, reply.outcome)


__all__ = [
    "CAP",
    "GROUP",
    "MISSION",
    "REVIEW",
    "SHOWN",
    "START",
    "Bench",
    "Shown",
    "coverage",
    "show",
]
