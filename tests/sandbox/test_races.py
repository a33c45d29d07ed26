"""Urgent-offer races with real threads (MWP-WRK-004): the Coordinator offers each urgent
WorkItem to a bounded candidate set; each candidate Worker, in its own thread, decides to
accept and all of them submit at the same moment (a barrier) to one shared GroupLog. Repeated
for 100 WorkItems: exactly one winner each time, every loser's offer withdrawn (``lost_race``,
in the winner's own Event), every late acceptance refused, and no loser ever starts the item
(its policy never asks to, and the log holds the winner's start only).

Threads only race; between phases the main thread delivers the committed Events to every
runtime, so no runtime is touched by two threads at once. Time is virtual (one second per
round), so the outcome does not depend on the machine's speed; which candidate wins does.
"""

from __future__ import annotations

import json
import random
import threading
from typing import Any

import pytest

from mwp_local.agents.base import Intent
from mwp_local.agents.coordinator.core import CoordinatorPolicy
from mwp_local.agents.coordinator.offers import URGENT_CANDIDATES
from mwp_local.agents.naming import mission_id
from mwp_local.agents.owner import MissionOwnerPolicy
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.specs import Behaviour, MissionSpec, WorkSpec
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.authority import Accepted
from mwp_local.authority.organization import Organization
from mwp_local.authority.pipeline import Outcome
from mwp_local.drivers.clock import timestamp
from mwp_local.protocol.timestamps import format_utc, parse_timestamp
from mwp_local.store.group_log import GroupLog
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.sandbox_dir import bootstrap

pytestmark = pytest.mark.threads

ROUNDS = 100
WORKERS = ("w1", "w2", "w3", "w4")
CAPABILITY = ("mwp.build", "1.0.0")
START = parse_timestamp("2026-07-15T09:00:00Z").epoch_micros


class Race:
    """One Organization, one shared GroupLog, an owner, a Coordinator and four Workers."""

    def __init__(self) -> None:
        agents: dict[str, Any] = {
            "coord": {"capabilities": [("mwp.coordination", "1.0.0")], "max_concurrency": 4}
        }
        agents.update({w: {"capabilities": [CAPABILITY], "max_concurrency": 64} for w in WORKERS})
        self.org = Organization.create(17, humans=("olga",), agents=agents)
        self.log = GroupLog(self.org, MemoryLogStore())
        self.now = START
        bootstrap(self.log, timestamp(self.now))
        spec = MissionSpec(
            id="race",
            objective="Many urgent fixes",
            owner="olga",
            coordinator="coord",
            deadline_s=7 * 86400,
            budget={"financial": 10000},
            work=tuple(
                WorkSpec(
                    id=f"fix-{n}",
                    goal=f"Urgent fix {n}",
                    capability=CAPABILITY,
                    urgency="critical",
                    budget={"financial": 10},
                )
                for n in range(1, ROUNDS + 1)
            ),
        )
        self.owner = AgentRuntime(self.org, self.org.get("olga"), MissionOwnerPolicy([spec], START))
        self.coordinator = AgentRuntime(
            self.org, self.org.get("coord"), CoordinatorPolicy([spec], START)
        )
        self.workers = {
            name: AgentRuntime(
                self.org,
                self.org.get(name),
                WorkerPolicy(
                    capabilities=dict([CAPABILITY]),
                    max_concurrency=64,
                    behaviour=Behaviour(),
                    rng=random.Random(f"race:{name}"),
                ),
            )
            for name in WORKERS
        }
        self.everyone = [self.owner, self.coordinator, *self.workers.values()]
        self.deliver([e.document for e in self.log.store.events()])

    def deliver(self, documents: list[Any]) -> None:
        events = [json.loads(d) if isinstance(d, str) else d for d in documents]
        for runtime in self.everyone:
            runtime.deliver(events)

    def act(self, runtime: AgentRuntime, intent: Intent) -> Outcome:
        """Sign and submit one Intent (no delivery: the caller delivers)."""
        at = timestamp(self.now)
        outcome = self.log.submit(runtime.command(intent, format_utc(self.now)), at)
        runtime.outcome(intent, outcome, self.now)
        return outcome

    def drive(self, runtime: AgentRuntime, kind: str) -> int:
        """Let ``runtime`` send its Intents of ``kind`` until it wants none (main thread)."""
        sent = 0
        while True:
            wanted = [i for i in runtime.intents(self.now) if i.kind == kind]
            if not wanted:
                return sent
            outcome = self.act(runtime, wanted[0])
            assert isinstance(outcome, Accepted), outcome
            self.deliver(list(outcome.event_documents))
            sent += 1

    def in_threads(self, names: list[str], work: Any) -> dict[str, Any]:
        """Run ``work(runtime)`` for each named Worker in its own thread; re-raise failures."""
        results: dict[str, Any] = {}
        errors: list[BaseException] = []
        barrier = threading.Barrier(len(names))

        def run(name: str) -> None:
            try:
                results[name] = work(self.workers[name], barrier)
            except BaseException as exc:  # surfaced below
                errors.append(exc)
                barrier.abort()

        threads = [threading.Thread(target=run, args=(n,), name=f"race-{n}") for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a racing thread hung"
        if errors:
            raise errors[0]
        return results


def _accept_at_once(race: Race, wid: str) -> Any:
    def work(runtime: AgentRuntime, barrier: threading.Barrier) -> tuple[Intent | None, Any]:
        wanted = [
            i
            for i in runtime.intents(race.now)
            if i.kind == "work.accept_offer" and i.payload["workItemId"] == wid
        ]
        barrier.wait()  # every candidate decided before anyone's acceptance is committed
        if not wanted:
            return None, None
        return wanted[0], race.act(runtime, wanted[0])

    return work


def _start_if_wanted(race: Race, wid: str) -> Any:
    def work(runtime: AgentRuntime, barrier: threading.Barrier) -> list[Outcome]:
        starts = [
            i
            for i in runtime.intents(race.now)
            if i.kind == "work.start" and i.payload["workItemId"] == wid
        ]
        barrier.wait()
        return [race.act(runtime, i) for i in starts]

    return work


@pytest.mark.req("MWP-WRK-004")
def test_urgent_offer_races_have_exactly_one_winner_and_no_loser_ever_starts() -> None:
    race = Race()
    assert race.drive(race.owner, "mission.create") == 1
    assert race.drive(race.coordinator, "work.authorize") == ROUNDS
    winners: dict[str, str] = {}
    for n in range(1, ROUNDS + 1):
        race.now += 1_000_000
        offer = next(i for i in race.coordinator.intents(race.now) if i.kind == "work.offer")
        wid = offer.payload["workItemId"]
        assert wid not in winners
        outcome = race.act(race.coordinator, offer)
        assert isinstance(outcome, Accepted)
        race.deliver(list(outcome.event_documents))
        created = outcome.event_documents[-1]["payload"]
        candidates = [o["agentId"].rsplit(":", 1)[-1] for o in created["offers"]]
        assert created["urgent"] and len(candidates) == URGENT_CANDIDATES

        answers = race.in_threads(candidates, _accept_at_once(race, wid))
        accepted = {name: out for name, (_, out) in answers.items() if out is not None and out.ok}
        assert len(accepted) == 1, f"round {n}: {len(accepted)} winners"
        ((winner, won),) = accepted.items()
        winners[wid] = winner
        for name, (_, out) in answers.items():
            if name != winner and out is not None:
                assert out.error.code.value == "WORK_ALREADY_OWNED", out
        race.deliver(list(won.event_documents))
        event = won.event_documents[0]["payload"]
        offers = {o["agentId"].rsplit(":", 1)[-1]: o["offerId"] for o in created["offers"]}
        losers = sorted(offers[c] for c in candidates if c != winner)
        assert sorted(event["lostOfferIds"]) == losers  # withdrawn in the winning Event
        assert all(race.log.state.offers[o].status == "lost_race" for o in losers)

        starts = race.in_threads(candidates, _start_if_wanted(race, wid))
        for name, outcomes in starts.items():
            if name != winner:
                assert outcomes == [], f"round {n}: loser {name} asked to start {wid}"
        for out in starts[winner]:
            assert out.ok
            race.deliver(list(out.event_documents))

    item_starts: dict[str, set[str]] = {}
    acceptances: dict[str, int] = {}
    for record in race.log.store.events():
        event = json.loads(record.document)
        wid = event["payload"].get("workItemId")
        if event["kind"] == "work.started":
            item_starts.setdefault(wid, set()).add(event["actor"]["id"].rsplit(":", 1)[-1])
        elif event["kind"] == "work.offer.accepted":
            acceptances[wid] = acceptances.get(wid, 0) + 1
    assert len(winners) == ROUNDS
    assert all(n == 1 for n in acceptances.values()) and len(acceptances) == ROUNDS
    for wid, starters in item_starts.items():
        assert starters == {winners[wid]}
    refused = [r.code for r in race.log.store.rejections()]
    # every loser really raced: it decided to accept and was refused, never silently skipped
    assert refused == ["WORK_ALREADY_OWNED"] * (ROUNDS * (URGENT_CANDIDATES - 1))
    assert race.log.state.missions[mission_id("race")].state.value == "active"
