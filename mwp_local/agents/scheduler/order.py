"""The Scheduler's two orderings, as pure functions of scheduling metadata and ``now``.

* Inside a Group, items are ordered by a *score* (higher first): urgency, organization priority
  class, business impact, deadline pressure and aging (the formula: ``docs/scheduler.md``).
* Across Groups, the head item of a Group gives it a bounded *lead* in virtual time: organization
  priority class and deadline pressure, capped at ``max_lead_us``. Requested urgency never enters
  the cross-Group comparison.

These functions hold no state and make no decisions; the Scheduler calls them.
"""

from __future__ import annotations

from fractions import Fraction

from .model import QueuedWork, SchedulerConfig

_ZERO = Fraction(0)
_ONE = Fraction(1)


def deadline_pressure(work: QueuedWork, now_us: int, config: SchedulerConfig) -> Fraction:
    """How close the item is to missing its deadline: 0 (no deadline, or slack >= horizon) to 1.

    Slack is ``deadline - now - estimated duration``; pressure rises linearly from 0 at a slack of
    ``deadline_horizon_us`` to 1 at a slack of zero or less.
    """
    if work.deadline_us is None:
        return _ZERO
    slack = work.deadline_us - now_us - work.estimated_duration_us
    horizon = config.deadline_horizon_us
    if slack >= horizon:  # the clamped ends need no fraction
        return _ZERO
    if slack <= 0:
        return _ONE
    return Fraction(horizon - slack, horizon)


def _pressure_float(work: QueuedWork, now_us: int, config: SchedulerConfig) -> float:
    """``float(deadline_pressure(...))`` without building a fraction: integer true division is
    correctly rounded, as the conversion of the reduced fraction is, so both give the same
    float."""
    if work.deadline_us is None:
        return 0.0
    slack = work.deadline_us - now_us - work.estimated_duration_us
    horizon = config.deadline_horizon_us
    if slack >= horizon:
        return 0.0
    if slack <= 0:
        return 1.0
    return (horizon - slack) / horizon


def within_group_score(work: QueuedWork, now_us: int, config: SchedulerConfig) -> float:
    """The item's score inside its Group (higher is served first)."""
    waited_s = max(0, now_us - work.enqueued_us) / 1_000_000
    return (
        config.urgency_points * work.urgency.rank
        + config.class_points * min(work.priority_class, config.max_priority_class)
        + config.impact_points * min(work.business_impact_rank, config.max_impact_rank)
        + config.deadline_points * _pressure_float(work, now_us, config)
        + config.aging_points_per_s * waited_s
    )


def within_group_key(
    work: QueuedWork, now_us: int, config: SchedulerConfig
) -> tuple[float, int, str]:
    """Sort key inside a Group: highest score, then earliest enqueued, then WorkItem ID."""
    return (-within_group_score(work, now_us, config), work.enqueued_us, work.work_item_id)


def cross_group_lead(work: QueuedWork, now_us: int, config: SchedulerConfig) -> Fraction:
    """The virtual-time lead the Group's head item gives it over other Groups (0..L_max)."""
    lead = config.class_lead_us * min(work.priority_class, config.max_priority_class)
    pressure = deadline_pressure(work, now_us, config)
    if pressure.denominator == 1:  # no pressure, or full pressure: whole microseconds
        return Fraction(
            min(config.max_lead_us, lead + config.deadline_lead_us * pressure.numerator)
        )
    lead_exact = lead + config.deadline_lead_us * pressure
    return min(Fraction(config.max_lead_us), lead_exact)


def ordered(
    items: list[QueuedWork] | tuple[QueuedWork, ...], now_us: int, config: SchedulerConfig
) -> list[QueuedWork]:
    """A Group's queue in service order: eligible items by key, then ineligible ones by key."""
    return sorted(items, key=lambda w: (not w.eligible, *within_group_key(w, now_us, config)))
