"""Deciding one transition from its table row: the row, the subject, the guards, the target.

``decide`` serves a Command's own row: it finds the row the Command's kind drives, checks the
subject's state against the row's sources (``INVALID_STATE_TRANSITION`` from the table, before
anything else about the subject), runs the row's fences and then its guards, and settles the
target. ``follow`` does the same for a
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

from ..protocol.errors import ProtocolError
from ..protocol.tables import TransitionTable
from . import fences
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
    finds: the source state, then fences, then guards, then the target."""
    row = table.for_command(cmd.kind)
    if row is None:
        raise ValueError(f"the {table.aggregate} table has no row for {cmd.kind}")
    decision = Decision(ctx=ctx, cmd=cmd, table=table, row=row, resolve=resolve, binding=binding)
    # The table first: a transition the table forbids is INVALID_STATE_TRANSITION whatever else
    # is wrong with the Command (§10.2); then the row's fences (role, ownership, lease,
    # compare-and-set), then its guards. Who the sender is (signature, freshness, Session,
    # Membership and Coordinator Epochs) the pipeline checked before any state was read.
    _lookup(decision)
    _run(decision, row.fences)
    _deferred_revision(decision)
    _run(decision, row.guards)
    return _settle(decision)


def _lookup(decision: Decision) -> None:
    """The table's verdict on the subject's state; when it refuses, the row's ``refusals`` may
    name the more specific code of why (they never allow what the table forbids)."""
    row = decision.row
    try:
        decision.table.lookup(decision.source, row.transition, subject=decision.subject.name)
    except ProtocolError:
        _run(decision, row.refusals)
        raise


#: The pipeline's name of the aggregate each table moves (``CommandSpec.aggregate``).
_AGGREGATE = {"WorkItem": "work_item", "Mission": "mission"}


def _deferred_revision(decision: Decision) -> None:
    """The compare-and-set the pipeline left to the row (``Context.revision_after_table``): the
    Command's ``expectedRevision`` against the subject's revision, after the table (§15.3)."""
    ctx, cmd = decision.ctx, decision.cmd
    aggregate = _AGGREGATE.get(decision.table.aggregate)  # None: a table without revisions
    if cmd is None or aggregate is None or ctx.revision_after_table != aggregate:
        return
    record = decision.subject.record
    if isinstance(record, MissionRecord):
        fences.revision(record.revision, cmd, "the Mission")
    elif record is not None:
        fences.revision(record.revision, cmd, f"WorkItem {decision.subject.name}")


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
    _lookup(decision)
    _run(decision, row.fences)
    _run(decision, row.guards)
    return _settle(decision)
