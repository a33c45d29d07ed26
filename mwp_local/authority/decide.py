"""Deciding one transition from its table row: the row, the subject, the guards, the target.

``decide`` serves a Command's own row: it finds the row the Command's kind drives, runs the
row's fences, checks the subject's state against the row's sources (``INVALID_STATE_TRANSITION``
from the table), runs the row's guards and settles the target. ``follow`` does the same for a
row a cause drives inside another Command (a parent Mission's end reaching its WorkItems, a child
Mission's outcome reaching its parent WorkItem, a replacement Session). Either returns a
``Decision``: the handler adds what is specific to its Command (payload checks) and builds the
Event from it, whose kind and recorded states come from the row, never from the handler.

Guards are named in the rows and defined once, in the registry ``GUARDS``
(``mwp_local.authority.guards`` registers them). A guard reads the ``Decision`` and raises the
section-19 error that refuses the Command; it may record what it found for the handler (the
actor's role, the lease it checked, the offer being accepted) and a chooser sets the target of a
row with several. Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from ..protocol.tables import Row, TransitionTable
from .command import CommandView, Draft, item_draft
from .context import Context
from .model import LeaseRecord, MissionRecord, OfferRecord, WorkItemRecord


@dataclass(frozen=True, slots=True)
class Subject:
    """What a row moves: the aggregate (None before it exists), its state, and its name as the
    table's explanations give it (empty for a pre-state)."""

    record: Any
    state: StrEnum
    name: str = ""


def item_subject(item: WorkItemRecord) -> Subject:
    """A WorkItem as the subject of a row."""
    return Subject(item, item.state, item.work_item_id)


def mission_subject(mission: MissionRecord) -> Subject:
    """A Mission as the subject of a row."""
    return Subject(mission, mission.state, mission.mission_id)


def named_item(ctx: Context, cmd: CommandView, member: str = "workItemId") -> Callable[[], Subject]:
    """The WorkItem the Command's ``payload[member]`` names, found when a guard first reads it
    (so the checks before that keep their place: a role check may refuse before a missing
    WorkItem is noticed)."""
    return lambda: item_subject(ctx.work_item(cmd.payload.get(member), cmd.group_id))


@dataclass(slots=True, kw_only=True)
class Decision:
    """One transition being decided, and what its guards found on the way."""

    ctx: Context
    cmd: CommandView | None
    table: TransitionTable[Any, Any]
    row: Row[Any, Any]
    resolve: Callable[[], Subject]
    #: The child Mission whose outcome drives the row (``child_mission_*``).
    child: MissionRecord | None = None
    #: The bounded-offline binding (§11.5) the handler interprets, if the Command carries one:
    #: the owner and lease fences then check the binding's history instead.
    binding: dict[str, Any] | None = None
    #: The chosen next state (a chooser guard sets it for a row with several).
    target: Any = None
    #: What the actor acts as, set by a role guard: "coordinator", "owner" (the MissionOwner's
    #: audited override), "delegate" or "work_owner".
    role: str | None = None
    #: The Delegation Grant a delegate acts under, once a guard checked it.
    grant_id: str | None = None
    #: The lease a guard checked (the Execution Lease cited, the ownership or blocked lease).
    lease: LeaseRecord | None = None
    #: The offer being accepted.
    offer: OfferRecord | None = None
    #: Whether the owner still held live ownership (what ``work.unblock`` chose by).
    ownership_live: bool = False
    _subject: Subject | None = field(default=None, repr=False)

    @property
    def subject(self) -> Subject:
        """The subject, resolved on first use."""
        if self._subject is None:
            self._subject = self.resolve()
        return self._subject

    @property
    def source(self) -> Any:
        """The subject's state before the move."""
        return self.subject.state

    @property
    def item(self) -> WorkItemRecord:
        """The subject, a WorkItem."""
        record = self.subject.record
        assert isinstance(record, WorkItemRecord)
        return record

    @property
    def mission(self) -> MissionRecord:
        """The subject, a Mission."""
        record = self.subject.record
        assert isinstance(record, MissionRecord)
        return record

    @property
    def event(self) -> str:
        """The Event kind that records the move."""
        return self.row.event_for(self.target)

    @property
    def stays(self) -> bool:
        """Whether the move leaves the subject in the state it was in."""
        return bool(self.target == self.source)

    def draft(self, **members: Any) -> Draft:
        """The Event about the WorkItem subject that records this move: its kind from the row,
        the move from the item's state to the target recorded (``item_draft``'s members)."""
        return item_draft(self.item, self.event, to=str(self.target), **members)


#: A guard: reads the Decision, raises the error that refuses the Command.
Guard = Callable[[Decision], None]

_GUARDS: dict[str, Guard] = {}
#: Every guard a row may name, by name.
GUARDS: Mapping[str, Guard] = MappingProxyType(_GUARDS)


def guard(name: str) -> Callable[[Guard], Guard]:
    """Register the decorated function as the guard ``name``."""

    def register(fn: Guard) -> Guard:
        if name in _GUARDS:
            raise ValueError(f"two guards named {name}")
        _GUARDS[name] = fn
        return fn

    return register


def _run(decision: Decision, names: tuple[str, ...]) -> None:
    for name in names:
        _GUARDS[name](decision)


def _settle(decision: Decision) -> Decision:
    row = decision.row
    if decision.target is None:
        if len(row.targets) != 1:
            raise ValueError(f"no guard of '{row.transition}' chose among {row.targets}")
        decision.target = row.targets[0]
    else:
        decision.table.target(decision.source, row.transition, decision.target)
    return decision


def decide(
    ctx: Context,
    cmd: CommandView,
    table: TransitionTable[Any, Any],
    resolve: Callable[[], Subject],
    *,
    binding: dict[str, Any] | None = None,
) -> Decision:
    """Decide the row of ``table`` that ``cmd``'s kind drives, for the subject ``resolve``
    finds: fences, then the source state, then guards, then the target."""
    row = table.for_command(cmd.kind)
    if row is None:
        raise ValueError(f"the {table.aggregate} table has no row for {cmd.kind}")
    decision = Decision(ctx=ctx, cmd=cmd, table=table, row=row, resolve=resolve, binding=binding)
    # Fences first, then the table: a stale actor learns it is stale before it learns the state
    # is wrong. To check the table first, swap the next two lines.
    _run(decision, row.fences)
    table.lookup(decision.source, row.transition, subject=decision.subject.name)
    _run(decision, row.guards)
    return _settle(decision)


def follow(
    ctx: Context,
    table: TransitionTable[Any, Any],
    transition: str,
    subject: Subject,
    *,
    child: MissionRecord | None = None,
) -> Decision:
    """Decide the cause-driven row ``transition`` for ``subject`` inside the current Command:
    the source state must allow it (callers that propagate only where it applies check
    ``table.is_allowed`` first), then its guards run and settle the target."""
    row = table.row(transition)
    decision = Decision(
        ctx=ctx, cmd=ctx.command, table=table, row=row, resolve=lambda: subject, child=child
    )
    _run(decision, row.fences)
    table.lookup(subject.state, row.transition, subject=subject.name)
    _run(decision, row.guards)
    return _settle(decision)


# The guard functions register themselves on import.
from . import guards as _guards  # noqa: E402,F401
