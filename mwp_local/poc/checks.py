"""The proof-of-concept checks, all of them: ``checks_run``, ``checks_review``, ``checks_fences``,
``checks_delivery`` and ``checks_offline`` register theirs on import; ``all_checks`` lists them
in the report's order and ``run_checks`` runs them over a directory.
"""

from __future__ import annotations

from pathlib import Path

from . import checks_delivery as _delivery  # noqa: F401  (registration)
from . import checks_fences as _fences  # noqa: F401
from . import checks_offline as _offline  # noqa: F401
from . import checks_review as _review  # noqa: F401
from . import checks_run as _run  # noqa: F401
from .evidence import Evidence
from .registry import CHECKS, Check, Result, Verdict, check, run_check, verdict

#: The order the report and docs/poc.md list the sections in.
SECTIONS = ("run", "review", "fences", "delivery", "offline")


def all_checks() -> dict[str, Check]:
    """Every registered check, by section and then in registration order."""
    order = sorted(CHECKS.values(), key=lambda c: SECTIONS.index(c.section))
    return {c.name: c for c in order}


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


__all__ = [
    "CHECKS",
    "Check",
    "Result",
    "Verdict",
    "all_checks",
    "check",
    "run_check",
    "run_checks",
    "verdict",
]
