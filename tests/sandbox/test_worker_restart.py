"""A Worker restarted mid-run (MWP-WRK-008, 014): its per-Group queues are rebuilt by replay,
from its own local file or, with the file deleted, from the Group log; the control plane opens a
new Session, which revokes the old runtime's Execution Leases and returns those WorkItems to
``queued`` before the new runtime starts them under new Lease IDs; the run still reaches
Approval and its log verifies."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import Intent
from mwp_local.authority import Rejected
from mwp_local.drivers.clock import timestamp
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.timestamps import format_utc
from mwp_local.store.agent_store import agent_file
from mwp_local.store.verify import verify_log

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
REVOKED = "ext.missionweaveprotocol.core.work_execution_lease_revoked"


def _dev_shared_is_executing(sandbox: Sandbox) -> bool:
    queues = sandbox.runtime("dev-shared").work_queues()
    return any(row.state == "active" for rows in queues.values() for row in rows)


def _events(sandbox: Sandbox) -> list[dict[str, Any]]:
    from mwp_local.protocol.jsontext import parse_strict

    return [parse_strict(e.document) for e in sandbox.log.store.events()]


@pytest.mark.req("MWP-WRK-008", "MWP-WRK-014")
def test_a_worker_whose_local_file_is_deleted_mid_run_is_rebuilt_and_resumes_under_new_leases(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    sandbox.run(until=_dev_shared_is_executing)
    old = sandbox.runtime("dev-shared")
    path = agent_file(sandbox.directory, "dev-shared")
    assert path.exists()
    active = {
        row.work_item_id: row.lease_id
        for rows in old.work_queues().values()
        for row in rows
        if row.state == "active"
    }
    assert active

    report = sandbox.restart_agent("dev-shared", delete_local_file=True)

    # rebuilt by replay of the Group log alone: the same queues, Group by Group
    assert report.restored_events == 0 and report.redelivered_events > 0
    assert report.queues_rebuilt == report.queues_before
    assert report.queues_before and set(report.queues_before) == set(old.work_queues())
    assert path.exists()  # the new runtime writes its own file again
    # the new Session revoked exactly the old runtime's active Execution Leases
    assert report.session_epoch == 2
    assert set(report.revoked_leases) == set(active.values())
    new = sandbox.runtime("dev-shared")
    assert new is not old
    for wid in active:
        assert str(sandbox.log.state.work_items[wid].state) == "queued"
        assert new.replica.work_items[wid].execution_lease_id is None

    # the old runtime is fenced: its delayed Command carries the replaced Session Epoch
    wid, lease = next(iter(active.items()))
    item = old.replica.work_items[wid]
    stale = Intent(
        kind="ext.missionweaveprotocol.core.work_execution_lease_renew",
        group=item.group_id,
        payload={"workItemId": wid, "ownershipEpoch": item.ownership_epoch, "leaseId": lease},
    )
    now = sandbox.clock.now_us()
    outcome = sandbox.log.submit(old.command(stale, format_utc(now)), timestamp(now))
    assert isinstance(outcome, Rejected) and outcome.error.code.value == "AUTH_STALE_SESSION"

    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    events = _events(sandbox)
    revoked_at = {e["payload"]["leaseId"]: i for i, e in enumerate(events) if e["kind"] == REVOKED}
    for wid, old_lease in active.items():
        starts = [
            (i, e["payload"]["executionLeaseId"])
            for i, e in enumerate(events)
            if e["kind"] == "work.started" and e["workItemId"] == wid
        ]
        later = [(i, lease_id) for i, lease_id in starts if i > revoked_at[old_lease]]
        assert later, f"{wid} was not started again after its lease was revoked"
        assert all(lease_id != old_lease for _, lease_id in later)  # under a new Lease ID
        assert events[later[0][0]]["payload"]["leases"]  # the new Execution Lease document
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


@pytest.mark.req("MWP-WRK-008", "MWP-WRK-014")
def test_a_worker_restarted_on_its_own_file_rebuilds_the_queues_it_stored(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    sandbox.run(until=_dev_shared_is_executing)
    report = sandbox.restart_agent("dev-shared", delete_local_file=False)
    assert report.restored_events > 0  # folded back from its file ...
    assert report.stored_queues_matched  # ... into exactly the queues the file stored ...
    assert report.queues_rebuilt == report.queues_before  # ... then caught up by re-delivery
    assert report.revoked_leases
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


def test_only_a_worker_can_be_restarted(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    with pytest.raises(ValueError, match="not a Worker"):
        sandbox.restart_agent("coordinator", delete_local_file=True)
    sandbox.close()


def test_a_restarted_worker_submits_the_artifact_its_earlier_attempt_published(
    tmp_path: Path,
) -> None:
    # The Worker published its deliverable, then crashed before submitting: the new attempt
    # produces the same bytes, whose Artifact already exists. It must submit that Artifact;
    # publishing it again is refused forever (content-addressed), which used to livelock.
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml", worker_files=False)
    published = None
    while published is None:
        report = sandbox.step()
        assert report is not None
        if report.kind == "artifact.publish" and report.accepted:
            published = report
    sandbox.restart_agent(published.agent, delete_local_file=True)
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    digest = published.command["payload"]["artifact"]["contentHash"]
    refused = [r for r in sandbox.log.store.rejections() if r.kind == "artifact.publish"]
    assert refused == []
    submits = [r for r in sandbox.history if r.kind == "work.submit" and r.accepted]
    assert any(digest in r.command["payload"]["artifactHashes"] for r in submits)
    sandbox.close()
