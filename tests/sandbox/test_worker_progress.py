"""Structured progress (MWP-WRK-016) and blocking (MWP-WRK-017) in running Sandboxes: every
report has the six members of §11.4 and no percentage; Workers report at checkpoints, when
blocked and when their estimate changes materially; a block states the required resolution and
releases the slot, and unblocked work returns to its Group's queue and runs again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.verify import verify_log

from .inline import CAP, at_us, events, mission_file, of_item

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
MEMBERS = {
    "currentPhase",
    "completedMilestones",
    "nextCheckpoint",
    "blockers",
    "updatedCompletionEstimate",
    "evidenceIds",
}
ITEM = "urn:mwp-local:work:m:a"


def _progress_reports(log: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for event in log:
        payload = event["payload"]
        if event["kind"] == "work.progressed" and payload.get("progress"):
            out.append((event["kind"], payload["progress"]))
        elif event["kind"] in ("work.checkpointed", "work.blocked"):
            out.append((event["kind"], payload["checkpoint"]["progress"]))
    return out


def _problems(report: dict[str, Any]) -> list[str]:
    """What makes a progress report unstructured or authoritative-looking."""
    found = []
    if set(report) != MEMBERS:
        found.append(f"members {sorted(report)}")
    for member, value in report.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            if not isinstance(v, str):
                found.append(f"{member} holds a non-text value {v!r}")
            elif "%" in v or "percent" in v.lower():
                found.append(f"{member} holds a percentage: {v!r}")
    return found


@pytest.mark.req("MWP-WRK-016")
def test_every_progress_report_of_the_flagship_is_structured_and_holds_no_percentage(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    assert sandbox.run().finished
    log = events(sandbox)
    reports = _progress_reports(log)
    kinds = {kind for kind, _ in reports}
    assert kinds == {"work.progressed", "work.checkpointed", "work.blocked"}
    for kind, report in reports:
        assert _problems(report) == [], (kind, report)
        if kind == "work.checkpointed":
            assert any(m.startswith("checkpoint ") for m in report["completedMilestones"])
    for event in log:
        if event["kind"] == "work.blocked":
            blockers = event["payload"]["checkpoint"]["progress"]["blockers"]
            assert blockers == [event["payload"]["requiredResolution"]]
    sandbox.close()


def test_the_progress_check_catches_a_percentage_and_missing_members() -> None:
    good = {
        m: [] if m in ("completedMilestones", "blockers", "evidenceIds") else "x" for m in MEMBERS
    }
    assert _problems(good) == []
    assert _problems({**good, "currentPhase": "75% done"})
    assert _problems({**good, "percentComplete": 75})
    assert _problems({k: v for k, v in good.items() if k != "blockers"})


def _single(tmp_path: Path, jitter: float, seed: int) -> Sandbox:
    spec = mission_file(
        [{"name": "w", "capabilities": [CAP], "behaviour": {"jitter": jitter}}],
        [{"id": "m", "work": [{"id": "a", "duration": "2h"}]}],
        seed=seed,
    )
    return Sandbox(tmp_path / "s", spec, worker_files=False)


@pytest.mark.req("MWP-WRK-016")
def test_a_material_change_of_the_estimate_is_reported_at_once(tmp_path: Path) -> None:
    sandbox = _single(tmp_path, jitter=1.0, seed=2)  # this run takes much less than disclosed
    sandbox.run(until=lambda s: bool(of_item(s, ITEM, "work.progressed")), max_steps=100)
    [started] = of_item(sandbox, ITEM, "work.started")
    [report] = of_item(sandbox, ITEM, "work.progressed")
    disclosed = of_item(sandbox, ITEM, "work.offer.accepted")[0]["payload"]["scheduleEstimate"]
    assert at_us(report) == at_us(started)  # not waiting for the lease renewal
    revised = report["payload"]["progress"]["updatedCompletionEstimate"]
    assert revised < disclosed["estimatedCompletion"]
    assert report["payload"]["progress"]["currentPhase"] == "executing"
    sandbox.close()


@pytest.mark.req("MWP-WRK-016")
def test_an_estimate_that_holds_is_not_reported_before_the_next_renewal(tmp_path: Path) -> None:
    sandbox = _single(tmp_path, jitter=0.0, seed=2)
    sandbox.run(until=lambda s: bool(of_item(s, ITEM, "work.progressed")), max_steps=100)
    [started] = of_item(sandbox, ITEM, "work.started")
    [report] = of_item(sandbox, ITEM, "work.progressed")
    assert at_us(report) - at_us(started) == 400_000_000  # with the renewal, a third before expiry
    sandbox.close()


@pytest.mark.req("MWP-WRK-017")
def test_every_block_in_the_flagship_is_resolved_and_the_work_runs_again(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    assert sandbox.run().finished
    log = events(sandbox)
    blocks = [e for e in log if e["kind"] == "work.blocked"]
    assert blocks
    for block in blocks:
        wid = block["workItemId"]
        assert block["payload"]["requiredResolution"]
        states = {lease["leaseType"]: lease["state"] for lease in block["payload"]["leases"]}
        assert states == {"execution": "released", "blocked": "active"}  # slot and lease freed
        after = log[log.index(block) :]
        unblocked = next(
            e for e in after if e["kind"] == "work.unblocked" and e["workItemId"] == wid
        )
        assert unblocked["payload"]["toState"] == "queued"  # back to its Group's queue
        again = [
            e
            for e in log[log.index(unblocked) :]
            if e["kind"] == "work.started" and e["workItemId"] == wid
        ]
        assert again and again[0]["actor"] == block["actor"]
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()
