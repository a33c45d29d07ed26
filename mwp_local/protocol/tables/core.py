"""A state machine as data: one row per transition, naming everything that affects it.

A row names its Command kind (or, for a row no Command drives, its cause), the Event kinds that
record it, its source states, its target(s), the Event member that carries a chosen target, and
the guards the Authority runs (by name: the table holds no functions; the Authority's guard
registry maps each name to a predicate). Every consumer reads the same rows: the Authority's
decider looks a Command's row up and runs its guards, ``evolve`` applies the row an Event
records, the diagrams and the documentation draw them (h11's ``_state.py`` is the model).

``lookup`` is the single place where a forbidden transition becomes
``INVALID_STATE_TRANSITION``; ``recorded_by`` is the single place that says which row an Event
records. Tables are immutable; ``replace_row`` builds a modified copy (a different rule set the
Authority and replay can be given). This module must not read state or perform I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Generic, TypeVar

from ..documents.event import CauseType
from ..documents.kinds import COMMAND_KINDS
from ..errors import ErrorCode, ProtocolError

S = TypeVar("S", bound=StrEnum)
T = TypeVar("T", bound=StrEnum)


@dataclass(frozen=True, slots=True)
class Mark:
    """What tells an Event of one row from an Event of another row with the same kind and
    cause: the member at ``path`` is present and, when ``value`` is given, equals it."""

    path: tuple[str, ...]
    value: str | None = None

    def holds(self, event: Mapping[str, Any]) -> bool:
        """Whether ``event`` carries the mark."""
        node: Any = event
        for name in self.path:
            if not isinstance(node, Mapping) or name not in node:
                return False
            node = node[name]
        return self.value is None or node == self.value

    def __str__(self) -> str:
        where = ".".join(self.path)
        return where if self.value is None else f"{where} = {self.value}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Row(Generic[S, T]):
    """One row of a state table.

    ``transition`` is the row's name: the Command kind that drives it, or the name of its cause
    (``offer_expiry``, ``child_mission_approved``); ``command`` and ``cause`` say which.
    ``events`` are the Event kinds that record the row: one Event kind for all its targets, or
    one per target (the Event kind then tells which target was chosen); none for a row that
    appends nothing (offer expiry) or whose change other Events carry (leases, offers).
    ``choice`` is the path of the Event member naming the target when one Event kind records
    several (``("payload", "toState")``). ``mark`` tells this row's Events from another row's of
    the same kind and cause (``payload.childMissionId``).

    ``fences`` and ``guards`` name the Authority's checks, run in order after the source state
    is checked (a transition the table forbids is ``INVALID_STATE_TRANSITION`` whatever else is
    wrong): the fences first (role, ownership, leases, compare-and-set), then the guards
    (conditions on the state; a guard may choose among several targets). ``refusals`` run only
    when the table forbids the transition, to name the more specific section-19 code of why the
    state is what it is (a lost race: ``WORK_ALREADY_OWNED``); they never allow anything.
    Payload checks are the handler's, not the row's.
    """

    transition: T
    sources: frozenset[S]
    targets: tuple[S, ...]
    events: tuple[str, ...] = ()
    choice: tuple[str, ...] | None = None
    mark: Mark | None = None
    fences: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()
    refusals: tuple[str, ...] = ()
    note: str = ""

    @property
    def command(self) -> str | None:
        """The Command kind that drives the row (None for a row driven by a cause)."""
        return str(self.transition) if str(self.transition) in COMMAND_KINDS else None

    @property
    def cause(self) -> str | None:
        """The cause that drives a row no Command drives (None for a Command's row)."""
        return None if self.command is not None else str(self.transition)

    @property
    def appends_event(self) -> bool:
        """Whether an Event of the row's own kind records it."""
        return bool(self.events)

    @property
    def checks(self) -> tuple[str, ...]:
        """Every guard name the row uses: the refusals (run only when the table forbids the
        transition), then the fences and the guards, in the order they run."""
        return self.refusals + self.fences + self.guards

    def event_for(self, target: S) -> str:
        """The Event kind that records the move to ``target``."""
        if len(self.events) == 1:
            return str(self.events[0])
        return str(self.events[self.targets.index(target)])

    def target_of(self, event: Mapping[str, Any]) -> S:
        """The target an Event of this row records (its kind, or its ``choice`` member)."""
        if len(self.targets) == 1:
            return self.targets[0]
        if self.choice is None:
            return self.targets[self.events.index(event["kind"])]
        node: Any = event
        for name in self.choice:
            node = node[name]
        chosen = type(self.targets[0])(node)
        if chosen not in self.targets:
            raise ValueError(
                f"{event['kind']} names '{chosen}' as the target of '{self.transition}', which "
                f"leads to {' or '.join(map(str, self.targets))}"
            )
        return chosen


@dataclass(frozen=True, slots=True)
class TransitionTable(Generic[S, T]):
    """An aggregate's state machine: its name, rows and terminal states."""

    aggregate: str
    rows: tuple[Row[S, T], ...]
    terminal: frozenset[S]
    _index: Mapping[tuple[S, T], Row[S, T]] = field(init=False, repr=False, compare=False)
    _named: Mapping[str, Row[S, T]] = field(init=False, repr=False, compare=False)
    #: (Event kind, from a Command?) → (marked rows, the unmarked row or None).
    _recorders: Mapping[tuple[str, bool], tuple[tuple[Row[S, T], ...], Row[S, T] | None]] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        index: dict[tuple[S, T], Row[S, T]] = {}
        named: dict[str, Row[S, T]] = {}
        recorders: dict[tuple[str, bool], tuple[tuple[Row[S, T], ...], Row[S, T] | None]] = {}
        for row in self.rows:
            if str(row.transition) in named:
                raise ValueError(f"{self.aggregate} table has two rows for {row.transition}")
            named[str(row.transition)] = row
            for source in row.sources:
                index[(source, row.transition)] = row
            _check_row(self.aggregate, row)
            for kind in dict.fromkeys(row.events):
                key = (kind, row.command is not None)
                marked, plain = recorders.get(key, ((), None))
                if row.mark is not None:
                    marked = (*marked, row)
                elif plain is not None:
                    raise ValueError(
                        f"{self.aggregate} table: {kind} records both '{plain.transition}' and "
                        f"'{row.transition}'; one of them needs a mark"
                    )
                else:
                    plain = row
                recorders[key] = (marked, plain)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_named", named)
        object.__setattr__(self, "_recorders", recorders)

    # ------------------------------------------------------------------ rows

    def row(self, transition: str) -> Row[S, T]:
        """The row named ``transition`` (a ``KeyError`` names a row the table does not have)."""
        try:
            return self._named[str(transition)]
        except KeyError:
            raise KeyError(f"the {self.aggregate} table has no row {transition}") from None

    def for_command(self, kind: str) -> Row[S, T] | None:
        """The row a Command of ``kind`` drives in this table, if any."""
        row = self._named.get(kind)
        return row if row is not None and row.command is not None else None

    def replace_row(self, transition: str, **changes: Any) -> TransitionTable[S, T]:
        """A copy of the table with the row named ``transition`` changed (``sources=``, ...)."""
        old = self.row(transition)
        rows = tuple(replace(r, **changes) if r is old else r for r in self.rows)
        return TransitionTable(self.aggregate, rows, terminal=self.terminal)

    # ------------------------------------------------------------------ decisions

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

    def between(self, source: S, target: S) -> Row[S, T] | None:
        """The first row that leads from ``source`` to ``target`` (None: no row does). For
        lifecycles whose changes other Events carry (a lease inside ``payload.leases``)."""
        for row in self.rows:
            if source in row.sources and target in row.targets:
                return row
        return None

    # ------------------------------------------------------------------ events

    def recorded_by(self, event: Mapping[str, Any]) -> Row[S, T] | None:
        """The row a signed Event records, or None when it records none of this table's rows.

        The Event's kind and cause pick the candidates (a Command's row is recorded by Events a
        Command caused; a cause's row by Events another Event or a timer caused); a candidate's
        mark, if the Event carries it, wins over the unmarked candidate."""
        cause = event.get("cause")
        by_command = isinstance(cause, Mapping) and cause.get("type") == CauseType.COMMAND
        candidates = self._recorders.get((event["kind"], by_command))
        if candidates is None:
            return None
        marked, plain = candidates
        for row in marked:
            if row.mark is not None and row.mark.holds(event):
                return row
        return plain

    def pairs(self) -> Iterable[tuple[S, T, Row[S, T]]]:
        """Every allowed ``(state, transition, row)``."""
        for (state, transition), row in self._index.items():
            yield state, transition, row

    def guard_names(self) -> frozenset[str]:
        """Every guard name the table's rows use."""
        return frozenset(name for row in self.rows for name in row.checks)


def _check_row(aggregate: str, row: Row[Any, Any]) -> None:
    """Refuse a row whose Events could not say which target they record."""
    several = len(row.targets) > 1
    if several and len(row.events) > 1 and len(row.events) != len(row.targets):
        raise ValueError(f"{aggregate} row {row.transition}: one Event kind per target, or one")
    if several and len(row.events) == 1 and row.choice is None:
        raise ValueError(
            f"{aggregate} row {row.transition}: one Event kind records several targets, so the "
            "row must name the Event member that carries the chosen one (choice)"
        )
