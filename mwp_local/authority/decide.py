"""Deciding one transition from its table row: the row, the subject, the guards, the target.

``decide`` serves a Command's own row: it finds the row the Command's kind drives, runs the
row's fences, checks the subject's state against the row's sources (``INVALID_STATE_TRANSITION``
from the table), runs the row's guards and settles the target. ``follow`` does the same for a
row a cause drives inside another Command (a parent Mission's end reaching its WorkItems, a child
Mission's outcome reaching its parent WorkItem, a replacement Session). Either returns a
``Decision``: the handler adds what is specific to its Command (payload checks) and builds the
Event from it, whose kind and recorded states come from the row, never from the handler.

Guards are named in the rows and defined once, in the registry ``GUARDS`` (``decision``;
``guards`` registers them). A guard reads the ``Decision`` and raises the section-19 error that
refuses the Command; it may record what it found for the handler (the actor's role, the lease it
checked, the offer being accepted) and a chooser sets the target of a row with several. Pure: no
I/O, no clock, no randomness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol.tables import TransitionTable
from . import guards as _guards  # noqa: F401  (registers every guard a row may name)
from .command import CommandView
from .context import Context
from .decision import (
    GUARDS,
    Decision,
    Subject,
    group_subject,
    item_subject,
    mission_subject,
    named_item,
)
from .model import MissionRecord

__all__ = [
    "GUARDS",
    "Decision",
    "Subject",
    "decide",
    "follow",
    "group_subject",
    "item_subject",
    "mission_subject",
    "named_item",
]


def _run(decision: Decision, names: tuple[str, ...]) -> None:
    for name in names:
        GUARDS[name](decision)


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
