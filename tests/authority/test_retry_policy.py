"""The Authority holds a Work Contract's retry policy (issue 21 point 8, §11.4, MWP-WRK-018).

A client that does not behave re-offers and restarts a failed WorkItem at once: with
``maxAttempts`` 1 the re-offer is refused (no attempt left), with attempts left but a 10-minute
backoff the start one second after the failure is refused (and names when it becomes possible),
and no new attempt starts after the contract's deadline. Each is ``INVALID_COMMAND`` and changes
nothing (``World.refuse``, on DuckDB too). Resuming the same attempt after a checkpoint is not a
new attempt and is not held to the backoff.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.protocol.timestamps import format_utc, parse_timestamp

from .world import WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
CODE = "INVALID_COMMAND"


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _policy(max_attempts: int, backoff: str = "fixed", delay: str = "PT10M") -> dict[str, Any]:
    return {
        "maxAttempts": max_attempts,
        "backoff": backoff,
        "maxDelay": delay,
        "retryableFailures": ["TRANSIENT"],
    }


def _fail(w: World) -> None:
    w.ok(
        "worker-a",
        "work.fail",
        {
            **w.lease(WID),
            "evidence": [w.evidence(WID, "sha256:" + "1" * 64, kind="failure_report")],
        },
    )


def _failed_once(w: World, **contract: Any) -> None:
    w.authorize(WID, **contract)
    w.offer(WID)
    w.accept(WID)
    w.start(WID)
    _fail(w)
    assert w.state.work_items[WID].failures == 1


def _start(w: World) -> dict[str, Any]:
    return {"workItemId": WID, "ownershipEpoch": w.state.work_items[WID].ownership_epoch}


@pytest.mark.req("MWP-WRK-018")
def test_a_reoffer_after_the_only_attempt_failed_is_refused(world: World) -> None:
    _failed_once(world, retryPolicy=_policy(1))
    world.advance(1)
    rejected = world.refuse(
        CODE,
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "agentId": world.org.get("worker-b").id,
            "expiresAt": world.at(300),
            "selectionBasis": world.basis(),
        },
    )
    assert rejected.error.details == {"failures": 1, "maxAttempts": 1}
    assert "§11.4" in str(rejected.error.rule)


@pytest.mark.req("MWP-WRK-018")
def test_a_start_within_the_backoff_is_refused_and_names_when_it_may_start(
    world: World,
) -> None:
    _failed_once(world, retryPolicy=_policy(3))
    failed_at = world.now_us
    world.advance(1)
    world.offer(WID)  # attempts are left: the re-offer itself is fine
    world.accept(WID)
    rejected = world.refuse(CODE, "worker-a", "work.start", _start(world))
    assert rejected.error.details["retryAfter"] == format_utc(failed_at + 600_000_000)


@pytest.mark.req("MWP-WRK-018")
def test_a_start_after_the_backoff_is_accepted(world: World) -> None:
    _failed_once(world, retryPolicy=_policy(3, "exponential", "PT10M"))
    world.advance(1.5)  # the exponential backoff after one failure is one second
    world.offer(WID)
    world.accept(WID)
    world.ok("worker-a", "work.start", _start(world))
    assert world.state.work_items[WID].state == "active"


@pytest.mark.req("MWP-WRK-018")
def test_no_new_attempt_starts_after_the_contract_deadline(world: World) -> None:
    deadline = format_utc(parse_timestamp(world.at(120)).epoch_micros)
    world.authorize(WID, deadline=deadline)
    world.offer(WID)
    world.accept(WID)
    world.advance(121)
    rejected = world.refuse(CODE, "worker-a", "work.start", _start(world))
    assert rejected.error.details == {"deadline": deadline}
