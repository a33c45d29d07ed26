"""Missions run through the delivery bus: the sample mission end to end, determinism, a fault
campaign over many seeds, and Worker restarts (§11.5, §16; MWP-WRK-029/030/031)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.specs import MissionFile
from mwp_local.delivery.snapshots import SnapshotBundle
from mwp_local.drivers.mission_file import load
from mwp_local.drivers.sandbox import Sandbox, StepReport
from mwp_local.protocol.timestamps import parse_timestamp
from mwp_local.store.verify import verify_log

from ..official_schemas import problems
from .helpers import (
    SAMPLES,
    acks_never_pass_a_gap,
    assert_replica_clean,
    effects_once_per_epoch,
    restored_through,
    sample,
    stored_cursors_never_pass_a_gap,
    with_delivery,
)

HEAVY = {
    "duplicate": 0.5,
    "reorder": 0.5,
    "delay": 0.4,
    "max_delay": "30s",
    "drop": 0.15,
    "redeliver_after": "30s",
    "online_window": 12,
    "group_buffer": 32,
    "disconnects": [
        {"agent": "dev", "at": "5m", "for": "40m"},
        {"agent": "ana", "at": "50m", "for": "10m"},
        {"agent": "coordinator", "at": "70m", "for": "5m"},
    ],
}


def _gap_watch(sandbox: Sandbox) -> Callable[[int, StepReport], None]:
    def check(_n: int, _report: StepReport) -> None:
        stored_cursors_never_pass_a_gap(sandbox)

    return check


def _run_and_check(sandbox: Sandbox) -> None:
    summary = sandbox.run(max_steps=5_000, progress=_gap_watch(sandbox))
    assert summary.finished, summary.lines()
    assert set(summary.missions.values()) == {"approved"}
    sandbox.settle_delivery()
    assert sandbox.delivery is not None
    acks_never_pass_a_gap(sandbox.delivery.bus, restored_through(sandbox))
    stored_cursors_never_pass_a_gap(sandbox)
    for runtime in sandbox.runtimes:
        assert_replica_clean(sandbox, runtime)
    effects_once_per_epoch(sandbox)
    assert verify_log(sandbox.log.org, sandbox.log.store).ok


#: Two concurrent Missions (two Groups, a shared Worker): reordering across Groups too.
HEAVY_FLAGSHIP = {
    **HEAVY,
    "online_window": 5,
    "disconnects": [
        {"agent": "dev-shared", "at": "10m", "for": "70m"},
        {"agent": "coord-checkout", "at": "60m", "for": "5m"},
        {"agent": "analyst", "at": "20m", "for": "30m"},
    ],
}


@pytest.mark.req("MWP-WRK-029", "MWP-WRK-030", "MWP-WRK-031")
@pytest.mark.parametrize(
    ("mission", "seed"),
    [("learn", s) for s in (1, 2, 3, 4, 5, 6)] + [("flagship", s) for s in (1, 2)],
)
def test_a_mission_under_heavy_injection_keeps_cursors_projections_and_effects(
    tmp_path: Path, mission: str, seed: int
) -> None:
    faults = HEAVY if mission == "learn" else HEAVY_FLAGSHIP
    spec = with_delivery(sample(mission), **faults)
    sandbox = Sandbox(tmp_path / "s", spec, seed=seed, worker_files=False)
    _run_and_check(sandbox)
    stats = sandbox.delivery.bus.stats if sandbox.delivery else None
    assert stats is not None
    assert stats.duplicates and stats.reorders and stats.drops and stats.redeliveries
    assert stats.disconnects >= 3 and stats.reconnects >= 3
    assert stats.cursor_too_old >= 1  # an agent came back from a long disconnect
    sandbox.close()


@pytest.mark.req("MWP-WRK-029", "MWP-WRK-031")
def test_worker_restarts_under_faults_keep_effects_once_per_epoch(tmp_path: Path) -> None:
    spec = with_delivery(sample("learn"), **HEAVY)
    sandbox = Sandbox(tmp_path / "s", spec, seed=8)  # Worker files on disk (DuckDB)
    restarted = []

    def restart(sb: Sandbox) -> bool:
        busy = [r for r in sb.runtimes if getattr(unwrap(r.policy), "slots", None)]
        if busy and len(restarted) < 3 and sb.steps % 7 == 0:
            name = busy[0].name
            report = sb.restart_agent(name, delete_local_file=len(restarted) == 1)
            assert report.stored_queues_matched
            restarted.append(name)
        return False

    summary = sandbox.run(max_steps=5_000, until=restart)
    assert summary.finished and restarted
    sandbox.settle_delivery()
    for runtime in sandbox.runtimes:
        assert_replica_clean(sandbox, runtime)
    stored_cursors_never_pass_a_gap(sandbox)
    effects = effects_once_per_epoch(sandbox)
    assert effects  # the Mission's deliverables were produced, each once per epoch
    sandbox.close()


@pytest.fixture(scope="module")
def delivery_sample(tmp_path_factory: pytest.TempPathFactory) -> Sandbox:
    sandbox = Sandbox(tmp_path_factory.mktemp("delivery"), SAMPLES / "delivery.toml")
    summary = sandbox.run(max_steps=5_000)
    assert summary.finished, summary.lines()
    return sandbox


@pytest.mark.req("MWP-WRK-030")
def test_the_sample_mission_shows_cursor_too_old_and_a_snapshot_restore(
    delivery_sample: Sandbox,
) -> None:
    sandbox = delivery_sample
    assert sandbox.delivery is not None
    back = next(c for c in sandbox.delivery.clients.values() if c.runtime.name == "dev")
    (restoration,) = back.restorations
    assert restoration.refused is None and restoration.events > 0
    bundle = sandbox.delivery.bus.snapshot(restoration.snapshot_id)
    assert problems("group-snapshot", bundle.snapshot) == []
    sandbox.settle_delivery()
    for runtime in sandbox.runtimes:
        assert_replica_clean(sandbox, runtime)
    assert verify_log(sandbox.log.org, sandbox.log.store).ok


@pytest.mark.req("MWP-WRK-020", "MWP-WRK-021", "MWP-WRK-022")
def test_the_sample_mission_reconciles_offline_work_and_refuses_the_overflow(
    delivery_sample: Sandbox,
) -> None:
    sandbox = delivery_sample
    assert sandbox.delivery is not None
    (record,) = sandbox.delivery.outages
    assert sorted(b.agent for b in record.buffered) == ["ana", "dev"]
    reports = [r for r in sandbox.history if r.kind == "work.checkpoint" and "reconcile" in r.why]
    by_agent = {r.agent: r for r in reports}
    accepted, refused = by_agent["ana"], by_agent["dev"]
    assert [e["kind"] for e in accepted.events] == [
        "ext.missionweaveprotocol.core.resource_usage_recorded",
        "work.checkpointed",
    ]
    assert refused.code == "BUDGET_EXCEEDED" and not refused.events
    assert refused.before == refused.after  # the WorkItem did not move
    # Nothing reached the Group service during the outage: no Command, no external effect.
    start, end = record.outage.at_us, record.outage.until_us
    for r in sandbox.history:
        assert not start <= parse_timestamp(r.at).epoch_micros < end
    assert not [c for c in sandbox.external.calls if start <= c.at_us < end]


def test_the_same_seed_gives_a_byte_identical_log_through_the_bus(tmp_path: Path) -> None:
    spec: MissionFile = load(SAMPLES / "delivery.toml")

    def log(seed: int, name: str) -> list[str]:
        sandbox = Sandbox(tmp_path / name, spec, seed=seed, worker_files=False)
        sandbox.run(max_steps=5_000)
        texts = [e.document for e in sandbox.log.store.events()]
        sandbox.close()
        return texts

    first = log(3, "a")
    assert first == log(3, "b")
    assert first != log(4, "c")


def test_without_a_delivery_table_events_go_straight_to_the_agents(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml", worker_files=False)
    assert sandbox.delivery is None
    sandbox.close()


@pytest.mark.req("MWP-WRK-030")
def test_a_run_whose_agent_cannot_settle_is_not_reported_a_success(tmp_path: Path) -> None:
    """Every snapshot the bus names is tampered: the long-disconnected Worker refuses each
    (correctly), stops asking after a few, and is stuck behind: the run does not report
    success, and says who is stuck."""
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "delivery.toml", worker_files=False)
    assert sandbox.delivery is not None
    bus = sandbox.delivery.bus
    sign = bus.make_snapshot

    def tampered(group: str, events: Any, created_at: str) -> SnapshotBundle:
        bundle = sign(group, events, created_at)
        body = copy.deepcopy(bundle.body)
        body["events"][0]["payload"]["tampered"] = True
        return SnapshotBundle(snapshot=bundle.snapshot, body=body)

    bus.make_snapshot = tampered  # type: ignore[method-assign]
    summary = sandbox.run(max_steps=5_000)
    assert not summary.finished  # whatever the Missions' states, the run is no success
    assert summary.stuck == {"dev": ("urn:mwp-local:group:report-export",)}
    assert any("Not settled: dev" in line for line in summary.lines())
    client = next(c for c in sandbox.delivery.clients.values() if c.runtime.name == "dev")
    assert all(r.refused == "PROTOCOL_VIOLATION" for r in client.restorations)
    with pytest.raises(RuntimeError, match="did not settle"):
        sandbox.settle_delivery()
    sandbox.close()
