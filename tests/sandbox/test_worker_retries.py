"""Retries in a running Sandbox (MWP-WRK-018): bounded by the contract's attempts, backoff, cost
and deadline; each external attempt uses a key derived from the WorkItem execution idempotency
key; exhaustion ends in ``work.failed`` with Evidence, and no further attempt starts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.sandbox import Sandbox

from .inline import CAP, at_us, mission_file, of_item

WID = "urn:mwp-local:work:m:build"
MINUTE = 60_000_000


def _sandbox(tmp_path: Path, failure_rate: float, **work: Any) -> Sandbox:
    spec = mission_file(
        [
            {
                "name": "w",
                "capabilities": [CAP],
                "behaviour": {"failure_rate": failure_rate, "jitter": 0.0},
            }
        ],
        [{"id": "m", "work": [{"id": "build", **work}]}],
    )
    return Sandbox(tmp_path / "s", spec)


def _worker_failures(sandbox: Sandbox) -> list[dict[str, Any]]:
    """The ``work.failed`` Events the Worker itself reported (not a Coordinator's)."""
    return [e for e in of_item(sandbox, WID, "work.failed") if e["actor"]["id"].endswith(":w")]


def _failed_for_good(sandbox: Sandbox) -> bool:
    return any(e["payload"]["permanent"] for e in _worker_failures(sandbox))


def _run_past_exhaustion(sandbox: Sandbox) -> None:
    sandbox.run(until=_failed_for_good, max_steps=400)
    assert _failed_for_good(sandbox)
    sandbox.run(max_steps=sandbox.steps + 40)  # and then some: nothing starts again


@pytest.mark.req("MWP-WRK-018")
def test_retries_stop_after_the_contracts_attempts_with_one_keyed_external_attempt_each(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path, failure_rate=1.0, max_attempts=2)
    _run_past_exhaustion(sandbox)
    started = of_item(sandbox, WID, "work.started")
    failed = _worker_failures(sandbox)
    assert [e["payload"]["attempt"] for e in started] == [1, 2]
    assert [e["payload"]["permanent"] for e in failed] == [False, True]
    calls = sandbox.external.performed(WID)
    assert len(calls) == 2  # one external attempt per attempt, no more
    assert [c.idempotency_key for c in calls] == [
        f"{e['payload']['idempotencyKey']}|deliverable" for e in started
    ]
    assert len({c.idempotency_key for c in calls}) == 2
    [report] = failed[-1]["payload"]["evidence"]
    assert report["type"] == "failure_report" and report["result"] == "failed"
    assert report["details"]["attempt"] == 2 and report["details"]["failedAttempts"] == 2
    assert report["details"]["maxAttempts"] == 2
    assert "attempts failed" in report["details"]["whyNoRetry"]
    assert report["details"]["sideEffectKeys"] == [calls[-1].idempotency_key]
    sandbox.close()


@pytest.mark.req("MWP-WRK-018")
def test_work_that_succeeds_makes_one_external_attempt_even_across_a_checkpoint(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path, failure_rate=0.0, max_attempts=2)
    summary = sandbox.run()
    assert summary.finished and summary.work_items == {"verified": 1}
    runs = of_item(sandbox, WID, "work.started")  # started, checkpointed, resumed
    assert len(runs) == 2 and {e["payload"]["attempt"] for e in runs} == {1}
    [key] = {e["payload"]["idempotencyKey"] for e in runs}  # resuming keeps the attempt's key
    [call] = sandbox.external.performed(WID)
    assert call.ok and call.idempotency_key == f"{key}|deliverable"
    assert _worker_failures(sandbox) == []
    sandbox.close()


@pytest.mark.req("MWP-WRK-018")
def test_the_next_attempt_waits_for_the_contracts_backoff(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path, failure_rate=1.0, max_attempts=2)  # fixed backoff, PT1M
    _run_past_exhaustion(sandbox)
    first_failure = _worker_failures(sandbox)[0]
    second_start = of_item(sandbox, WID, "work.started")[1]
    accepted_again = of_item(sandbox, WID, "work.offer.accepted")[1]
    assert at_us(accepted_again) < at_us(first_failure) + MINUTE  # accepted at once ...
    assert at_us(second_start) == at_us(first_failure) + MINUTE  # ... started after the backoff
    sandbox.close()


@pytest.mark.req("MWP-WRK-018")
def test_a_remaining_budget_too_small_for_another_attempt_ends_the_retries(
    tmp_path: Path,
) -> None:
    # 700 compute seconds: one 600 s attempt fits, but not another after a third of one
    budget = {"financial": 10, "tool_calls": 50, "compute_seconds": 700}
    sandbox = _sandbox(tmp_path, failure_rate=1.0, max_attempts=3, budget=budget)
    _run_past_exhaustion(sandbox)
    [failed] = _worker_failures(sandbox)
    assert failed["payload"]["permanent"] is True
    assert "computeSeconds budget" in failed["payload"]["evidence"][0]["details"]["whyNoRetry"]
    assert len(of_item(sandbox, WID, "work.started")) == 1
    sandbox.close()


@pytest.mark.req("MWP-WRK-018")
def test_a_deadline_another_attempt_cannot_meet_ends_the_retries(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path, failure_rate=1.0, max_attempts=3, deadline="13m")
    _run_past_exhaustion(sandbox)
    [failed] = _worker_failures(sandbox)
    assert failed["payload"]["permanent"] is True
    assert "deadline" in failed["payload"]["evidence"][0]["details"]["whyNoRetry"]
    assert len(of_item(sandbox, WID, "work.started")) == 1
    sandbox.close()
