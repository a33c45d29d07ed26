"""Bounded retries (MWP-WRK-018): the rules of ``retries.py``, and a Worker that never starts an
attempt beyond the Work Contract's."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.agents.worker.retries import backoff_us, iso_duration_us, retry_verdict
from mwp_local.agents.worker.slots import attempt_key, execution_key
from mwp_local.protocol.tables import WorkItemState

from .worker_world import act, started_world, worker

WID = "urn:mwp-local:work:feature"
MINUTE = 60_000_000


def _policy(**over: Any) -> dict[str, Any]:
    policy = {
        "maxAttempts": 3,
        "backoff": "fixed",
        "maxDelay": "PT1M",
        "retryableFailures": ["TRANSIENT"],
    }
    policy.update(over)
    return policy


def _verdict(**over: Any) -> Any:
    args: dict[str, Any] = {
        "contract": {"retryPolicy": _policy()},
        "failure": "TRANSIENT",
        "failed_attempts": 1,
        "failed_at_us": 0,
        "remaining_budget": {"computeSeconds": 1000.0},
        "expected_cost": {"computeSeconds": 600.0},
        "estimate_us": 10 * MINUTE,
        "deadline_us": 60 * MINUTE,
    }
    args.update(over)
    return retry_verdict(**args)


def test_iso_durations_are_read_to_the_microsecond() -> None:
    assert iso_duration_us("PT1M") == MINUTE
    assert iso_duration_us("P1DT2H3M4.5S") == ((24 + 2) * 60 + 3) * MINUTE + 4_500_000
    for bad in ("1M", "P", "PT", "PT1X"):
        with pytest.raises(ValueError):
            iso_duration_us(bad)


@pytest.mark.req("MWP-WRK-018")
def test_backoff_follows_the_contract_and_never_exceeds_its_max_delay() -> None:
    assert backoff_us(_policy(backoff="none"), 3) == 0
    assert backoff_us(_policy(backoff="fixed"), 1) == MINUTE
    exponential = [backoff_us(_policy(backoff="exponential"), n) for n in range(1, 10)]
    assert exponential[:3] == [1_000_000, 2_000_000, 4_000_000]
    assert max(exponential) == MINUTE and exponential == sorted(exponential)


@pytest.mark.req("MWP-WRK-018")
def test_a_retryable_failure_with_attempts_budget_and_time_left_may_be_retried() -> None:
    verdict = _verdict()
    assert verdict.retry and verdict.why is None and verdict.not_before_us == MINUTE


@pytest.mark.req("MWP-WRK-018")
@pytest.mark.parametrize(
    ("over", "why"),
    [
        ({"failed_attempts": 3}, "attempts failed"),
        ({"failure": "PERMANENT_ERROR"}, "not a retryable failure"),
        ({"remaining_budget": {"computeSeconds": 500.0}}, "computeSeconds budget"),
        ({"deadline_us": 10 * MINUTE}, "deadline"),
    ],
    ids=["attempts", "not-retryable", "cost", "deadline"],
)
def test_no_retry_once_attempts_cost_or_deadline_are_exhausted(
    over: dict[str, Any], why: str
) -> None:
    verdict = _verdict(**over)
    assert not verdict.retry and why in (verdict.why or "")


@pytest.mark.req("MWP-WRK-018")
def test_attempt_keys_are_derived_deterministically_from_the_execution_key() -> None:
    key = execution_key("urn:m", "urn:w", 2)
    assert key == "urn:m|urn:w|2"
    assert attempt_key(key, "deliverable") == attempt_key(key, "deliverable")
    assert attempt_key(key, "deliverable") != attempt_key(
        execution_key("urn:m", "urn:w", 3), "deliverable"
    )


def _exhausted_and_forced_back(monkeypatch: pytest.MonkeyPatch) -> Any:
    """worker-a failed the only attempt of WID; the World then forces a second acceptance. The
    Authority refuses that re-offer now (tests/authority/test_retry_policy.py), so this test
    lifts the Authority's check to see the Worker's own defence."""
    from mwp_local.authority import retries

    monkeypatch.setattr(retries, "check_reoffer", lambda item: None)
    world = started_world()
    world.authorize(WID, retryPolicy=_policy(maxAttempts=1))
    world.offer(WID)
    world.accept(WID)
    world.start(WID)
    failure = world.evidence(WID, "sha256:" + "0" * 64, kind="failure_report")
    world.ok(
        "worker-a",
        "work.fail",
        {**world.lease(WID), "reason": "TRANSIENT", "evidence": [failure]},
    )
    world.offer(WID)
    world.accept(WID)  # bypassing the Worker's admission control
    monkeypatch.undo()
    return world


@pytest.mark.req("MWP-WRK-018")
def test_a_worker_never_starts_an_attempt_beyond_the_contract_and_fails_for_good(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = _exhausted_and_forced_back(monkeypatch)
    sent = act(world, worker(world))
    assert [i.kind for i in sent] == ["work.fail"]
    item = world.state.work_items[WID]
    assert item.state is WorkItemState.FAILED and item.attempts == 1
    failed = world.events[-1]
    assert failed["kind"] == "work.failed" and failed["payload"]["permanent"] is True
    [report] = failed["payload"]["evidence"]
    assert report["type"] == "failure_report"
    assert report["details"]["maxAttempts"] == 1 and report["details"]["retryAllowed"] is False


@pytest.mark.req("MWP-WRK-018")
def test_a_worker_with_an_attempt_left_starts_it_after_the_backoff() -> None:
    world = started_world()
    world.authorize(WID, retryPolicy=_policy(maxAttempts=2))
    world.offer(WID)
    world.accept(WID)
    world.start(WID)
    failure = world.evidence(WID, "sha256:" + "0" * 64, kind="failure_report")
    world.ok(
        "worker-a", "work.fail", {**world.lease(WID), "reason": "TRANSIENT", "evidence": [failure]}
    )
    world.offer(WID)
    runtime = worker(world)
    assert [i.kind for i in act(world, runtime)] == ["work.accept_offer"]  # not yet: backoff
    world.advance(59)
    assert act(world, runtime) == []
    world.advance(1)
    assert [i.kind for i in act(world, runtime, ("work.start",))] == ["work.start"]
    assert world.state.work_items[WID].attempts == 2
