"""Admission control before a Worker accepts an offer (MWP-WRK-005) and essential ambiguities
raised in the WorkItem Conversation instead of an acceptance (MWP-WRK-002).

Each structured decline reason is provoked on its own (the declining Worker posts a Message in
the WorkItem Conversation with a ``data_ref`` naming the reason and does not accept), and the
same offer without the obstacle is accepted."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.worker.admission import (
    DECLINE_SCHEMA,
    QUESTION_SCHEMA,
    CostModel,
    Eligibility,
    ambiguities,
)
from mwp_local.protocol.tables import WorkItemState

from .worker_world import CAP, World, act, data_refs, started_world, worker

WID = "urn:mwp-local:work:feature"
OTHER = "urn:mwp-local:work:other"
REPO = [{"resource": "urn:mwp-local:repo:app", "operations": ["read", "write"]}]


def _offered(world: World, **contract: Any) -> None:
    world.authorize(WID, **contract)
    world.offer(WID)


def _answer(world: World, runtime: AgentRuntime) -> str:
    """Let the Worker answer its offers; 'accepted', or the decline reason it posted."""
    sent = act(world, runtime, ("work.accept_offer", "message.post"))
    assert len(sent) == 1, [i.kind for i in sent]
    if sent[0].kind == "work.accept_offer":
        assert world.state.work_items[WID].state is WorkItemState.QUEUED
        return "accepted"
    assert world.state.work_items[WID].state is WorkItemState.OFFERED
    [(message, data)] = data_refs(world, DECLINE_SCHEMA)
    item = world.state.work_items[WID]
    assert message["conversationId"] == item.conversation_id  # the WorkItem Conversation
    assert message["authority"] is False
    assert data["offerId"] == item.offer_ids[-1]
    assert data["reason"] == data["reasons"][0] and data["details"][data["reason"]]
    return str(data["reason"])


# --------------------------------------------------------------------------- capacity


@pytest.mark.req("MWP-WRK-005")
def test_a_worker_whose_queue_is_full_declines_with_capacity() -> None:
    world = started_world()
    world.authorize(OTHER)
    world.offer(OTHER)
    world.accept(OTHER)
    _offered(world)
    assert _answer(world, worker(world, queue_capacity=1)) == "capacity"


@pytest.mark.req("MWP-WRK-005")
def test_a_worker_with_room_in_its_queue_accepts() -> None:
    world = started_world()
    world.authorize(OTHER)
    world.offer(OTHER)
    world.accept(OTHER)
    _offered(world)
    assert _answer(world, worker(world, queue_capacity=2)) == "accepted"


@pytest.mark.req("MWP-WRK-005")
def test_a_worker_without_execution_slots_declines_with_capacity() -> None:
    world = started_world()
    _offered(world)
    assert _answer(world, worker(world, max_concurrency=0)) == "capacity"


# --------------------------------------------------------------------------- deadline


@pytest.mark.req("MWP-WRK-005")
def test_a_deadline_the_worker_cannot_meet_is_declined_with_deadline() -> None:
    world = started_world()
    _offered(world, deadline=world.at(300))  # the Worker estimates 600 s of work
    assert _answer(world, worker(world)) == "deadline"


@pytest.mark.req("MWP-WRK-005")
def test_a_deadline_the_worker_can_meet_is_accepted() -> None:
    world = started_world()
    _offered(world, deadline=world.at(900))
    assert _answer(world, worker(world)) == "accepted"


@pytest.mark.req("MWP-WRK-005")
def test_the_backlog_ahead_counts_against_the_deadline() -> None:
    world = started_world()
    for n in range(2):
        wid = f"{OTHER}-{n}"
        world.authorize(wid)
        world.offer(wid)
        world.accept(wid)
    _offered(world, deadline=world.at(900))
    assert _answer(world, worker(world, max_concurrency=1, queue_capacity=5)) == "deadline"


# --------------------------------------------------------------------------- capability


@pytest.mark.req("MWP-WRK-005")
def test_an_unavailable_capability_is_declined_with_capability() -> None:
    world = started_world()
    _offered(world)
    runtime = worker(world, unavailable_capabilities=frozenset({CAP[0]}))
    assert _answer(world, runtime) == "capability"


@pytest.mark.req("MWP-WRK-005")
def test_a_capability_version_below_the_contract_is_declined_with_capability() -> None:
    world = started_world()
    _offered(world, requiredCapabilities=[{"id": CAP[0], "version": "2.1.0"}])
    # the Agent Card says 2.1.0, but the runtime actually has 2.0.3 right now
    assert _answer(world, worker(world, capabilities={CAP[0]: "2.0.3"})) == "capability"


@pytest.mark.req("MWP-WRK-005")
def test_an_available_capability_of_a_compatible_version_is_accepted() -> None:
    world = started_world()
    _offered(world, requiredCapabilities=[{"id": CAP[0], "version": "2.0.0"}])
    assert _answer(world, worker(world, capabilities={CAP[0]: "2.1.0"})) == "accepted"


# --------------------------------------------------------------------------- authorization


@pytest.mark.req("MWP-WRK-005")
def test_a_resource_the_worker_is_not_eligible_for_is_declined_with_authorization() -> None:
    world = started_world()
    _offered(world, allowedResources=REPO)
    runtime = worker(world, eligibility=Eligibility(resources=("urn:mwp-local:repo:docs",)))
    assert _answer(world, runtime) == "authorization"


@pytest.mark.req("MWP-WRK-005")
def test_a_risk_class_above_the_workers_clearance_is_declined_with_authorization() -> None:
    world = started_world()
    _offered(world, sideEffectRisk="external")
    assert _answer(world, worker(world, eligibility=Eligibility(max_risk="reversible"))) == (
        "authorization"
    )


@pytest.mark.req("MWP-WRK-005")
def test_an_execution_approval_gate_the_worker_may_not_work_behind_is_declined() -> None:
    world = started_world()
    _offered(world, executionApproval="human_required", sideEffectRisk="high_risk")
    eligibility = Eligibility(execution_approvals=("not_required",))
    assert _answer(world, worker(world, eligibility=eligibility)) == "authorization"


@pytest.mark.req("MWP-WRK-005")
def test_resources_and_risk_within_the_workers_eligibility_are_accepted() -> None:
    world = started_world()
    _offered(world, allowedResources=REPO, sideEffectRisk="reversible")
    eligibility = Eligibility(resources=("urn:mwp-local:repo:",), max_risk="reversible")
    assert _answer(world, worker(world, eligibility=eligibility)) == "accepted"


# --------------------------------------------------------------------------- dependency


@pytest.mark.req("MWP-WRK-005")
def test_a_cancelled_dependency_is_declined_with_dependency() -> None:
    world = started_world()
    world.authorize(OTHER)
    world.ok("coordinator", "work.cancel", {"workItemId": OTHER})
    _offered(world, dependencyWorkItemIds=[OTHER])
    assert _answer(world, worker(world)) == "dependency"


@pytest.mark.req("MWP-WRK-005")
def test_a_dependency_that_failed_for_good_is_declined_with_dependency() -> None:
    world = started_world()
    world.authorize(OTHER, retryPolicy=_retry(max_attempts=1))
    world.offer(OTHER, "worker-b")
    world.accept(OTHER, "worker-b")
    world.start(OTHER, "worker-b")
    world.ok(
        "worker-b",
        "work.fail",
        {
            **world.lease(OTHER),
            "reason": "TRANSIENT",
            "evidence": [_failure(world, OTHER, "worker-b")],
        },
    )
    _offered(world, dependencyWorkItemIds=[OTHER])
    assert _answer(world, worker(world)) == "dependency"


@pytest.mark.req("MWP-WRK-005")
def test_a_live_dependency_is_accepted_even_before_it_is_verified() -> None:
    world = started_world()
    world.authorize(OTHER)
    _offered(world, dependencyWorkItemIds=[OTHER])
    assert _answer(world, worker(world)) == "accepted"


# --------------------------------------------------------------------------- budget


@pytest.mark.req("MWP-WRK-005")
def test_a_budget_below_the_workers_expected_cost_is_declined_with_budget() -> None:
    world = started_world()
    _offered(world, budget={"currency": "EUR", "financialLimit": 10, "computeSecondsLimit": 300})
    assert _answer(world, worker(world)) == "budget"  # 600 s of compute expected


@pytest.mark.req("MWP-WRK-005")
def test_a_financial_budget_below_the_expected_price_is_declined_with_budget() -> None:
    world = started_world()
    _offered(world, budget={"currency": "EUR", "financialLimit": 10})
    runtime = worker(world, cost=CostModel(financial_per_hour=120.0))  # 20 EUR for 600 s
    assert _answer(world, runtime) == "budget"


@pytest.mark.req("MWP-WRK-005")
def test_a_budget_that_covers_the_expected_cost_is_accepted() -> None:
    world = started_world()
    _offered(world, budget={"currency": "EUR", "financialLimit": 30, "computeSecondsLimit": 900})
    assert _answer(world, worker(world, cost=CostModel(financial_per_hour=120.0))) == "accepted"


@pytest.mark.req("MWP-WRK-005", "MWP-WRK-018")
def test_a_reoffer_after_every_attempt_is_used_is_declined_with_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Authority refuses such a re-offer now (tests/authority/test_retry_policy.py); the
    test lifts that check to see the Worker decline it on its own."""
    from mwp_local.authority import retries

    world = started_world()
    world.authorize(WID, retryPolicy=_retry(max_attempts=1))
    world.offer(WID)
    world.accept(WID)
    world.start(WID)
    world.ok(
        "worker-a",
        "work.fail",
        {**world.lease(WID), "reason": "TRANSIENT", "evidence": [_failure(world)]},
    )
    monkeypatch.setattr(retries, "check_reoffer", lambda item: None)
    world.offer(WID)
    monkeypatch.undo()
    assert _answer(world, worker(world)) == "budget"


def _retry(max_attempts: int) -> dict[str, Any]:
    return {
        "maxAttempts": max_attempts,
        "backoff": "fixed",
        "maxDelay": "PT1M",
        "retryableFailures": ["TRANSIENT"],
    }


def _failure(world: World, wid: str = WID, agent: str = "worker-a") -> dict[str, Any]:
    return world.evidence(wid, "sha256:" + "0" * 64, agent, kind="failure_report")


@pytest.mark.req("MWP-WRK-005")
def test_every_failed_check_is_listed_and_the_first_is_the_named_reason() -> None:
    world = started_world()
    _offered(world, deadline=world.at(300), sideEffectRisk="destructive")
    runtime = worker(world, eligibility=Eligibility(max_risk="none"))
    assert _answer(world, runtime) == "deadline"
    [(_, data)] = data_refs(world, DECLINE_SCHEMA)
    assert data["reasons"] == ["deadline", "authorization"]


@pytest.mark.req("MWP-WRK-005")
def test_a_declined_offer_is_answered_once_and_stays_answered_after_a_rebuild() -> None:
    world = started_world()
    _offered(world, deadline=world.at(300))
    runtime = worker(world)
    assert _answer(world, runtime) == "deadline"
    assert act(world, runtime) == []
    assert act(world, worker(world)) == []  # a rebuilt Worker knows it answered (from Events)


# --------------------------------------------------------------------------- ambiguity


AMBIGUOUS = {"ambiguities": ["Which currency do the totals use?", "Round half up or even?"]}


@pytest.mark.req("MWP-WRK-002")
def test_an_essential_ambiguity_is_asked_in_the_conversation_and_not_accepted() -> None:
    world = started_world()
    _offered(world, constraints=AMBIGUOUS)
    runtime = worker(world)
    sent = act(world, runtime)
    assert [i.kind for i in sent] == ["message.post"]
    item = world.state.work_items[WID]
    assert item.state is WorkItemState.OFFERED and item.owner is None
    [(message, data)] = data_refs(world, QUESTION_SCHEMA)
    assert message["conversationId"] == item.conversation_id
    assert data == {
        "offerId": item.offer_ids[-1],
        "contractVersion": 1,
        "questions": AMBIGUOUS["ambiguities"],
    }
    assert data_refs(world, DECLINE_SCHEMA) == []
    assert act(world, runtime) == []  # asked once; still not accepted


@pytest.mark.req("MWP-WRK-002")
def test_a_revised_contract_without_the_ambiguity_is_accepted() -> None:
    world = started_world()
    _offered(world, constraints=AMBIGUOUS)
    runtime = worker(world)
    act(world, runtime)
    revised = world.contract(contractVersion=2, constraints={"ambiguities": [], "currency": "EUR"})
    world.ok(
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "agentId": world.org.get("worker-a").id,
            "expiresAt": world.at(300),
            "selectionBasis": world.basis(),
            "contract": revised,
            "revisionReason": "answered the Worker's questions",
        },
        expected_revision=world.state.work_items[WID].revision,
    )
    sent = act(world, runtime, ("work.accept_offer", "message.post"))
    assert [i.kind for i in sent] == ["work.accept_offer"]
    item = world.state.work_items[WID]
    assert item.state is WorkItemState.QUEUED and item.contract_version == 2


@pytest.mark.req("MWP-WRK-002")
def test_a_contract_without_ambiguities_is_accepted_without_a_question() -> None:
    world = started_world()
    _offered(world, constraints={"ambiguities": []})
    assert _answer(world, worker(world)) == "accepted"
    assert data_refs(world, QUESTION_SCHEMA) == []


def test_only_a_non_empty_list_of_questions_is_an_ambiguity() -> None:
    assert ambiguities({"constraints": {"ambiguities": ["What?"]}}) == ["What?"]
    for contract in (
        {},
        {"constraints": {}},
        {"constraints": {"ambiguities": []}},
        {"constraints": {"ambiguities": "What?"}},
        {"constraints": {"ambiguities": ["  "]}},
    ):
        assert ambiguities(contract) == []
