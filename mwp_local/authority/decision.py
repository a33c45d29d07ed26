"""One transition being decided: its row, its subject, what its guards found; and the one
registry of guards the state tables name.

A ``Decision`` is what ``decide`` and ``follow`` (``mwp_local.authority.decide``) hand the
guards and then the handler: the row of the table, the subject (resolved when a guard first
reads it), the chosen target, and what the guards recorded on the way (the actor's role, the
lease or offer they checked). ``GUARDS`` maps each guard name a row may use to its function;
``mwp_local.authority.guards`` registers them all. Pure: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from ..protocol.tables import GroupState, Row, TransitionTable
from .command import CommandView, Draft, item_draft
from .context import Context
from .model import GroupRecord, LeaseRecord, MissionRecord, OfferRecord, WorkItemRecord


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


def group_subject(group: GroupRecord) -> Subject:
    """A Group as the subject of a row."""
    return Subject(group, GroupState(group.state), group.group_id)


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
