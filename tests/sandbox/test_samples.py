"""Every sample mission file runs to a terminal state in step mode, with the policies
``agents.cast`` assigns, and leaves a log that verifies; each shows what it is there to show.
The scale sample is a benchmark input: the test checks its size and runs the same graphs with
smaller WorkItem families."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.naming import agent_id
from mwp_local.drivers.mission_file import load, parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog
from mwp_local.store.verify import verify_log

from ..agents.coordinator_harness import SAMPLES, events, make, rejections
from ..official_schemas import embedded_problems

TERMINAL = {"approved", "cancelled", "failed"}


def _scale_slice(size: int) -> Any:
    raw = tomllib.loads((SAMPLES / "scale.toml").read_text())
    for mission in raw["missions"]:
        for work in mission["work"]:
            if "count" in work:
                work["count"] = size
    return parse(raw, name="scale-slice")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Sandbox]:
    """Each sample run once (to its end) and shared by the tests that read it."""
    cache: dict[str, Sandbox] = {}

    def run(sample: str) -> Sandbox:
        if sample not in cache:
            spec = _scale_slice(1) if sample == "scale" else load(SAMPLES / f"{sample}.toml")
            sandbox = make(tmp_path_factory.mktemp(sample), spec)
            summary = sandbox.run()
            assert summary.finished, summary.lines()
            assert set(summary.missions.values()) <= TERMINAL
            cache[sample] = sandbox
        return cache[sample]

    return run


@pytest.mark.parametrize("sample", ["learn", "flagship", "child", "retries", "scale"])
def test_each_sample_mission_reaches_approval_in_step_mode(
    ran: Callable[[str], Sandbox], sample: str
) -> None:
    sandbox = ran(sample)
    assert set(sandbox.summary().missions.values()) == {"approved"}
    assert verify_log(sandbox.log.org, sandbox.log.store).ok


@pytest.mark.req("MWP-WRK-027")
@pytest.mark.parametrize("sample", ["learn", "flagship", "child", "retries", "scale"])
def test_every_document_embedded_in_a_sample_run_conforms_to_its_official_schema(
    ran: Callable[[str], Sandbox], sample: str
) -> None:
    """Issue 21 point 5: jsonschema over the official schemas judges every Membership, Lease,
    Context Package, Evidence, ... that any Event of the run embeds (provisional Memberships
    name their Context Package and expiry, as membership.schema.json requires)."""
    log = events(ran(sample))
    assert any(e["payload"].get("membership", {}).get("state") == "provisional" for e in log)
    assert [p for e in log for p in embedded_problems(e)] == []


def test_every_sample_file_parses() -> None:
    names = sorted(p.stem for p in SAMPLES.glob("*.toml"))
    assert {"learn", "flagship", "child", "retries", "scale"} <= set(names)
    for name in names:
        assert load(SAMPLES / f"{name}.toml").missions


def test_the_flagship_keeps_its_story_with_the_cast_policies(
    ran: Callable[[str], Sandbox],
) -> None:
    sandbox = ran("flagship")
    kinds = {e["kind"] for e in events(sandbox)}
    assert {"mission.changes_requested", "work.failed", "work.blocked", "work.unblocked"} <= kinds
    served = {
        e["groupId"]
        for e in events(sandbox, "work.started")
        if e["actor"]["id"] == agent_id("dev-shared")
    }
    assert len(served) == 2


def test_the_retries_sample_recovers_from_every_failure_it_stages(
    ran: Callable[[str], Sandbox],
) -> None:
    sandbox = ran("retries")
    docs = events(sandbox)
    kinds = [e["kind"] for e in docs]
    # a Worker-reported failure, then a retry
    assert any(e["kind"] == "work.failed" and e["actor"]["type"] == "agent" for e in docs)
    # a reviewer's negative assessment rejected a submission
    assert any(
        e["kind"] == "work.failed"
        and e["actor"]["id"] == agent_id("coord")
        and e["payload"]["evidence"][0]["details"]["review"]["verdict"] == "rejected"
        for e in docs
    )
    # an owner that stopped renewing was replaced under a higher Ownership Epoch
    assert any(e["payload"].get("fencedOwner") for e in docs if e["kind"] == "work.offer.created")
    # an ambiguity was questioned and answered with a revised contract
    assert "work.contract.revised" in kinds
    # blocked work was unblocked
    assert "work.blocked" in kinds and "work.unblocked" in kinds
    # the Coordinator was replaced and its return was rejected as stale
    assert "mission.coordinator.assigned" in kinds
    assert [r["code"] for r in rejections(sandbox)] == ["AUTH_STALE_COORDINATOR"]


def test_the_scale_sample_is_several_groups_and_hundreds_of_work_items() -> None:
    spec = load(SAMPLES / "scale.toml")
    assert len(spec.missions) >= 4
    assert sum(len(m.work) for m in spec.missions) >= 300
    assert len({m.coordinator for m in spec.missions}) >= 2
    sliced = _scale_slice(1)
    assert [m.id for m in sliced.missions] == [m.id for m in spec.missions]


@pytest.mark.parametrize("sample", ["flagship", "child", "retries"])
def test_a_sample_run_log_imports_whole_into_an_empty_log_of_its_organization(
    ran: Callable[[str], Sandbox], sample: str, tmp_path: Path
) -> None:
    """Issue 26 point 5: the strict import applies the live Authority's own checks
    (``Authority.admit``), so a log the live Authority wrote, with every Agent Card, Artifact
    manifest, Evidence, Approval and Context Package it embeds, imports whole and verifies."""
    sandbox = ran(sample)
    lines = [e.document for e in sandbox.log.store.events()]
    target = GroupLog(sandbox.log.org, DuckDBLogStore(tmp_path / "copy.duckdb"))
    try:
        admitted = target.import_events(lines)
        assert len(admitted.records) == len(lines)
        assert [e.document for e in target.store.events()] == lines
        assert verify_log(sandbox.log.org, target.store).ok
    finally:
        target.store.close()
