"""A Worker's isolated execution slots (§11.1, §11.3, §11.4, §12; MWP-WRK-011, 015, 018, 031).

Each slot runs one WorkItem and keeps, for that WorkItem only, its Mission context, its Execution
Lease, its capability token, its checkpoints, its tool budget and its side-effect keys. Nothing
in one slot refers to another: a ``SlotView`` is a frozen copy of one slot, a token is accepted
only by the slot whose WorkItem and lease it is bound to, and each external operation carries
its own slot's token and key.

Tokens reach a slot through an explicit hand-off, because policies are sans-IO: after
``work.started`` the driver asks the policy for ``TokenRequest``s, obtains each token from the
Group's Authorization Service, and gives it back with ``grant``. External operations leave a slot
the same way, as ``ExternalCall`` values the driver performs and answers.

Side-effect keys (MWP-WRK-018, 031): every external operation of an attempt uses a key derived
deterministically from the WorkItem execution idempotency key of ``work.started`` (Mission ID,
WorkItem ID, Ownership Epoch) and the logical operation ID, so resuming an attempt (after a
checkpoint, preemption or Session replacement) repeats the same key and the external system
performs the operation at most once, while a new attempt (a new Ownership Epoch) gets a new key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ...authority.tokens import CapabilityToken
from ..scheduler.model import Slot
from .lifecycle import SlotState, SlotTransition, next_state

#: Simulated set-up time during which running work is not at a safe point (§11.3).
SETUP_US = 60_000_000
#: The logical ID of the one external operation each attempt performs (producing the deliverable).
DELIVERABLE_OPERATION = "deliverable"


def execution_key(mission_id: str, work_item_id: str, ownership_epoch: int) -> str:
    """The WorkItem execution idempotency key, as ``work.started`` announces it."""
    return f"{mission_id}|{work_item_id}|{ownership_epoch}"


def attempt_key(idempotency_key: str, operation_id: str) -> str:
    """The deterministic key of one logical external operation of one attempt (MWP-WRK-031)."""
    return f"{idempotency_key}|{operation_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenRequest:
    """A slot needs a capability token for its current Execution Lease (new, or renewed)."""

    slot_id: str
    work_item_id: str
    lease_id: str
    #: The operations it needs (a token can be narrowed, never widened).
    operations: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalCall:
    """One external tool operation of one slot, performed by the driver."""

    slot_id: str
    work_item_id: str
    resource: str
    #: The token operation it exercises (e.g. ``write``).
    operation: str
    #: The logical operation and its deterministic side-effect key.
    operation_id: str
    idempotency_key: str
    attempt: int
    #: The slot's own capability token (never logged, never shared).
    token: CapabilityToken
    #: In the simulation, the Worker's seeded behaviour model stands in for the tool's answer:
    #: whether this operation fails transiently. A real tool would answer for itself.
    simulated_failure: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SlotView:
    """A frozen copy of one slot: its own context and nothing of any other slot."""

    slot_id: str
    mission_id: str
    group_id: str
    work_item_id: str
    lease_id: str
    ownership_epoch: int
    attempt: int
    token: CapabilityToken | None
    #: The latest checkpoint of this slot's WorkItem (read-only), if any.
    checkpoint: MappingProxyType[str, Any] | None
    #: What the slot may still consume under its token (dimension → amount).
    tool_budget: MappingProxyType[str, float]
    #: The side-effect keys its external operations used.
    side_effect_keys: tuple[str, ...]


@dataclass
class Execution:
    """What runs in one isolated execution slot (private to the Worker policy)."""

    slot_id: str
    work_item_id: str
    group_id: str
    mission_id: str
    lease_id: str
    ownership_epoch: int
    attempt: int
    started_us: int
    remaining_us: int
    checkpoint_at_us: int | None
    fail_at_us: int | None
    block_at_us: int | None
    idempotency_key: str
    setup_us: int = SETUP_US
    #: Token operations the contract allows (none: the work has no external operation).
    operations: tuple[str, ...] = ()
    resource: str = ""
    checkpoint: dict[str, Any] | None = None
    #: Work done by earlier runs of this attempt (from its latest checkpoint).
    done_before_us: int = 0
    checkpoints_done: int = 0
    token: CapabilityToken | None = None
    tool_budget: dict[str, float] = field(default_factory=dict)
    side_effect_keys: list[str] = field(default_factory=list)
    #: Where the slot's work is in its lifecycle (``lifecycle.py``; changed only by ``move``).
    state: SlotState = SlotState.NONE
    #: Why the attempt failed, once it has ("TRANSIENT", "BUDGET_EXHAUSTED", ...).
    failure: str | None = None
    tool_calls: int = 0
    #: The content hashes of the deliverables published so far, in order.
    published: list[str] = field(default_factory=list)
    #: The deliverables (content, media type, schema URI) once produced, and the Evidence the
    #: work claimed (the work runs once per run of an attempt, when its time is up).
    outputs: tuple[tuple[bytes, str, str], ...] | None = None
    claims: tuple[Any, ...] = ()
    #: What the work needs to go on, if it will block (the Worker's ``blocks`` hook).
    block_resolution: str | None = None
    #: Whether the failure is one no retry can help (a work function's ``Fail(permanent=True)``).
    failure_permanent: bool = False
    #: The exception the Worker's own code (its work function or ``work`` hook) raised, as
    #: ``Type: message``, when that is why the attempt failed.
    failure_exception: str | None = None
    usage_recorded: bool = False
    preempt: bool = False
    #: The completion instant last reported (disclosure or progress), to spot material changes.
    reported_completion_us: int | None = None
    #: The slot as the Scheduler sees it, before and after its safe point (``scheduler_slot``).
    _as_slot: dict[bool, Slot] = field(default_factory=dict, repr=False, compare=False)

    def move(self, transition: SlotTransition, target: SlotState | None = None) -> None:
        """Take ``transition`` (to ``target`` when its row has several), as the lifecycle table
        allows, or raise ``SlotTransitionError`` naming the state and the transition."""
        subject = f"slot {self.slot_id} of {self.work_item_id}"
        self.state = next_state(self.state, transition, target, subject=subject)

    def fail_with(self, transition: SlotTransition, reason: str) -> None:
        """The attempt failed for ``reason``: move to ``failing`` by ``transition``."""
        self.move(transition, SlotState.FAILING)
        self.failure = reason

    def scheduler_slot(self, now_us: int) -> Slot:
        """This slot as the Scheduler is told about it at ``now_us`` (an immutable value that
        changes only when the work reaches its safe point, so each is built once)."""
        safe = self.at_safe_point(now_us)
        slot = self._as_slot.get(safe)
        if slot is None:
            slot = self._as_slot[safe] = Slot(
                slot_id=self.slot_id,
                work_item_id=self.work_item_id,
                group_id=self.group_id,
                started_us=self.started_us,
                at_safe_point=safe,
            )
        return slot

    def at_safe_point(self, now_us: int) -> bool:
        """Past its set-up phase, the simulated work can checkpoint safely and idempotently."""
        return now_us - self.started_us >= self.setup_us

    @property
    def finish_us(self) -> int:
        """When the work would be done if nothing interrupts it."""
        return self.started_us + self.remaining_us

    def failing(self, now_us: int) -> bool:
        """Whether the behaviour model's failure point of this attempt has been reached."""
        return self.fail_at_us is not None and now_us >= self.fail_at_us

    def needs_token(self, now_us: int) -> bool:
        """Whether the slot has external operations but no live token for its current lease
        (none yet, or one that ran out with the lease term it was issued under: rotation)."""
        return bool(self.operations) and (
            self.token is None
            or self.token.lease_id != self.lease_id
            or self.token.expires_us <= now_us
        )

    def grant(self, token: CapabilityToken) -> None:
        """Take a token, only if it is bound to this slot's WorkItem and current lease."""
        if token.work_item_id != self.work_item_id or token.lease_id != self.lease_id:
            raise ValueError(
                f"token {token.token_id} is bound to {token.work_item_id} / {token.lease_id}, "
                f"not to this slot's {self.work_item_id} / {self.lease_id}"
            )
        self.token = token
        self.tool_budget = dict(token.limits)

    def external_call(self, now_us: int) -> ExternalCall | None:
        """The deliverable operation, once the work reached it (or its failure point)."""
        due = self.failing(now_us) or now_us >= self.finish_us
        waiting = self.state in (SlotState.RUNNING, SlotState.AWAITING_EXTERNAL)
        if not due or not waiting or not self.operations or self.token is None:
            return None
        if self.token.lease_id != self.lease_id or now_us >= self.token.expires_us:
            return None
        operation = "write" if "write" in self.operations else self.operations[0]
        return ExternalCall(
            slot_id=self.slot_id,
            work_item_id=self.work_item_id,
            resource=self.resource,
            operation=operation,
            operation_id=DELIVERABLE_OPERATION,
            idempotency_key=attempt_key(self.idempotency_key, DELIVERABLE_OPERATION),
            attempt=self.attempt,
            token=self.token,
            simulated_failure=self.failing(now_us),
        )

    def answer(self, call: ExternalCall, ok: bool, refused: bool) -> None:
        """Record the driver's answer to one of this slot's external operations."""
        if call.work_item_id != self.work_item_id or call.slot_id != self.slot_id:
            raise ValueError("an external answer for another slot")
        if refused:  # the token was not accepted (rotated, lease gone): ask for a new one
            self.token = None
            return
        if ok:  # first, so an answer the slot is past raises before anything changes
            self.move(SlotTransition.EXTERNAL_ANSWERED, SlotState.PRODUCING)
        else:
            self.fail_with(SlotTransition.EXTERNAL_ANSWERED, "TRANSIENT")
        self.tool_calls += 1
        if call.idempotency_key not in self.side_effect_keys:
            self.side_effect_keys.append(call.idempotency_key)
        if "toolCalls" in self.tool_budget:
            self.tool_budget["toolCalls"] -= 1

    def view(self) -> SlotView:
        """A frozen copy of this slot."""
        checkpoint = (
            None
            if self.checkpoint is None
            else MappingProxyType(json.loads(json.dumps(self.checkpoint)))
        )
        return SlotView(
            slot_id=self.slot_id,
            mission_id=self.mission_id,
            group_id=self.group_id,
            work_item_id=self.work_item_id,
            lease_id=self.lease_id,
            ownership_epoch=self.ownership_epoch,
            attempt=self.attempt,
            token=self.token,
            checkpoint=checkpoint,
            tool_budget=MappingProxyType(dict(self.tool_budget)),
            side_effect_keys=tuple(self.side_effect_keys),
        )
