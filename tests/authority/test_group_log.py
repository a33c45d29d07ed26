"""The Authority bound to DuckDB: commits, rejections kept apart, rebuild by replay, verify-log."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.projection_rows import projection_rows
from mwp_local.store.verify import verify_log

from .world import LoggedWorld

WID = "urn:mwp-local:work:impl"


def _scenario(w: LoggedWorld) -> None:
    w.bootstrap()
    w.create_mission()
    w.run_to_submitted(WID)
    w.send("worker-a", "work.start", {"workItemId": WID, "ownershipEpoch": 1})  # refused
    w.accept_result(WID)


@pytest.fixture(params=["memory", "duckdb"])
def world(request: pytest.FixtureRequest, tmp_path: Path) -> LoggedWorld:
    store = (
        MemoryLogStore() if request.param == "memory" else DuckDBLogStore(tmp_path / "group.duckdb")
    )
    w = LoggedWorld(store)
    _scenario(w)
    return w


def test_the_log_holds_every_accepted_event_and_rejections_apart(world: LoggedWorld) -> None:
    stored = [e.event_id for e in world.log.store.events()]
    assert stored == [e["eventId"] for e in world.events]
    rejections = world.log.store.rejections()
    assert [r.code for r in rejections] == ["INVALID_STATE_TRANSITION"]
    assert "work.start" in rejections[0].command_text


def test_stored_projections_equal_a_rebuild_by_replay_and_verify_log_passes(
    world: LoggedWorld,
) -> None:
    report = verify_log(world.org, world.log.store)
    assert report.ok, report.problems
    assert report.events == len(world.events)
    before = {
        t: world.log.store.projection_rows(t)
        for t in ("proj_work_items", "proj_leases", "proj_budgets")
    }
    world.log.rebuild_projections()
    after = {t: world.log.store.projection_rows(t) for t in before}
    assert after == before


def test_reopening_the_log_replays_to_the_same_state(tmp_path: Path) -> None:
    path = tmp_path / "group.duckdb"
    w = LoggedWorld(DuckDBLogStore(path))
    _scenario(w)
    rows = projection_rows(w.state)
    w.log.store.close()
    reopened = GroupLog(w.org, DuckDBLogStore(path))
    assert projection_rows(reopened.state) == rows
    assert reopened.state.receipts.keys() == w.state.receipts.keys()


def test_a_rejected_command_leaves_events_and_projections_byte_identical(
    world: LoggedWorld,
) -> None:
    store = world.log.store
    before = (
        store.chain_head(),
        {t: store.projection_rows(t) for t in ("proj_work_items", "proj_leases", "proj_offers")},
    )
    world.send(
        "worker-b", "work.start", {"workItemId": WID, "ownershipEpoch": 1}, membership_epoch=1
    )
    after = (store.chain_head(), {t: store.projection_rows(t) for t in before[1]})
    assert after == before
    assert store.rejections()[-1].code == "MEMBERSHIP_REQUIRED"


def test_verify_log_finds_a_tampered_event(tmp_path: Path) -> None:
    path = tmp_path / "group.duckdb"
    w = LoggedWorld(DuckDBLogStore(path))
    _scenario(w)
    w.log.store.close()
    import duckdb

    con = duckdb.connect(str(path))
    con.execute(
        "UPDATE log_events SET document = replace(document, 'Implement the feature', "
        "'Implement something else') WHERE kind = 'work.authorized'"
    )
    con.close()
    report = verify_log(w.org, DuckDBLogStore(path, read_only=True))
    assert not report.ok
    assert any("hash chain" in p for p in report.problems)
    assert any("signature" in p for p in report.problems)
