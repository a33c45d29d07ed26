"""The proof-of-concept check registry: named checks, each reading one directory.

A check is a function ``(Evidence) -> (ok, evidence text)``: it reads the Group log (SQL over the
views, Event documents, a replay) and the side files the scenario recorded, and says what it
found in a few words. It never trusts a flag the scenario set. Check modules register their
checks with ``@check``; ``run_check`` runs one (a check that raises fails, with the exception as
its evidence).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .evidence import Evidence

Verdict = tuple[bool, str]


@dataclass(frozen=True, slots=True)
class Check:
    """One named check: what it shows, and the function that decides it."""

    name: str
    title: str
    section: str
    fn: Callable[[Evidence], Verdict]
    #: Reads the directory's verify-log pass (``LogView.verification``): ``run_checks`` runs
    #: these first, so a later replay is taken from the pass (a plain replay, as
    #: ``Evidence.registry`` reads, does not count).
    replays: bool = False


@dataclass(frozen=True, slots=True)
class Result:
    """One check's outcome with its evidence."""

    name: str
    title: str
    section: str
    ok: bool
    evidence: str

    def to_json(self) -> dict[str, Any]:
        """The report's entry for this check."""
        return {
            "ok": self.ok,
            "title": self.title,
            "section": self.section,
            "evidence": self.evidence,
        }


CHECKS: dict[str, Check] = {}


def check(
    name: str, title: str, section: str, *, replays: bool = False
) -> Callable[[Callable[[Evidence], Verdict]], Callable[[Evidence], Verdict]]:
    """Register a check under ``name`` (unique); ``replays`` says it reads the verify-log pass
    (``tests/poc`` holds every check to what it declares)."""

    def register(fn: Callable[[Evidence], Verdict]) -> Callable[[Evidence], Verdict]:
        if name in CHECKS:
            raise ValueError(f"check {name} registered twice")
        CHECKS[name] = Check(name, title, section, fn, replays)
        return fn

    return register


def run_check(c: Check, ev: Evidence) -> Result:
    """Run one check; an exception is a failure with the exception as evidence."""
    try:
        ok, text = c.fn(ev)
    except Exception as exc:  # a check that cannot read its evidence has not shown anything
        ok, text = False, f"could not complete: {type(exc).__name__}: {exc}"
    return Result(c.name, c.title, c.section, bool(ok), text)


def verdict(ok: bool, good: str, bad: str) -> Verdict:
    """``(ok, good)`` or ``(ok, bad)``."""
    return (ok, good if ok else bad)
