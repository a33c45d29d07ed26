"""Scheduling disclosure (§11.2, MWP-WRK-012): a WorkItem ``scheduleEstimate`` object.

The estimate is built from ``DisclosureInputs`` alone, and those inputs hold only the item
itself, its own Group's queue and a few aggregates of everyone else (total slots, whether the
item would start now, the summed weight of other Groups with ready work, and when the next slot
is expected to free). No other Group's ID, WorkItem ID, metadata or queue position reaches this
module, so none can leak from it; instants that depend on those aggregates are also rounded up to
``disclosure_grain_us``.

Estimate, for an item that is not running::

    share      = min(own quota or S, S * w_own / (w_own + w_other_ready))   # slots it can expect
    first_wait = 0 if a slot is free, else time until the next slot (or own quota slot) frees
    wait       = first_wait + ceil(own work ahead / share)
    start      = ceil((now + wait) / grain) * grain
    completion = ceil((start + estimated duration) / grain) * grain

An item that would start in the current decision round is ``available`` and starts ``now``; a
running item discloses its actual start. Confidence is a coarse function of the status and of the
number of own-Group items ahead, rounded to 0.05.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ...protocol.timestamps import format_utc
from .model import QueuedWork, SchedulerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class DisclosureInputs:
    """Everything a disclosure may depend on: the item, its own Group, and aggregates."""

    now_us: int
    #: The item disclosed.
    work: QueuedWork
    #: When it started, if it has been dispatched; else ``None``.
    started_us: int | None
    #: How many eligible items of its own Group come before it, and their estimated work.
    own_ahead_count: int
    own_ahead_work_us: int
    #: Its Group's occupied slots and quota, and when the Group's next running item should end.
    own_running: int
    own_quota: int | None
    own_next_free_in_us: int | None
    own_weight: Fraction
    #: Aggregates over everyone: number of slots, whether the item starts in this round,
    #: the summed weight of other Groups with ready work, time until the next slot frees
    #: (``None`` when one is free now).
    slot_count: int
    dispatch_now: bool
    other_ready_weight: Fraction
    next_free_in_us: int | None


def _round_up(instant_us: int, grain_us: int) -> int:
    return -(-instant_us // grain_us) * grain_us


def _coarse(value: float) -> float:
    """A confidence rounded to 0.05 and kept within [0.05, 0.95]."""
    return min(0.95, max(0.05, round(value * 20) / 20))


def schedule_estimate(inputs: DisclosureInputs, config: SchedulerConfig) -> dict[str, object]:
    """The ``scheduleEstimate`` object of the WorkItem schema for ``inputs``."""
    now = inputs.now_us
    work = inputs.work
    grain = config.disclosure_grain_us
    at_quota = inputs.own_quota is not None and inputs.own_running >= inputs.own_quota
    if inputs.started_us is not None:
        start = inputs.started_us
        completion = max(now, start + work.estimated_duration_us)
        on_time = now <= start + work.estimated_duration_us
        return _document(start, completion, 0.9 if on_time else 0.5, "available", now)
    if not work.risk_gate_open:
        status = "blocked"
    elif not work.resources_available or at_quota:
        status = "constrained"
    elif inputs.dispatch_now:
        status = "available"
    else:
        status = "queued"
    if inputs.slot_count == 0:
        start = _round_up(now + grain, grain)
        return _document(
            start, _round_up(start + work.estimated_duration_us, grain), 0.05, "blocked", now
        )
    if status == "available":
        return _document(now, now + work.estimated_duration_us, 0.85, status, now)
    cap = (
        inputs.slot_count if inputs.own_quota is None else min(inputs.own_quota, inputs.slot_count)
    )
    weight_share = inputs.own_weight / (inputs.own_weight + inputs.other_ready_weight)
    share = min(Fraction(cap), inputs.slot_count * weight_share)
    if at_quota:
        first_wait = grain if inputs.own_next_free_in_us is None else inputs.own_next_free_in_us
    else:
        first_wait = inputs.next_free_in_us or 0
    wait = first_wait + math.ceil(inputs.own_ahead_work_us / share)
    start = _round_up(now + wait, grain)
    completion = _round_up(start + work.estimated_duration_us, grain)
    crowding = 1 / (1 + inputs.own_ahead_count / inputs.slot_count)
    base = {"queued": 0.75, "constrained": 0.5, "blocked": 0.2}[status]
    return _document(start, completion, base * crowding, status, now)


def _document(
    start_us: int, completion_us: int, confidence: float, status: str, now_us: int
) -> dict[str, object]:
    return {
        "estimatedStart": format_utc(start_us),
        "estimatedCompletion": format_utc(completion_us),
        "confidence": _coarse(confidence),
        "capacityStatus": status,
        "lastCalculatedAt": format_utc(now_us),
    }
