"""Delegated work authority (§9.1): a Grant is checked at every use."""

from __future__ import annotations

from typing import Any

import pytest

from .world import CAP, World

TARGET = "urn:mwp-local:work:feature"
CHILD = "urn:mwp-local:work:feature-part"
GRANT = "urn:mwp-local:grant:1"


def _budget(limit: float = 6) -> dict[str, Any]:
    return {
        "currency": "EUR",
        "financialLimit": limit,
        "modelTokenLimit": 1000,
        "toolCallLimit": 10,
        "computeSecondsLimit": 100,
        "wallClockSecondsLimit": 100,
        "externalSideEffectLimit": 0,
    }


@pytest.fixture
def world() -> World:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.authorize(TARGET)
    delegate = w.org.get("worker-b").actor
    w.ok(
        "coordinator",
        "membership.change",
        {"member": delegate, "role": "work_delegate", "state": "active"},
    )
    w.ok(
        "coordinator",
        "membership.grant_delegation",
        {
            "grantId": GRANT,
            "granteeAgentId": delegate["id"],
            "targetWorkItemId": TARGET,
            "allowedCapabilities": [{"id": CAP[0], "version": "2.0.0"}],
            "budget": _budget(),
            "maxDescendantDepth": 1,
            "expiresAt": w.at(3600),
        },
    )
    return w


def _authorize(w: World, wid: str, parent: str, budget: float = 4, **extra: Any) -> dict[str, Any]:
    contract = w.contract(budget={"currency": "EUR", "financialLimit": budget})
    return {
        "workItemId": wid,
        "contract": contract,
        "parentWorkItemId": parent,
        "grantId": GRANT,
        **extra,
    }


def test_a_delegate_authorizes_and_offers_within_its_grant(world: World) -> None:
    world.ok("worker-b", "work.authorize", _authorize(world, CHILD, TARGET))
    world.ok(
        "worker-b",
        "work.offer",
        {
            "workItemId": CHILD,
            "agentId": world.org.get("worker-a").id,
            "expiresAt": world.at(60),
            "selectionBasis": world.basis(),
            "grantId": GRANT,
        },
    )
    assert world.state.grants[GRANT]["used"] == {"financial": 4}
    assert str(world.state.work_items[CHILD].state) == "offered"


def test_cumulative_budget_under_a_grant_is_capped(world: World) -> None:
    world.ok("worker-b", "work.authorize", _authorize(world, CHILD, TARGET))
    world.refuse(
        "AUTH_FORBIDDEN",
        "worker-b",
        "work.authorize",
        _authorize(world, CHILD + "-2", TARGET, budget=3),
    )


def test_a_delegate_cannot_reach_outside_the_subtree_or_beyond_depth(world: World) -> None:
    world.authorize("urn:mwp-local:work:elsewhere")
    world.refuse(
        "AUTH_FORBIDDEN",
        "worker-b",
        "work.authorize",
        _authorize(world, CHILD, "urn:mwp-local:work:elsewhere"),
    )
    world.ok("worker-b", "work.authorize", _authorize(world, CHILD, TARGET, budget=1))
    world.refuse(
        "AUTH_FORBIDDEN",
        "worker-b",
        "work.authorize",
        _authorize(world, CHILD + "-deep", CHILD, budget=1),
    )


def test_a_replaced_coordinator_invalidates_its_grants(world: World) -> None:
    world.ok(
        "mission-owner",
        "mission.assign_coordinator",
        {"coordinatorAgentId": world.org.get("reviewer").id},
    )
    rejected = world.refuse(
        "AUTH_FORBIDDEN", "worker-b", "work.authorize", _authorize(world, CHILD, TARGET)
    )
    assert "replaced" in rejected.error.explanation


def test_a_grant_is_not_transferable_and_needs_the_role(world: World) -> None:
    other = world.org.get("worker-a").actor
    world.ok(
        "coordinator",
        "membership.change",
        {"member": other, "role": "work_delegate", "state": "active"},
    )
    rejected = world.refuse(
        "AUTH_FORBIDDEN", "worker-a", "work.authorize", _authorize(world, CHILD, TARGET)
    )
    assert "non-transferable" in rejected.error.explanation
    delegate = world.org.get("worker-b").actor
    world.ok(
        "coordinator",
        "membership.change",
        {"member": delegate, "role": "observer", "state": "active"},
    )
    rejected = world.refuse(
        "AUTH_FORBIDDEN", "worker-b", "work.authorize", _authorize(world, CHILD, TARGET)
    )
    assert "work_delegate" in rejected.error.explanation


def test_without_a_grant_a_worker_may_only_propose(world: World) -> None:
    world.ok("worker-b", "work.propose", {"summary": "We also need docs"})
    payload = _authorize(world, CHILD, TARGET)
    del payload["grantId"]
    world.refuse("AUTH_FORBIDDEN", "worker-b", "work.authorize", payload)
