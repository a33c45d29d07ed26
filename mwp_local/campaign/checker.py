"""The invariant checker: every registered invariant over a sandbox directory.

``check_directory`` opens a sandbox directory read-only, runs every invariant (the log's own,
``invariants``, and the WorkItems', ``work_invariants``) and returns a ``CheckReport``. An
invariant that crashes is itself reported as a violation, never skipped.
"""

from __future__ import annotations

from pathlib import Path

from ..store.base import StoreLockedError
from . import invariants as _log_invariants  # noqa: F401  (registers the log's invariants)
from . import work_invariants as _work_invariants  # noqa: F401  (registers the WorkItems')
from .logdir import LogView, open_log_view
from .registry import INVARIANTS, CheckReport, Tally


def check_view(
    view: LogView, only: tuple[str, ...] | None = None, *, skip: tuple[str, ...] = ()
) -> CheckReport:
    """Run the invariants (all, or ``only``, minus ``skip``) over an open view."""
    tallies: dict[str, Tally] = {}
    for name, inv in INVARIANTS.items():
        if (only is not None and name not in only) or name in skip:
            continue
        tally = tallies[name] = Tally()
        try:
            inv.check(view, tally)
        except Exception as exc:  # a checker that cannot read the log has found a problem
            tally.check(False, f"the check could not complete: {type(exc).__name__}: {exc}")
    return CheckReport(str(view.directory), tallies)


def check_directory(
    directory: Path | str, *, acks: Path | None = None, only: tuple[str, ...] | None = None
) -> CheckReport:
    """Open ``directory`` read-only and run the invariants over it. A directory whose log
    cannot even be opened fails the first check, ``log_opens``; one that another process holds
    open for writing raises ``StoreLockedError`` (that says nothing about the log)."""
    opens = Tally()
    try:
        view = open_log_view(directory, acks=acks)
    except StoreLockedError:
        raise
    except Exception as exc:
        opens.check(False, f"{directory}: the log cannot be opened: {type(exc).__name__}: {exc}")
        return CheckReport(str(directory), {"log_opens": opens})
    opens.check(True, "")
    try:
        report = check_view(view, only)
    finally:
        view.close()
    return CheckReport(report.directory, {"log_opens": opens, **report.tallies})
