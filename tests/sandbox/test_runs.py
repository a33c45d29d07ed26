"""The Sandbox runs mission files end to end, deterministically in step mode and with real
races in threads mode, and every log it writes verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.cli import main
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.verify import verify_log

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


def _events(sandbox: Sandbox) -> list[str]:
    return [e.document for e in sandbox.log.store.events()]


def test_the_learning_mission_reaches_human_approval(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    summary = sandbox.run()
    assert summary.finished
    assert set(summary.missions.values()) == {"approved"}
    assert summary.work_items == {"verified": 3}
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


def test_each_step_reports_its_command_and_its_events_or_its_rejection(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    first = sandbox.step()
    assert first is not None and first.accepted
    assert first.kind == "mission.create" and first.agent == "mission-owner"
    assert first.command["kind"] == "mission.create"
    assert first.events[0]["kind"] == "mission.created"
    assert first.why
    sandbox.close()


@pytest.mark.req("MWP-WRK-007")
def test_the_flagship_runs_both_missions_to_approval_in_step_mode(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    summary = sandbox.run()
    assert summary.finished
    assert set(summary.missions.values()) == {"approved"}
    kinds = {r.kind for r in sandbox.history}
    assert {"mission.request_changes", "work.fail", "work.block", "work.unblock"} <= kinds
    # the shared Worker served both Groups
    served = {
        (r.command["groupId"])
        for r in sandbox.history
        if r.agent == "dev-shared" and r.kind == "work.start"
    }
    assert len(served) == 2
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


def test_the_same_seed_gives_a_byte_identical_log_and_another_seed_another_interleaving(
    tmp_path: Path,
) -> None:
    runs = []
    for name, seed in (("a", 7), ("b", 7), ("c", 8)):
        sandbox = Sandbox(tmp_path / name, SAMPLES / "flagship.toml", seed=seed)
        sandbox.run()
        runs.append(_events(sandbox))
        sandbox.close()
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.threads
def test_threads_mode_reaches_approval_with_real_threads(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml", mode="threads")
    summary = sandbox.run(timeout_s=120, scale=1500)
    assert summary.finished, summary.lines()
    assert set(summary.missions.values()) == {"approved"}
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


def test_mwp_local_run_prints_a_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(SAMPLES / "learn.toml"), "--dir", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "Finished after" in out and "Mission export-button: approved" in out
