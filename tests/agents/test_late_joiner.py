"""A late joiner starts from its Context Package (§8, §13.3; MWP-WRK-027), and trusts nothing
the fetch hands it unchecked.

The learning Mission runs to its end; then a fresh runtime of its Worker ``dev`` (whose
visibility starts after the Mission's first Events) is handed what it may receive, folded here
from the Membership Events, while its ``fetch_context`` returns forged answers: an Event the
package does not cite, or a cited one whose payload was altered after signing. Either way the
runtime folds none of them, records the refusal with its section-19 code, and holds nothing
from before its visibility start. Through the honest gate it holds, from before its start,
exactly Events the packages addressed to it cite.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from mwp_local.agents.base import BasePolicy
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.artifacts.context_packages import cited_event_ids, gate_cited_events
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.agent_store import MemoryLocalStore

from ..delivery.helpers import SAMPLES, visible_spans, visible_to

pytestmark = pytest.mark.req("MWP-WRK-027")


class Idle(BasePolicy):
    """Listens only."""


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(
        tmp_path_factory.mktemp("late") / "run", SAMPLES / "learn.toml", seed=2, worker_files=False
    )
    assert sandbox.run().finished
    return sandbox


def _events(run: Sandbox) -> list[dict[str, Any]]:
    return [json.loads(e.document) for e in run.log.store.events()]


def _grant(events: list[dict[str, Any]], member_id: str) -> dict[str, Any]:
    return next(
        e
        for e in events
        if e["kind"] == "membership.changed"
        and e["payload"]["membership"]["member"]["id"] == member_id
        and "contextPackage" in e["payload"]
    )


def _late(
    run: Sandbox, fetch: Callable[[dict[str, Any]], list[dict[str, Any]]]
) -> tuple[AgentRuntime, int]:
    """``dev`` handed what it may receive, with ``fetch`` as its gate; and its start."""
    events = _events(run)
    member = run.log.org.get("dev")
    ((start, _), *_) = visible_spans(events)[(member.id, _grant(events, member.id)["groupId"])]
    assert start > 1  # it joined late
    runtime = AgentRuntime(
        run.log.org, member, Idle(), local=MemoryLocalStore(), fetch_context=fetch
    )
    runtime.deliver(copy.deepcopy(visible_to(member.id, events)))
    runtime.flush()
    return runtime, start


def _nothing_before(runtime: AgentRuntime, group: str, start: int) -> None:
    assert runtime.local is not None
    held = [r.sequence for r in runtime.local.load().events if r.group_id == group]
    assert held and min(held) == start
    assert runtime.seeded == []


def _cited_before_start(run: Sandbox) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    events = _events(run)
    grant = _grant(events, run.log.org.get("dev").id)
    start = int(grant["payload"]["membership"]["visibilityStartSequence"])
    package = grant["payload"]["contextPackage"]
    cited = set(cited_event_ids(package))
    return package, [e for e in events if e["eventId"] in cited and e["sequence"] < start], start


def test_an_uncited_event_from_the_fetch_is_refused_and_nothing_is_folded(run: Sandbox) -> None:
    package, cited, _ = _cited_before_start(run)
    group = package["groupId"]
    uncited = next(
        e
        for e in _events(run)
        if e.get("groupId") == group and e["eventId"] not in set(cited_event_ids(package))
    )
    runtime, start = _late(run, lambda _p: [*copy.deepcopy(cited), copy.deepcopy(uncited)])
    # every package it was handed was refused (the grant's first), each with the same code
    assert runtime.seed_refused[0] == (package["contextPackageId"], "PROTOCOL_VIOLATION")
    assert {code for _, code in runtime.seed_refused} == {"PROTOCOL_VIOLATION"}
    _nothing_before(runtime, group, start)
    assert group not in runtime.replica.groups  # not even the Mission entered the replica


def test_a_tampered_cited_event_is_refused_and_nothing_is_folded(run: Sandbox) -> None:
    package, cited, _ = _cited_before_start(run)
    forged = copy.deepcopy(cited)
    forged[-1]["payload"]["tampered"] = True  # after signing
    runtime, start = _late(run, lambda _p: forged)
    assert runtime.seed_refused[0] == (package["contextPackageId"], "AUTH_INVALID_SIGNATURE")
    _nothing_before(runtime, package["groupId"], start)
    assert package["groupId"] not in runtime.replica.groups


def test_through_the_honest_gate_it_holds_before_its_start_only_what_packages_cite(
    run: Sandbox,
) -> None:
    member = run.log.org.get("dev")
    events = _events(run)

    def gate(package: dict[str, Any]) -> list[dict[str, Any]]:
        mine = [e for e in events if e.get("groupId") == package["groupId"]]
        return gate_cited_events(run.log.state, mine, package, member.id)

    runtime, start = _late(run, gate)
    package, cited, _ = _cited_before_start(run)
    assert runtime.seed_refused == [] and runtime.seeded
    assert runtime.seeded[0] == (package["contextPackageId"], len(cited))
    addressed: set[str] = set()
    for e in events:  # every package addressed to dev: in its grants and in offers to it
        p = e.get("payload") or {}
        to = [p["membership"]["member"]["id"]] if "membership" in p else []
        to += [o["agentId"] for o in p.get("offers", ())]
        if "contextPackage" in p and member.id in to:
            addressed |= set(cited_event_ids(p["contextPackage"]))
    assert runtime.local is not None
    before = [
        r.event_id
        for r in runtime.local.load().events
        if r.group_id == package["groupId"] and r.sequence < start
    ]
    assert before and set(before) <= addressed
    assert package["groupId"] in runtime.replica.groups  # it can act in the Group
