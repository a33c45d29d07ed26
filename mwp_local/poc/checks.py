"""The proof-of-concept checks: a table of named checks, each reading one directory.

A check is a function ``(Evidence) -> (ok, evidence text)``: it reads the Group log (SQL over the
views, Event documents, a replay) and the side files the scenario recorded, and says what it
found in a few words. It never trusts a flag the scenario set. ``run_checks`` runs every check
(a check that raises fails, with the exception as its evidence). The checks themselves live in
``checks_run``, ``checks_review``, ``checks_fences``, ``checks_delivery`` and
``checks_offline``; importing this module registers them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
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
    #: Reads the directory's verify-log pass (``LogView.verification``): the costly part of
    #: checking, which ``run_checks_split`` hands to a second process (a plain replay, as
    #: ``Evidence.registry`` reads, is cheap and does not count).
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


@cache
def _load() -> None:
    from . import (  # noqa: F401  (registration)
        checks_delivery,
        checks_fences,
        checks_offline,
        checks_review,
        checks_run,
    )


#: The order the report and the README list the sections in.
SECTIONS = ("run", "review", "fences", "delivery", "offline")


def all_checks() -> dict[str, Check]:
    """Every registered check, by section and then in registration order."""
    _load()
    order = sorted(CHECKS.values(), key=lambda c: SECTIONS.index(c.section))
    return {c.name: c for c in order}


def run_check(c: Check, ev: Evidence) -> Result:
    """Run one check; an exception is a failure with the exception as evidence."""
    try:
        ok, text = c.fn(ev)
    except Exception as exc:  # a check that cannot read its evidence has not shown anything
        ok, text = False, f"could not complete: {type(exc).__name__}: {exc}"
    return Result(c.name, c.title, c.section, bool(ok), text)


def run_checks(directory: Path | str, only: tuple[str, ...] | None = None) -> list[Result]:
    """Run every check (or ``only`` these) over ``directory``."""
    chosen = [c for name, c in all_checks().items() if only is None or name in only]
    ev = Evidence.open(directory)
    try:
        # The checks that read the verify-log pass run first: a later replay is then taken
        # from the pass instead of being folded again. The results keep the table's order.
        done = {c.name: run_check(c, ev) for c in sorted(chosen, key=lambda c: not c.replays)}
    finally:
        ev.close()
    return [done[c.name] for c in chosen]


def verdict(ok: bool, good: str, bad: str) -> Verdict:
    """``(ok, good)`` or ``(ok, bad)``."""
    return (ok, good if ok else bad)


__all__ = ["CHECKS", "Check", "Result", "Verdict", "all_checks", "check", "run_checks", "verdict"]
