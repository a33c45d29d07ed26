"""The Coordinator plans an evolving DAG: it starts before the graph is complete, adds WorkItems
as discoveries occur (including Worker proposals it authorizes), runs independent branches in
parallel, offers a WorkItem only when its dependencies satisfy the contract's dependency policy,
and rejects cycles (MWP-WRK-007)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.coordinator.contracts import work_contract
from mwp_local.agents.coordinator.plan import PROPOSAL_DECISION_SCHEMA, REQUIRED_BY
from mwp_local.agents.dag import (
    DependencyPolicyError,
    closes_cycle,
    dependencies_satisfied,
    find_cycle,
)
from mwp_local.agents.naming import agent_id, proposal_item_id, work_item_id
from mwp_local.agents.specs import WorkSpec
from mwp_local.drivers.mission_file import MissionFileError, parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.tables import WorkItemState
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

W = WorkItemState


def _graph_file() -> dict[str, Any]:
    def work(wid: str, **extra: Any) -> dict[str, Any]:
        return {
            "id": wid,
            "goal": f"Do {wid}",
            "capability": "mwp.build@1.0.0",
            "duration": "20m",
            "budget": {"financial": 20},
            **extra,
        }

    return base_file(
        work=[
            work("design"),
            work("api", depends_on=["design"]),
            work("ui", depends_on=["design"]),
            work("docs", discovered_after=["design"]),
            work("release", depends_on=["api", "ui"]),
        ]
    )


@pytest.fixture(scope="module")
def graph(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One run of the graph mission, shared by the tests that only read its log."""
    sandbox = make(tmp_path_factory.mktemp("graph"), _graph_file())
    sandbox.run()
    return sandbox


def _index(docs: list[dict[str, Any]], kind: str, wid: str) -> int:
    return next(
        i
        for i, e in enumerate(docs)
        if e["kind"] == kind
        and (e["payload"].get("workItemId") or e["payload"].get("workItem", {}).get("workItemId"))
        == wid
    )


@pytest.mark.req("MWP-WRK-007")
def test_execution_starts_before_the_graph_is_complete_and_grows_with_discoveries(
    graph: Sandbox,
) -> None:
    sandbox = graph
    assert mission_state(sandbox) == "approved"
    docs = events(sandbox)
    docs_item = work_item_id("m", "docs")
    first_start = next(i for i, e in enumerate(docs) if e["kind"] == "work.started")
    assert first_start < _index(docs, "work.authorized", docs_item)
    design = work_item_id("m", "design")
    assert _index(docs, "work.result.accepted", design) < _index(docs, "work.authorized", docs_item)


@pytest.mark.req("MWP-WRK-007")
def test_a_work_item_is_offered_only_once_its_dependencies_are_verified(graph: Sandbox) -> None:
    sandbox = graph
    docs = events(sandbox)
    for i, event in enumerate(docs):
        if event["kind"] != "work.offer.created":
            continue
        wid = event["payload"]["workItemId"]
        for dep in sandbox.log.state.work_items[wid].dependencies:
            assert _index(docs, "work.result.accepted", dep) < i, (wid, dep)
    # while they were not, the Coordinator's policy held the WorkItem back
    release = item(sandbox, "release")
    assert set(release.dependencies) == {work_item_id("m", "api"), work_item_id("m", "ui")}


@pytest.mark.req("MWP-WRK-007")
def test_independent_branches_run_in_parallel(graph: Sandbox) -> None:
    sandbox = graph
    docs = events(sandbox)

    def span(work: str) -> tuple[int, int]:
        wid = work_item_id("m", work)
        return _index(docs, "work.started", wid), _index(docs, "work.submitted", wid)

    api, ui = span("api"), span("ui")
    assert api[0] < ui[1] and ui[0] < api[1], "api and ui were never active at the same time"


@pytest.mark.req("MWP-WRK-007")
def test_eligibility_follows_the_contracts_dependency_policy() -> None:
    states = {"a": W.VERIFIED, "b": W.SUBMITTED}
    assert dependencies_satisfied(["a"], states.get, "all_verified")
    assert not dependencies_satisfied(["a", "b"], states.get, "all_verified")
    assert not dependencies_satisfied(["missing"], states.get, "all_verified")
    assert dependencies_satisfied([], states.get, "all_verified")
    with pytest.raises(DependencyPolicyError):
        dependencies_satisfied(["a"], states.get, "any_verified")


@pytest.mark.req("MWP-WRK-007")
def test_cycles_are_found_and_refused() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) is None
    cycle = find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]})
    assert cycle is not None and cycle[0] == cycle[-1] and set(cycle) == {"a", "b", "c"}
    deps = {"api": ("design",), "release": ("api",), "design": ()}
    assert closes_cycle(lambda n: deps.get(n, ()), "design", ["release"])
    assert not closes_cycle(lambda n: deps.get(n, ()), "release", ["design"])
    raw = base_file(
        work=[
            {"id": "x", "goal": "x", "capability": "mwp.build@1.0.0", "depends_on": ["y"]},
            {"id": "y", "goal": "y", "capability": "mwp.build@1.0.0", "discovered_after": ["x"]},
        ]
    )
    with pytest.raises(MissionFileError, match="cycle"):
        parse(raw)


def _member_w1(sandbox: Any) -> bool:
    """w1 has accepted 'design' (so it is a Group member) and has not started it yet."""
    return has_item(sandbox, "design") and item(sandbox, "design").owner is not None


def _proposal_contract(sandbox: Any, deps: list[str], required_by: list[str]) -> dict[str, Any]:
    spec = WorkSpec(
        id="migration",
        goal="Write the data migration the API turned out to need",
        capability=("mwp.build", "1.0.0"),
        budget={"financial": 15},
    )
    deadline = parse_timestamp("2026-07-17T09:00:00Z").epoch_micros
    contract = work_contract(spec, dependencies=deps, deadline_us=deadline)
    contract["constraints"][REQUIRED_BY] = required_by
    return contract


@pytest.mark.req("MWP-WRK-007")
def test_a_worker_proposal_is_authorized_into_the_graph_and_gates_its_dependent(
    tmp_path: Path,
) -> None:
    sandbox = make(tmp_path, _graph_file())
    run_until(sandbox, _member_w1)
    release = work_item_id("m", "release")
    contract = _proposal_contract(sandbox, [work_item_id("m", "design")], [release])
    proposed = hand(
        sandbox,
        "w1",
        "work.propose",
        {"summary": "a data migration is needed before release", "contract": contract},
    )
    assert proposed.ok
    proposal_id = proposed.event_documents[0]["payload"]["proposalId"]  # type: ignore[union-attr]
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    new = proposal_item_id("m", proposal_id)
    created = sandbox.log.state.work_items[new]
    assert created.created_by["id"] == agent_id("w1")
    assert created.authorized_by == {"type": "agent", "id": agent_id("coord")}
    assert sandbox.log.state.proposals[proposal_id]["status"] == "authorized"
    docs = events(sandbox)
    revised = next(
        e
        for e in docs
        if e["kind"] == "work.contract.revised" and e["payload"]["workItemId"] == release
    )
    assert new in revised["payload"]["contract"]["dependencyWorkItemIds"]
    assert _index(docs, "work.result.accepted", new) < _index(docs, "work.offer.created", release)
    submitted = events(sandbox, "mission.submitted_for_approval")[-1]["payload"]
    assert set(created.submitted_artifacts) <= set(submitted["artifactHashes"])


@pytest.mark.req("MWP-WRK-007")
def test_a_proposal_that_would_close_a_cycle_is_declined(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _graph_file())
    run_until(sandbox, _member_w1)
    design, release = work_item_id("m", "design"), work_item_id("m", "release")
    assert str(item(sandbox, "design").state) == "queued"
    contract = _proposal_contract(sandbox, [release], [design])
    proposed = hand(sandbox, "w1", "work.propose", {"summary": "loop", "contract": contract})
    proposal_id = proposed.event_documents[0]["payload"]["proposalId"]  # type: ignore[union-attr]
    decline = next(
        i
        for i in runtime_of(sandbox, "coord").intents(sandbox.clock.now_us())
        if i.tag == f"proposal:{proposal_id}"
    )
    assert decline.kind == "message.post"
    data = decline.payload["content"][1]
    assert data["schema"] == PROPOSAL_DECISION_SCHEMA and data["data"]["decision"] == "declined"
    assert any("cycle" in r for r in data["data"]["reasons"])
    assert send(sandbox, "coord", decline).ok
    # the Authority refuses the same cycle if a Coordinator tried to insert it anyway
    refused = hand(
        sandbox,
        "coord",
        "ext.missionweaveprotocol.core.work_dependency_add",
        {"workItemId": design, "dependsOn": [release]},
    )
    assert refused.error.code.value == "INVALID_COMMAND"  # type: ignore[union-attr]
    assert "cycle" in refused.error.explanation  # type: ignore[union-attr]
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    assert proposal_item_id("m", proposal_id) not in sandbox.log.state.work_items
    assert sandbox.log.state.proposals[proposal_id]["status"] == "open"


@pytest.mark.req("MWP-WRK-007")
def test_a_proposal_without_a_contract_is_declined(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _graph_file())
    run_until(sandbox, _member_w1)
    proposed = hand(sandbox, "w1", "work.propose", {"summary": "just do more"})
    proposal_id = proposed.event_documents[0]["payload"]["proposalId"]  # type: ignore[union-attr]
    sandbox.run()
    declines = [
        e
        for e in events(sandbox, "message.posted")
        if any(
            p.get("schema") == PROPOSAL_DECISION_SCHEMA and p["data"]["proposalId"] == proposal_id
            for p in e["payload"]["message"]["content"]
        )
    ]
    assert len(declines) == 1
    assert "no Work Contract" in declines[0]["payload"]["message"]["content"][0]["text"]
