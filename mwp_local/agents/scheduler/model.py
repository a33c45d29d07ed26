"""The Scheduler's values: what it is told (queued work, slots, configuration) and what it says
(decisions).

Everything here is frozen scheduling metadata. None of it carries Mission content: no goals,
prompts, Artifacts or contract prose, only identifiers, classes, instants and durations
(MWP-WRK-028). The Scheduler's behaviour lives in ``scheduler.py``; this module only defines and
validates values.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from types import MappingProxyType


class RequestedUrgency(StrEnum):
    """The Work Contract's ``requestedUrgency`` (§10.1), as the Coordinator requested it.

    It orders work inside its own Group only; across Groups it is an input, never an order
    (MWP-WRK-009).
    """

    ROUTINE = "routine"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        """0 for ``routine`` up to 3 for ``critical``."""
        return _URGENCY_RANK[self]


_URGENCY_RANK = {
    RequestedUrgency.ROUTINE: 0,
    RequestedUrgency.NORMAL: 1,
    RequestedUrgency.HIGH: 2,
    RequestedUrgency.CRITICAL: 3,
}


def _require_id(value: object, name: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, not {value!r}")


def _require_int(value: object, name: str, *, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, not {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class QueuedWork:
    """The scheduling metadata of one accepted WorkItem waiting in its Group's queue."""

    #: The WorkItem ID.
    work_item_id: str
    #: The Group whose queue holds it.
    group_id: str
    #: The Coordinator's requested urgency; orders work inside the Group only.
    urgency: RequestedUrgency = RequestedUrgency.NORMAL
    #: The Work Contract deadline (microseconds since the Unix epoch), or ``None``.
    deadline_us: int | None = None
    #: A rank of the contract's business impact, 0 (least) upwards; orders work inside the Group.
    business_impact_rank: int = 0
    #: When the item entered the queue (first acceptance; kept across preemption so age counts).
    enqueued_us: int
    #: The Worker's estimate of the service the item still needs, in microseconds.
    estimated_duration_us: int
    #: False while a pre-execution approval (risk gate) is outstanding: the item is ineligible.
    risk_gate_open: bool = True
    #: False while a resource the item needs is unavailable: the item is ineligible.
    resources_available: bool = True
    #: The organization priority class set by policy or the MissionOwner, 0 (default) upwards.
    priority_class: int = 0

    def __post_init__(self) -> None:
        _require_id(self.work_item_id, "work_item_id")
        _require_id(self.group_id, "group_id")
        if not isinstance(self.urgency, RequestedUrgency):
            raise ValueError(f"urgency must be a RequestedUrgency, not {self.urgency!r}")
        if self.deadline_us is not None:
            _require_int(self.deadline_us, "deadline_us")
        _require_int(self.business_impact_rank, "business_impact_rank")
        _require_int(self.enqueued_us, "enqueued_us")
        _require_int(self.estimated_duration_us, "estimated_duration_us")
        _require_int(self.priority_class, "priority_class")

    @property
    def eligible(self) -> bool:
        """Whether the item may be dispatched now: its risk gate is open and resources are there."""
        return self.risk_gate_open and self.resources_available


@dataclass(frozen=True, slots=True, kw_only=True)
class Slot:
    """One declared execution slot as the Worker sees it when it asks for decisions.

    A free slot has ``work_item_id``, ``group_id`` and ``started_us`` all ``None``.
    """

    #: The slot's stable identifier inside this Worker.
    slot_id: str
    #: The WorkItem running in the slot, or ``None`` when the slot is free.
    work_item_id: str | None = None
    #: The Group of the running WorkItem, or ``None``.
    group_id: str | None = None
    #: When the running WorkItem started in this slot, or ``None``.
    started_us: int | None = None
    #: True only while the running work sits at a safe, idempotent checkpoint (§11.3 step 2).
    at_safe_point: bool = False
    #: False when the running work declares it must not be preempted at all.
    preemptible: bool = True

    def __post_init__(self) -> None:
        _require_id(self.slot_id, "slot_id")
        occupied = (self.work_item_id, self.group_id, self.started_us)
        if any(v is None for v in occupied) and any(v is not None for v in occupied):
            raise ValueError(
                "a slot names work_item_id, group_id and started_us together, or none of them"
            )
        if self.work_item_id is not None:
            _require_id(self.work_item_id, "work_item_id")
            _require_id(self.group_id, "group_id")
            _require_int(self.started_us, "started_us")

    @property
    def free(self) -> bool:
        """Whether nothing runs in the slot."""
        return self.work_item_id is None


@dataclass(frozen=True, slots=True, kw_only=True)
class Dispatch:
    """Decision: start ``work_item_id`` in the free slot ``slot_id`` (under a fresh lease)."""

    slot_id: str
    work_item_id: str


class PreemptionReason(StrEnum):
    """Why the Scheduler asks a slot to pause."""

    #: A more urgent item of the same Group waits (the Group swaps its own work).
    GROUP_PRIORITY = "group_priority"
    #: Work of a higher organization priority class waits and its Group is not ahead of its share.
    PRIORITY_CLASS = "priority_class"


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestPreemption:
    """Decision: ask the work in ``slot_id`` to pause cooperatively (§11.3 step 1).

    The Worker checkpoints at the safe, idempotent point it is at, emits the checkpoint, pauses,
    frees the slot and calls ``Scheduler.requeue`` so the item re-enters its Group queue. The
    Scheduler never asks this of a slot that is not at a safe point.
    """

    slot_id: str
    #: The running WorkItem asked to pause (not the one that is waiting).
    work_item_id: str
    reason: PreemptionReason


#: What ``Scheduler.decide`` returns.
Decision = Dispatch | RequestPreemption


class PreemptionPolicy(StrEnum):
    """Whether the Scheduler may ask running work to pause."""

    #: Never request preemption; waiting work takes the next slot that frees.
    NEVER = "never"
    #: Request cooperative preemption at safe points (the rules: ``docs/scheduler.md``).
    COOPERATIVE = "cooperative"


def _exact(value: float | int | Fraction, name: str) -> Fraction:
    """A positive number as an exact fraction; floats keep their shortest decimal spelling."""
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise ValueError(f"{name} must be a number, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, not {value!r}")
    exact = Fraction(repr(value)) if isinstance(value, float) else Fraction(value)
    if exact <= 0:
        raise ValueError(f"{name} must be positive, not {value!r}")
    return exact


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerConfig:
    """The Worker's scheduling policy. Units: microseconds for times, "points" for scores.

    Weights and quotas come from the Worker's own policy, never from a Coordinator.
    """

    #: Per-Group fairness weight; Groups not named get ``default_weight``.
    weights: Mapping[str, float] = field(default_factory=dict)
    default_weight: float = 1.0
    #: Per-Group maximum number of concurrently occupied slots; absent means no quota.
    quotas: Mapping[str, int] = field(default_factory=dict)
    default_quota: int | None = None
    #: Each dispatch charges its Group between these many service-microseconds (C_min, C_max).
    min_charge_us: int = 1_000_000
    max_charge_us: int = 3_600_000_000
    #: Service debt or credit a Group carries between dispatches, at most this much either way
    #: (``None``: 16 times ``max_charge_us``).
    debt_limit_us: int | None = None
    #: Cross-Group lead (virtual microseconds) per organization priority class step ...
    class_lead_us: int = 60_000_000
    #: ... and for a deadline whose slack has run out (scaled linearly over the horizon) ...
    deadline_lead_us: int = 60_000_000
    #: ... never more than this in total (L_max).
    max_lead_us: int = 180_000_000
    #: Inside a Group: points per urgency step, priority class and impact rank.
    urgency_points: float = 1.0
    class_points: float = 1.0
    impact_points: float = 0.25
    #: Priority classes and impact ranks above these count as these.
    max_priority_class: int = 3
    max_impact_rank: int = 4
    #: Inside a Group: up to this many points as deadline slack shrinks from the horizon to zero.
    deadline_points: float = 2.0
    deadline_horizon_us: int = 3_600_000_000
    #: Inside a Group: points gained per second of waiting (aging).
    aging_points_per_s: float = 1.0 / 60.0
    preemption: PreemptionPolicy = PreemptionPolicy.COOPERATIVE
    #: A waiting item must outscore a running item of its Group by this much to preempt it.
    preemption_score_margin: float = 2.0
    #: A waiting item must exceed a running item's priority class by this much to preempt it.
    preemption_class_gap: int = 1
    #: Running work is never asked to pause before it has run this long.
    min_run_before_preemption_us: int = 1_000_000
    #: Disclosed instants derived from other Groups' load are rounded up to this grain.
    disclosure_grain_us: int = 60_000_000

    def __post_init__(self) -> None:
        weights = {g: float(w) for g, w in dict(self.weights).items()}
        for group_id, weight in weights.items():
            _require_id(group_id, "weights key")
            _exact(weight, f"weight of {group_id}")
        _exact(self.default_weight, "default_weight")
        quotas = dict(self.quotas)
        for group_id, quota in quotas.items():
            _require_id(group_id, "quotas key")
            _require_int(quota, f"quota of {group_id}", minimum=1)
        if self.default_quota is not None:
            _require_int(self.default_quota, "default_quota", minimum=1)
        _require_int(self.min_charge_us, "min_charge_us", minimum=1)
        _require_int(self.max_charge_us, "max_charge_us", minimum=self.min_charge_us)
        if self.debt_limit_us is not None:
            _require_int(self.debt_limit_us, "debt_limit_us")
        for name in ("class_lead_us", "deadline_lead_us", "max_lead_us", "max_priority_class"):
            _require_int(getattr(self, name), name)
        _require_int(self.max_impact_rank, "max_impact_rank")
        _require_int(self.deadline_horizon_us, "deadline_horizon_us", minimum=1)
        _require_int(self.preemption_class_gap, "preemption_class_gap", minimum=1)
        _require_int(self.min_run_before_preemption_us, "min_run_before_preemption_us")
        _require_int(self.disclosure_grain_us, "disclosure_grain_us", minimum=1)
        for name in (
            "urgency_points",
            "class_points",
            "impact_points",
            "deadline_points",
            "aging_points_per_s",
            "preemption_score_margin",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{name} must be a number >= 0, not {value!r}")
        if not isinstance(self.preemption, PreemptionPolicy):
            raise ValueError(f"preemption must be a PreemptionPolicy, not {self.preemption!r}")
        # Read-only views, so a frozen config cannot be changed through its mappings.
        object.__setattr__(self, "weights", MappingProxyType(weights))
        object.__setattr__(self, "quotas", MappingProxyType(quotas))

    def weight_of(self, group_id: str) -> float:
        """The Group's fairness weight."""
        return self.weights.get(group_id, self.default_weight)

    def exact_weight_of(self, group_id: str) -> Fraction:
        """The Group's weight as an exact fraction (``0.1`` is exactly one tenth)."""
        return _exact(self.weight_of(group_id), "weight")

    @property
    def debt_limit(self) -> int:
        """The effective bound on a Group's service debt or credit (microseconds)."""
        return 16 * self.max_charge_us if self.debt_limit_us is None else self.debt_limit_us

    def quota_of(self, group_id: str) -> int | None:
        """The Group's maximum concurrent slots, or ``None`` for no quota."""
        return self.quotas.get(group_id, self.default_quota)
