"""Coordinator failure (§7.2): when the Coordinator stops renewing, the MissionOwner appoints a
replacement under a higher Coordinator Epoch; the old Coordinator's later Commands are rejected
as stale; the replacement receives a signed Context Package and reconciles the current WorkItem
state before it assigns anything."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import View
from mwp_local.agents.coordinator.core import CoordinatorPolicy
from mwp_local.agents.coordinator.handover import CONTEXT_PACKAGE_SCHEMA, RECONCILIATION_SCHEMA
from mwp_local.agents.naming import agent_id, mission_id
from mwp_local.artifacts.context_packages import check_update, verify_context_package
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.verify import verify_log

from .coordinator_harness import (
    base_file,
    events,
    make,
    mission_state,
    rejections,
    run_until,
    runtime_of,
)

FAILS_AT = "2026-07-15T09:25:00Z"
COORDINATION = {
    "work.offer",
    "work.authorize",
    "work.accept_result",
    "work.fail",
    "work.unblock",
    "mission.submit_for_approval",
}


def _failing_file() -> dict[str, Any]:
    raw = base_file(
        coordinator_fails_after="25m",
        coordinator_returns_after="1h10m",
        standby_coordinator="coord-b",
        work=[
            {"id": "a", "goal": "A", "capability": "mwp.build@1.0.0", "duration": "20m"},
            {
                "id": "b",
                "goal": "B",
                "capability": "mwp.build@1.0.0",
                "duration": "1h",
                "depends_on": ["a"],
            },
            {
                "id": "c",
                "goal": "C",
                "capability": "mwp.build@1.0.0",
                "duration": "30m",
                "depends_on": ["b"],
            },
        ],
    )
    raw["agents"].append(
        {"name": "coord-b", "capabilities": ["mwp.coordination@1.0.0"], "max_concurrency": 4}
    )
    return raw


@pytest.fixture(scope="module")
def failover(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    """One run of a Mission whose Coordinator fails and later comes back."""
    sandbox = make(tmp_path_factory.mktemp("failover"), _failing_file())
    sandbox.run()
    return sandbox


def _data(event: dict[str, Any], schema: str) -> Any:
    for part in event["payload"]["message"]["content"]:
        if part.get("type") == "data_ref" and part.get("schema") == schema:
            return part["data"]
    return None


def test_a_coordinator_that_stops_renewing_is_replaced_under_a_higher_epoch(
    failover: Sandbox,
) -> None:
    assert mission_state(failover) == "approved"
    docs = events(failover)
    assigned = next(e for e in docs if e["kind"] == "mission.coordinator.assigned")
    payload = assigned["payload"]
    assert assigned["actor"]["type"] == "human"
    assert payload["coordinator"]["agentId"] == agent_id("coord-b")
    assert payload["coordinator"]["coordinatorEpoch"] == 2
    assert payload["previousCoordinatorEpoch"] == 1
    # the old lease lapsed (it stopped renewing) before the MissionOwner appointed anyone
    old_lease = next(e for e in docs if e["kind"] == "mission.created")["payload"]["mission"][
        "coordinator"
    ]["leaseId"]
    lapsed = next(
        e
        for e in docs
        if e["kind"] == "ext.mwp-local.sandbox.lease_expired"
        and e["payload"]["leaseId"] == old_lease
    )
    assert docs.index(lapsed) < docs.index(assigned)
    # nothing the failed Coordinator sent after it stopped was accepted
    assert all(e["occurredAt"] < FAILS_AT for e in docs if e["actor"]["id"] == agent_id("coord"))
    assert failover.log.state.missions[mission_id("m")].coordinator_agent_id == agent_id("coord-b")


def test_the_old_coordinators_later_command_is_rejected_as_stale(failover: Sandbox) -> None:
    stale = [r for r in rejections(failover) if r["actor_id"] == agent_id("coord")]
    assert [r["code"] for r in stale] == ["AUTH_STALE_COORDINATOR"]
    command = json.loads(stale[0]["command_text"])
    assert command["coordinatorEpoch"] == 1
    # its earlier Events remain valid history
    assert verify_log(failover.log.org, failover.log.store).ok


def test_the_replacement_reconciles_a_signed_context_package_before_assigning(
    failover: Sandbox,
) -> None:
    docs = events(failover)
    packages = [
        (i, _data(e, CONTEXT_PACKAGE_SCHEMA))
        for i, e in enumerate(docs)
        if e["kind"] == "message.posted" and _data(e, CONTEXT_PACKAGE_SCHEMA)
    ]
    assert len(packages) >= 2
    for _, package in packages:
        verified = verify_context_package(package, failover.log.state)
        assert verified.principal.id == agent_id("coord")
    check_update(packages[0][1], packages[1][1])  # each update names and binds its predecessor
    reconciled_at, report = next(
        (i, _data(e, RECONCILIATION_SCHEMA))
        for i, e in enumerate(docs)
        if e["kind"] == "message.posted" and _data(e, RECONCILIATION_SCHEMA)
    )
    assert docs[reconciled_at]["actor"]["id"] == agent_id("coord-b")
    latest = [p for i, p in packages if i < reconciled_at][-1]
    assert report["contextPackageId"] == latest["contextPackageId"]
    assert report["coordinatorEpoch"] == 2
    assert sum(report["workItemsByState"].values()) == 3
    assigned = next(i for i, e in enumerate(docs) if e["kind"] == "mission.coordinator.assigned")
    coordination = [
        i
        for i, e in enumerate(docs)
        if e["actor"]["id"] == agent_id("coord-b")
        and e["kind"] != "message.posted"
        and not e["kind"].startswith("mission.coordinator")
    ]
    assert coordination and assigned < reconciled_at < min(coordination)


def test_without_a_context_package_the_replacement_assigns_nothing(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _failing_file())
    run_until(
        sandbox,
        lambda s: (
            mission_state(s) != "none"
            and s.log.state.missions[mission_id("m")].coordinator_epoch == 2
        ),
    )
    replacement = runtime_of(sandbox, "coord-b")
    blind = dataclasses.replace(replacement.replica, messages={})  # no package was ever posted
    view = View(member=replacement.member, state=blind, sign=replacement.view.sign)
    fresh = CoordinatorPolicy(sandbox.spec.coordinated_by("coord-b"), sandbox.spec.start_us)
    wanted = fresh.decide(view, sandbox.clock.now_us())
    assert not [i for i in wanted if i.kind in COORDINATION]
    # with the package in view it reconciles first, and still assigns nothing in that decision
    informed = fresh.decide(replacement.view, sandbox.clock.now_us())
    assert informed and informed[0].tag.startswith("reconcile:")
    assert not [i for i in informed if i.kind in COORDINATION]
