"""The limits of a Work Contract's retry policy the Authority checks from the log (§11.4,
MWP-WRK-018): attempts, backoff and deadline.

A Worker runs its own retries (``agents.worker.retries``), but a client that does not behave
would re-offer or restart a failed WorkItem at once and for ever; the Authority holds what the
log shows. The retry budget ``retryPolicy.maxAttempts`` is spent by failed attempts (the
``work.failed`` Events of the item, folded as ``WorkItemRecord.failures``):

* ``work.offer`` of a ``failed`` WorkItem whose failures have spent ``maxAttempts`` is refused:
  no attempt is left to offer;
* ``work.start`` of a new attempt (a new Ownership Epoch) is refused when the failures have spent
  ``maxAttempts``, before the backoff after the last failure has elapsed (``backoff_us``: none,
  ``fixed`` = ``maxDelay``, ``exponential`` = one second doubling per failure, never above
  ``maxDelay``), and after the contract's ``deadline``.

Resuming the same attempt (after a checkpoint) is no new attempt and is not checked. Each refusal
is ``INVALID_COMMAND`` naming the limit, what the log shows and, for the backoff, when the start
becomes possible (``retryAfter``). The cost limit is the budget's (``BUDGET_EXCEEDED``). Pure: no
I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.tables import WorkItemState
from ..protocol.timestamps import format_utc, parse_timestamp
from .model import WorkItemRecord

__all__ = ["backoff_us", "check_new_attempt", "check_reoffer", "iso_duration_us"]

_DURATION = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?"
)
_RULE = "§11.4 retries are bounded by the Work Contract's attempts, backoff, cost and deadline"


def iso_duration_us(text: str) -> int:
    """An ISO 8601 duration of days, hours, minutes and seconds (``PT1M``) in microseconds."""
    match = _DURATION.fullmatch(text)
    if match is None or text in ("P", "PT"):
        raise ValueError(f"{text!r} is not an ISO 8601 duration like PT1M")
    d, h, m = (int(match.group(k) or 0) for k in "dhm")
    seconds = float(match.group("s") or 0)
    return int(((d * 24 + h) * 60 + m) * 60_000_000 + round(seconds * 1_000_000))


def backoff_us(retry_policy: Mapping[str, Any], failed_attempts: int) -> int:
    """How long to wait after the ``failed_attempts``-th failed attempt before the next one."""
    cap = iso_duration_us(retry_policy["maxDelay"])
    kind = retry_policy["backoff"]
    if kind == "none":
        return 0
    if kind == "fixed":
        return cap
    # exponential: a second, doubling per failed attempt, never above maxDelay
    doubling: int = 1_000_000 << max(0, failed_attempts - 1)
    return min(cap, doubling)


def _refuse(explanation: str, **details: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_COMMAND, explanation, details=details, rule=_RULE)


def _spent(item: WorkItemRecord) -> ProtocolError | None:
    limit = int(item.contract["retryPolicy"]["maxAttempts"])
    if item.failures < limit:
        return None
    return _refuse(
        f"{item.work_item_id} has failed {item.failures} time(s) and its contract allows "
        f"{limit} attempt(s) (retryPolicy.maxAttempts): no attempt is left. Cancel it, or "
        "authorize revised work with a new contract.",
        failures=item.failures,
        maxAttempts=limit,
    )


def check_reoffer(item: WorkItemRecord) -> None:
    """A ``failed`` WorkItem may be offered again only while attempts are left."""
    if item.state is WorkItemState.FAILED and (error := _spent(item)) is not None:
        raise error


def check_new_attempt(item: WorkItemRecord, now_us: int) -> None:
    """A new attempt starts only with attempts left, after the backoff, before the deadline."""
    if item.ownership_epoch == item.attempt_epoch:
        return  # the same attempt resumes (after a checkpoint)
    if (error := _spent(item)) is not None:
        raise error
    policy = item.contract["retryPolicy"]
    if item.failed_at_us is not None:
        earliest = item.failed_at_us + backoff_us(policy, item.failures)
        if now_us < earliest:
            raise _refuse(
                f"{item.work_item_id} failed at {format_utc(item.failed_at_us)}; its contract's "
                f"{policy['backoff']} backoff (maxDelay {policy['maxDelay']}) allows the next "
                f"attempt from {format_utc(earliest)}. Start it then.",
                retryAfter=format_utc(earliest),
                failures=item.failures,
            )
    deadline = item.contract["deadline"]
    if now_us > parse_timestamp(deadline).epoch_micros:
        raise _refuse(
            f"The contract's deadline {deadline} has passed: no new attempt of "
            f"{item.work_item_id} may start.",
            deadline=deadline,
        )
