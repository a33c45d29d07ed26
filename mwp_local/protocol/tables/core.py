"""A transition table: rows of (current states, transition, next states, guards, note).

The table is immutable data. ``lookup`` is the single place where a forbidden transition becomes
``INVALID_STATE_TRANSITION``; ``target`` checks the state a guard chose among a row's allowed
next states.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

from ..errors import ErrorCode, ProtocolError

S = TypeVar("S", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


@dataclass(frozen=True, slots=True, kw_only=True)
class Row(Generic[S, T]):
    """One row of a specification table.

    ``sources`` are the states in which ``transition`` is allowed; ``targets`` the states it may
    lead to (more than one when a guard decides, e.g. ``work.unblock`` → ``queued`` or ``open``);
    ``guards`` name the predicates the Authority evaluates; ``note`` is the specification's note.
    ``appends_event`` is False for the one row that changes nothing (offer expiry).
    """

    sources: frozenset[S]
    transition: T
    targets: tuple[S, ...]
    guards: tuple[str, ...] = ()
    note: str = ""
    appends_event: bool = True


@dataclass(frozen=True, slots=True)
class TransitionTable(Generic[S, T]):
    """An aggregate's state machine: its name, state enum and rows."""

    aggregate: str
    rows: tuple[Row[S, T], ...]
    terminal: frozenset[S]
    _index: Mapping[tuple[S, T], Row[S, T]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[S, T], Row[S, T]] = {}
        for row in self.rows:
            for source in row.sources:
                key = (source, row.transition)
                if key in index:
                    raise ValueError(f"{self.aggregate} table lists {key} twice")
                index[key] = row
        object.__setattr__(self, "_index", index)

    def allowed(self, state: S) -> tuple[T, ...]:
        """The transitions the table allows from ``state``, in table order."""
        return tuple(row.transition for row in self.rows if state in row.sources)

    def is_allowed(self, state: S, transition: T) -> bool:
        """Whether the table has a row for ``(state, transition)``."""
        return (state, transition) in self._index

    def lookup(self, state: S, transition: T, *, subject: str = "") -> Row[S, T]:
        """The row for ``(state, transition)`` or ``INVALID_STATE_TRANSITION``."""
        row = self._index.get((state, transition))
        if row is None:
            allowed = self.allowed(state)
            where = f" {subject}" if subject else ""
            if state in self.terminal:
                tail = f"'{state}' is terminal: nothing may follow it."
            elif allowed:
                tail = f"From '{state}' the table allows: {', '.join(map(str, allowed))}."
            else:
                tail = f"Nothing is allowed from '{state}'."
            raise ProtocolError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"The {self.aggregate}{where} is '{state}', and '{transition}' is not a "
                f"transition the state machine allows from there. {tail}",
                details={
                    "aggregate": self.aggregate,
                    "state": str(state),
                    "transition": str(transition),
                    "allowed": [str(t) for t in allowed],
                },
                rule=f"{self.aggregate} state table",
            )
        return row

    def target(self, state: S, transition: T, chosen: S, *, subject: str = "") -> S:
        """Check that ``chosen`` is one of the row's next states and return it."""
        row = self.lookup(state, transition, subject=subject)
        if chosen not in row.targets:
            raise ProtocolError(
                ErrorCode.INVALID_STATE_TRANSITION,
                f"'{transition}' from '{state}' may lead to "
                f"{' or '.join(map(str, row.targets))}, not '{chosen}'.",
                details={"state": str(state), "transition": str(transition)},
                rule=f"{self.aggregate} state table",
            )
        return chosen

    def pairs(self) -> Iterable[tuple[S, T, Row[S, T]]]:
        """Every allowed ``(state, transition, row)``."""
        for (state, transition), row in self._index.items():
            yield state, transition, row
