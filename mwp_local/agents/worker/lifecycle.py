"""The lifecycle of one of a Worker's Capacity Slots (§11.3, §11.4, §12, §13), as data.

A slot opens when ``work.started`` is accepted and runs its attempt; when the attempt's time is
up (or its failure point is reached) it waits for its external operation, if it has one, then
either produces its deliverables, publishes and submits them, or reports the failure. The work
may checkpoint (when due, or when the Scheduler asked it to yield) or block on the way, and the
slot is lost when its Execution Lease is gone. Every terminal state releases the slot.

The table is the Worker's own, not the protocol's: nothing on the wire carries these states.
``Execution.move`` (``slots.py``) is the one place a slot changes state; it looks the row up
here and raises ``SlotTransitionError`` for a transition the table does not allow. The
diagrams draw the table with the protocol tables' generic ``table_svg``.
"""

from __future__ import annotations

from enum import StrEnum

from ...protocol.tables.core import Row, TransitionTable

__all__ = [
    "ACTIVE_SLOT_STATES",
    "SLOT_TABLE",
    "SlotState",
    "SlotTransition",
    "SlotTransitionError",
    "next_state",
]


class SlotState(StrEnum):
    """Where the work in one slot is; ``NONE`` is the pre-state (the slot is free, or reserved
    by a Dispatch whose ``work.start`` is still in flight)."""

    NONE = "none"
    #: The attempt's work runs (its set-up phase, then past its safe point: the clock tells).
    RUNNING = "running"
    #: The work's time is up; the driver performs its external operation with the slot's token.
    AWAITING_EXTERNAL = "awaiting_external"
    #: The work is done (its external operation answered ok, or it has none): record usage,
    #: then run the work function for the deliverables.
    PRODUCING = "producing"
    #: The deliverables exist: publish each as an Artifact, then submit with Evidence.
    PUBLISHING = "publishing"
    #: The attempt failed (``Execution.failure`` says why): record usage, then ``work.fail``.
    FAILING = "failing"
    #: Terminal: the slot was released by an accepted checkpoint (the WorkItem re-enters the
    #: Group queue), block, submission or failure, or lost with its Execution Lease.
    CHECKPOINTED = "checkpointed"
    BLOCKED = "blocked"
    SUBMITTED = "submitted"
    FAILED = "failed"
    LOST = "lost"


class SlotTransition(StrEnum):
    """What can happen to a slot."""

    START = "start"
    AWAIT_EXTERNAL = "await_external"
    EXTERNAL_ANSWERED = "external_answered"
    FINISH = "finish"
    PRODUCE = "produce"
    WORK_FAILED = "work_failed"
    CHECKPOINT = "checkpoint"
    BLOCK = "block"
    SUBMIT = "submit"
    FAIL = "fail"
    LOSE = "lose"


class SlotTransitionError(RuntimeError):
    """A slot was asked to take a transition its lifecycle table does not allow (a Worker bug)."""


S = SlotState
ST = SlotTransition

#: The states in which a slot holds work (every other state but ``NONE`` is terminal).
ACTIVE_SLOT_STATES = frozenset(
    {S.RUNNING, S.AWAITING_EXTERNAL, S.PRODUCING, S.PUBLISHING, S.FAILING}
)

SLOT_TABLE: TransitionTable[SlotState, SlotTransition] = TransitionTable(
    "Capacity Slot",
    (
        Row(
            transition=ST.START,
            sources=frozenset({S.NONE}),
            targets=(S.RUNNING,),
            note="work.start accepted: the slot opens with the WorkItem's Execution Lease",
        ),
        Row(
            transition=ST.AWAIT_EXTERNAL,
            sources=frozenset({S.RUNNING}),
            targets=(S.AWAITING_EXTERNAL,),
            note="The work's time is up and it has an external operation and tool budget left",
        ),
        Row(
            transition=ST.EXTERNAL_ANSWERED,
            sources=frozenset({S.RUNNING, S.AWAITING_EXTERNAL}),
            targets=(S.PRODUCING, S.FAILING),
            note="The driver's answer to the external operation: ok, or a transient failure",
        ),
        Row(
            transition=ST.FINISH,
            sources=frozenset({S.RUNNING, S.AWAITING_EXTERNAL}),
            targets=(S.PRODUCING, S.FAILING),
            note="The time is up without an external answer: no operation to perform (done, or "
            "failed at the failure point), or no tool budget left for it (BUDGET_EXHAUSTED)",
        ),
        Row(
            transition=ST.PRODUCE,
            sources=frozenset({S.PRODUCING}),
            targets=(S.PUBLISHING,),
            note="The work function returned its deliverables",
        ),
        Row(
            transition=ST.WORK_FAILED,
            sources=frozenset({S.PRODUCING}),
            targets=(S.FAILING,),
            note="The work function returned Fail",
        ),
        Row(
            transition=ST.CHECKPOINT,
            sources=frozenset({S.RUNNING}),
            targets=(S.CHECKPOINTED,),
            note="work.checkpoint accepted (due, or the Scheduler asked it to yield at a safe "
            "point): the slot is released, the WorkItem re-enters the Group queue",
        ),
        Row(
            transition=ST.BLOCK,
            sources=ACTIVE_SLOT_STATES,
            targets=(S.BLOCKED,),
            note="work.block accepted: the block point comes first whatever the slot is doing, "
            "and the work function may return Block",
        ),
        Row(
            transition=ST.SUBMIT,
            sources=frozenset({S.PUBLISHING}),
            targets=(S.SUBMITTED,),
            note="work.submit accepted, every deliverable published",
        ),
        Row(
            transition=ST.FAIL,
            sources=frozenset({S.FAILING}),
            targets=(S.FAILED,),
            note="work.fail accepted (permanent once retries are spent)",
        ),
        Row(
            transition=ST.LOSE,
            sources=ACTIVE_SLOT_STATES,
            targets=(S.LOST,),
            note="The Execution Lease is gone (replaced, closed or run out): the Worker gives "
            "the slot up; the Coordinator re-offers from the latest checkpoint",
        ),
    ),
    terminal=frozenset({S.CHECKPOINTED, S.BLOCKED, S.SUBMITTED, S.FAILED, S.LOST}),
)


def next_state(
    state: SlotState, transition: SlotTransition, target: SlotState | None, *, subject: str
) -> SlotState:
    """The state ``transition`` leads to from ``state`` (``target`` picks one of a row's
    several targets), or ``SlotTransitionError`` naming the state and the transition."""
    if not SLOT_TABLE.is_allowed(state, transition):
        allowed = ", ".join(map(str, SLOT_TABLE.allowed(state))) or "nothing"
        raise SlotTransitionError(
            f"{subject} is '{state}': '{transition}' is not a transition of the Capacity Slot "
            f"lifecycle from there (allowed: {allowed})"
        )
    row = SLOT_TABLE.row(transition)
    if target is None:
        if len(row.targets) != 1:
            raise SlotTransitionError(
                f"'{transition}' from '{state}' of {subject} must name its target: "
                f"{' or '.join(map(str, row.targets))}"
            )
        return row.targets[0]
    if target not in row.targets:
        raise SlotTransitionError(
            f"'{transition}' from '{state}' of {subject} leads to "
            f"{' or '.join(map(str, row.targets))}, not '{target}'"
        )
    return target
