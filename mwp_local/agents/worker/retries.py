"""Bounded retries (§11.4, MWP-WRK-018): attempts, backoff, cost and deadline of the contract.

An *attempt* is one execution of a WorkItem under one Ownership Epoch; the Group Authority
numbers them in ``work.started``. The retry budget of ``retryPolicy.maxAttempts`` is spent by
*failed* attempts (``work.failed`` Events): an attempt cut short by a reassignment after a lapsed
lease, or by a Session replacement, did not fail and spends none of it, although the Authority
numbers the next execution as a new attempt. After a failed attempt the Worker asks
``retry_verdict`` whether another attempt is still allowed by the contract (attempts, backoff,
retryable failures), by the WorkItem's remaining budget (cost) and by its deadline. If not, its
``work.fail`` is permanent and carries Evidence saying why; either way it never starts an
attempt beyond what the verdict allows, and never before the backoff has elapsed.

Pure code: no I/O, no clock, no randomness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...authority.retries import backoff_us, iso_duration_us

# The Authority checks the same backoff from the log (``authority.retries``): one formula.
__all__ = ["RetryVerdict", "backoff_us", "iso_duration_us", "retry_verdict"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryVerdict:
    """Whether another attempt may follow a failed one, and when at the earliest."""

    retry: bool
    #: Why not (``None`` when a retry is allowed).
    why: str | None
    #: The earliest start of the next attempt.
    not_before_us: int


def retry_verdict(
    *,
    contract: dict[str, Any],
    failure: str,
    failed_attempts: int,
    failed_at_us: int,
    remaining_budget: dict[str, float | None],
    expected_cost: dict[str, float],
    estimate_us: int,
    deadline_us: int,
) -> RetryVerdict:
    """Decide whether another attempt may follow the ``failed_attempts``-th failed one (this
    failure included), which failed with ``failure``."""
    policy = contract["retryPolicy"]
    wait = backoff_us(policy, failed_attempts)
    not_before = failed_at_us + wait

    def no(why: str) -> RetryVerdict:
        return RetryVerdict(retry=False, why=why, not_before_us=not_before)

    if failure not in policy["retryableFailures"]:
        return no(f"{failure} is not a retryable failure of this contract")
    if failed_attempts >= policy["maxAttempts"]:
        return no(f"all {policy['maxAttempts']} attempts failed")
    for dim, need in sorted(expected_cost.items()):
        left = remaining_budget.get(dim)
        if left is not None and left < need:
            return no(
                f"the remaining {dim} budget ({left:g}) cannot pay another attempt ({need:g})"
            )
    if not_before + estimate_us > deadline_us:
        return no("another attempt after the backoff cannot finish before the deadline")
    return RetryVerdict(retry=True, why=None, not_before_us=not_before)
