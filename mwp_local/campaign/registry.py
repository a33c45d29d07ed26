"""The invariant registry: named checks over a ``LogView``, the tally each keeps, and the report.

An invariant counts what it checked and lists what it found broken, with an explanation a person
can act on (``Tally``). Modules register their invariants with ``@invariant``; ``checker`` runs
them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .logdir import LogView

#: Violations kept per invariant (the count is always exact).
KEEP = 20


@dataclass
class Tally:
    """The checks one invariant made and the violations it found."""

    checks: int = 0
    violations: int = 0
    examples: list[str] = field(default_factory=list)

    def check(self, ok: bool, explanation: str | Callable[[], str]) -> bool:
        """Count one check; record ``explanation`` when it failed. Returns ``ok``."""
        self.checks += 1
        if not ok:
            self.violations += 1
            if len(self.examples) < KEEP:
                self.examples.append(explanation() if callable(explanation) else explanation)
        return ok


@dataclass(frozen=True, slots=True)
class Invariant:
    """A named invariant, what it means, and the function that checks it."""

    name: str
    meaning: str
    check: Callable[[LogView, Tally], None]


INVARIANTS: dict[str, Invariant] = {}


def invariant(
    name: str, meaning: str
) -> Callable[[Callable[[LogView, Tally], None]], Callable[[LogView, Tally], None]]:
    """Register an invariant check under ``name``."""

    def register(fn: Callable[[LogView, Tally], None]) -> Callable[[LogView, Tally], None]:
        if name in INVARIANTS:
            raise ValueError(f"invariant {name} registered twice")
        INVARIANTS[name] = Invariant(name, meaning, fn)
        return fn

    return register


@dataclass(frozen=True, slots=True)
class CheckReport:
    """Every invariant's tally for one directory."""

    directory: str
    tallies: dict[str, Tally]

    @property
    def violations(self) -> int:
        """How many violations were found in all."""
        return sum(t.violations for t in self.tallies.values())

    @property
    def ok(self) -> bool:
        """Whether no invariant was violated."""
        return self.violations == 0

    def problems(self) -> list[str]:
        """``invariant: explanation`` for every recorded violation."""
        return [f"{n}: {e}" for n, t in self.tallies.items() for e in t.examples]
