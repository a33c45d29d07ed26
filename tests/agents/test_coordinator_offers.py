"""Offers: exclusive work to the highest-ranked eligible Worker, one at a time; urgent work to a
bounded candidate set where the first acceptance wins and the others are withdrawn; expiry
appends nothing (MWP-WRK-004). Every offer records a structured selection basis ranked on
capability, eligibility, availability, cost and capability-specific reliability Evidence
(MWP-WRK-006)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.coordinator.contracts import DECLINE_SCHEMA
from mwp_local.agents.coordinator.offers import (
    MAX_ROUND_BACKOFF,
    OFFER_TTL_US,
    URGENT_CANDIDATES,
    OfferBook,
    Track,
    owned_by_agent,
    rank,
)
from mwp_local.agents.naming import agent_id
from mwp_local.artifacts.evidence import private_reasoning_paths
from mwp_local.protocol.documents import validate
from mwp_local.protocol.timestamps import parse_timestamp

from .coordinator_harness import (
    base_file,
    events,
    hand,
    has_item,
    item,
    make,
    mission_state,
    run_until,
    runtime_of,
    send,
)

BASIS = {
    "requiredCapabilities",
    "verifiedMatches",
    "authorizationEligible",
    "availabilityEstimate",
    "expectedCost",
    "reliabilityEvidence",
    "policyRulesApplied",
}


def _work(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "id": f"w{i}",
            "goal": f"Build part {i}",
            "capability": "mwp.build@1.0.0",
            "duration": "15m",
            "budget": {"financial": 10},
            **extra,
        }
        for i in range(1, n + 1)
    ]


def _crowd(raw: dict[str, Any], names: list[str]) -> dict[str, Any]:
    for name in names:
        raw["agents"].append(
            {"name": name, "capabilities": ["mwp.build@1.1.0"], "max_concurrency": 2}
        )
    return raw


@pytest.mark.req("MWP-WRK-004")
def test_exclusive_work_is_offered_to_one_worker_at_a_time(tmp_path: Path) -> None:
    sandbox = make(tmp_path, base_file(work=_work(4)))
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    open_offers: dict[str, dict[str, int]] = {}
    for event in events(sandbox, "work.offer.created"):
        payload = event["payload"]
        at = parse_timestamp(event["occurredAt"]).epoch_micros
        assert len(payload["offers"]) == 1 and payload["urgent"] is False
        earlier = open_offers.setdefault(payload["workItemId"], {})
        still_open = {o for o, expiry in earlier.items() if expiry > at}
        assert still_open <= set(payload["withdrawnOfferIds"])
        for offer in payload["offers"]:
            earlier[offer["offerId"]] = parse_timestamp(offer["expiresAt"]).epoch_micros
    for event in events(sandbox, "work.offer.accepted"):
        assert event["payload"]["lostOfferIds"] == []


@pytest.mark.req("MWP-WRK-004")
def test_urgent_work_goes_to_a_bounded_set_and_the_first_acceptance_wins(tmp_path: Path) -> None:
    raw = _crowd(base_file(work=_work(1, urgency="critical")), ["w3", "w4"])
    sandbox = make(tmp_path, raw)
    run_until(sandbox, lambda s: has_item(s, "w1") and item(s, "w1").owner is not None)
    offer = events(sandbox, "work.offer.created")[0]["payload"]
    candidates = [o["agentId"] for o in offer["offers"]]
    assert offer["urgent"] is True and len(candidates) == URGENT_CANDIDATES
    accepted = events(sandbox, "work.offer.accepted")[0]["payload"]
    winner = accepted["owner"]["agentId"]
    losers = [o["offerId"] for o in offer["offers"] if o["agentId"] != winner]
    assert sorted(accepted["lostOfferIds"]) == sorted(losers)
    assert all(sandbox.log.state.offers[o].status == "lost_race" for o in losers)
    # a loser that accepts late is told the item is owned; one that tries to start is refused
    loser = next(c for c in candidates if c != winner).rsplit(":", 1)[-1]
    late = hand(
        sandbox,
        loser,
        "work.accept_offer",
        {"workItemId": accepted["workItemId"]},
        expected_revision=item(sandbox, "w1").revision,
    )
    assert late.error.code.value == "WORK_ALREADY_OWNED"  # type: ignore[union-attr]
    start = hand(
        sandbox, loser, "work.start", {"workItemId": accepted["workItemId"], "ownershipEpoch": 1}
    )
    assert start.error.code.value in ("AUTH_FORBIDDEN", "INVALID_STATE_TRANSITION")  # type: ignore[union-attr]
    sandbox.run()
    starters = {
        e["actor"]["id"]
        for e in events(sandbox, "work.started")
        if e["payload"]["workItemId"] == accepted["workItemId"]
    }
    assert starters == {winner}


@pytest.mark.req("MWP-WRK-006")
def test_every_offer_records_a_structured_selection_basis_without_reasoning(
    tmp_path: Path,
) -> None:
    raw = _crowd(base_file(work=_work(2)), ["w3"])
    raw["missions"][0]["work"].append(
        {"id": "hot", "goal": "Fix it now", "capability": "mwp.build@1.0.0", "urgency": "high"}
    )
    sandbox = make(tmp_path, raw)
    sandbox.run()
    offers = events(sandbox, "work.offer.created")
    assert offers
    for event in offers:
        basis = event["payload"]["selectionBasis"]
        assert set(basis) == BASIS
        assert basis["authorizationEligible"] is True
        assert basis["expectedCost"] >= 0
        parse_timestamp(basis["availabilityEstimate"])
        assert {m["id"] for m in basis["verifiedMatches"]} == {"mwp.build"}
        assert any(r.startswith("rank:") for r in basis["policyRulesApplied"])
        assert any(r.startswith("candidate ") for r in basis["policyRulesApplied"])
        assert private_reasoning_paths(basis) == []
    for wid in {e["payload"]["workItemId"] for e in offers}:
        validate("work-item", sandbox.log.state.work_item_document(wid))


def _view_and_item(tmp_path: Path) -> tuple[Any, Any]:
    sandbox = make(tmp_path, base_file())
    run_until(sandbox, lambda s: has_item(s, "a"))
    return runtime_of(sandbox, "coord").view, item(sandbox, "a")


@pytest.mark.req("MWP-WRK-006")
def test_ranking_prefers_the_worker_with_the_better_track_record(tmp_path: Path) -> None:
    view, a = _view_and_item(tmp_path)
    now = parse_timestamp("2026-07-15T09:00:00Z").epoch_micros
    book = OfferBook()
    book.tracks[(agent_id("w1"), "mwp.build")] = Track(failed=3, evidence=["urn:ev:f1"])
    book.tracks[(agent_id("w2"), "mwp.build")] = Track(verified=2, evidence=["urn:ev:v1"])
    ranked = rank(view, a, now, book, duration_s=1200, owned=owned_by_agent(view))
    assert [c.agent_id for c in ranked] == [agent_id("w2"), agent_id("w1")]
    best = ranked[0]
    assert best.reliability == pytest.approx(3 / 4)
    assert best.evidence == ("urn:ev:v1",)
    assert best.score_s == pytest.approx(1200 / 0.75)
    # expected cost: the financial ceiling per attempt times the expected attempts
    assert best.expected_cost == pytest.approx(20 / 2 * (4 / 3), abs=0.01)
    # the Coordinator, the reviewer named for other work and excluded Agents never appear
    assert agent_id("coord") not in [c.agent_id for c in ranked]
    book.exclude(a.work_item_id, agent_id("w2"))
    again = rank(view, a, now, book, duration_s=1200, owned=owned_by_agent(view))
    assert [c.agent_id for c in again] == [agent_id("w1")]


@pytest.mark.req("MWP-WRK-006")
def test_ranking_prefers_the_worker_that_is_free_sooner(tmp_path: Path) -> None:
    view, a = _view_and_item(tmp_path)
    now = parse_timestamp("2026-07-15T09:00:00Z").epoch_micros
    busy = a.__class__(
        **{
            **{f: getattr(a, f) for f in a.__dataclass_fields__},
            "schedule_estimate": {"estimatedCompletion": "2026-07-15T11:00:00Z"},
        }
    )
    owned = {agent_id("w1"): [busy, busy]}  # w1 declares two slots, both taken until 11:00
    ranked = rank(view, a, now, OfferBook(), duration_s=600, owned=owned)
    assert [c.agent_id for c in ranked] == [agent_id("w2"), agent_id("w1")]
    assert ranked[1].available_us == parse_timestamp("2026-07-15T11:00:00Z").epoch_micros
    assert ranked[0].available_us == now


@pytest.mark.req("MWP-WRK-006")
def test_reliability_evidence_comes_from_observed_outcomes(tmp_path: Path) -> None:
    raw = base_file(work=[{**_work(1)[0], "reviewed_by": "rev"}])
    raw["agents"][3]["behaviour"] = {"reject_rate": 1.0}
    sandbox = make(tmp_path, raw)
    sandbox.run()
    failures = [
        e for e in events(sandbox, "work.failed") if e["payload"]["workItemId"].endswith(":w1")
    ]
    first_owner = failures[0]["payload"]["evidence"][0]["details"]["review"]
    book = runtime_of(sandbox, "coord").policy.offers  # type: ignore[attr-defined]
    w1_track = book.track(agent_id("w1"), "mwp.build")
    assert w1_track.failed >= 1
    assert failures[0]["payload"]["evidence"][0]["evidenceId"] in w1_track.evidence
    retry = events(sandbox, "work.offer.created")
    retry = [e for e in retry if e["payload"]["workItemId"].endswith(":w1")][1]
    assert retry["payload"]["offers"][0]["agentId"] == agent_id("w2")
    assert first_owner["verdict"] == "rejected"
    review_track = book.track(agent_id("rev"), "mwp.review")
    assert review_track.verified >= 1 and review_track.evidence


@pytest.mark.req("MWP-WRK-004")
def test_a_declined_offer_moves_on_to_the_next_worker_at_once(tmp_path: Path) -> None:
    sandbox = make(tmp_path, base_file())
    run_until(sandbox, lambda s: has_item(s, "a") and str(item(s, "a").state) == "offered")
    a = item(sandbox, "a")
    first = sandbox.log.state.offers[a.offer_ids[-1]]
    assert first.agent_id == agent_id("w1")
    declined = hand(
        sandbox,
        "w1",
        "message.post",
        {
            "conversationId": a.conversation_id,
            "workItemId": a.work_item_id,
            "content": [
                {"type": "text", "text": "Declining the offer: capacity."},
                {
                    "type": "data_ref",
                    "schema": DECLINE_SCHEMA,
                    "data": {"offerId": first.offer_id, "reason": "capacity"},
                },
            ],
        },
    )
    assert declined.ok
    coordinator = runtime_of(sandbox, "coord")
    wanted = coordinator.intents(sandbox.clock.now_us())
    reoffer = next(i for i in wanted if i.kind == "work.offer")
    assert [o["agentId"] for o in reoffer.payload["offers"]] == [agent_id("w2")]
    assert send(sandbox, "coord", reoffer).ok
    assert sandbox.log.state.offers[first.offer_id].status == "withdrawn"
    assert sandbox.clock.now_us() < first.expires_us  # it did not wait for the expiry


@pytest.mark.req("MWP-WRK-004")
def test_an_expired_offer_appends_nothing_and_the_next_worker_is_offered(tmp_path: Path) -> None:
    raw = base_file()
    raw["faults"] = [{"agent": "w1", "kind": "pause", "at": 0, "for": "1h"}]
    sandbox = make(tmp_path, raw)
    run_until(sandbox, lambda s: len(events(s, "work.offer.created")) == 2)
    first, second = events(sandbox, "work.offer.created")
    expiry = first["payload"]["offers"][0]["expiresAt"]
    assert first["payload"]["offers"][0]["agentId"] == agent_id("w1")
    assert second["payload"]["offers"][0]["agentId"] == agent_id("w2")
    assert second["occurredAt"] >= expiry
    between = [
        e
        for e in events(sandbox)
        if first["occurredAt"] < e["occurredAt"] < second["occurredAt"]
        and e.get("workItemId") == first["payload"]["workItemId"]
    ]
    assert between == []  # the expiry itself appended nothing
    sandbox.run()
    assert mission_state(sandbox) == "approved"


@pytest.mark.req("MWP-WRK-004")
def test_an_acceptance_after_the_offer_expired_is_refused(tmp_path: Path) -> None:
    raw = base_file()
    raw["faults"] = [{"agent": "w1", "kind": "pause", "at": 0, "for": "1h"}]
    sandbox = make(tmp_path, raw)
    run_until(sandbox, lambda s: has_item(s, "a") and str(item(s, "a").state) == "offered")
    a = item(sandbox, "a")
    offer = sandbox.log.state.offers[a.offer_ids[-1]]
    sandbox.clock.advance_to(offer.expires_us + 1_000_000)
    late = hand(
        sandbox,
        "w1",
        "work.accept_offer",
        {"workItemId": a.work_item_id, "offerId": offer.offer_id},
        expected_revision=a.revision,
    )
    assert late.error.code.value == "WORK_OFFER_EXPIRED"  # type: ignore[union-attr]
    assert item(sandbox, "a").owner is None and item(sandbox, "a").revision == a.revision


@pytest.mark.req("MWP-WRK-004")
def test_work_nobody_takes_is_offered_less_and_less_often() -> None:
    """When every eligible Worker passed, the round starts over after one offer lifetime, then
    two, four, ... (capped): a WorkItem whose only candidate never answers is not re-offered
    forever at the same pace."""
    book = OfferBook()
    wid = "urn:mwp-local:work:m:a"
    now, starts = 0, []
    while now < 200 * OFFER_TTL_US:
        book.exclude(wid, "urn:mwp-local:agent:silent")
        if book.start_over(wid, now):
            starts.append(now)
        now += OFFER_TTL_US // 4
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps[:6] == [OFFER_TTL_US * f for f in (1, 2, 4, 8, 16, 32)]
    assert set(gaps[6:]) == {OFFER_TTL_US * MAX_ROUND_BACKOFF}
    assert len(starts) < 12  # against 200 rounds at a constant pace
