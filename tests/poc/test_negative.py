"""The checks can fail: on a log that lacks the behaviour (the small learn.toml Mission, run
without the proof of concept's faults and probes) nearly every check fails, and tampering with
one piece of evidence in a passing directory fails exactly the checks that read it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mwp_local.cli import main
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.poc.checks import Result, all_checks, run_checks
from mwp_local.poc.scenario import ScenarioRun

from .conftest import failing

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"

#: What a plain one-Mission run still shows: a verifiable log, provenance, reviews, Approval
#: after verification, isolation, schedule estimates without leakage, effects done once.
HOLDS_ON_LEARN = {
    "log_verifies",
    "log_invariants_hold",
    "artifact_provenance",
    "verification_before_approval",
    "coordinator_review_pipeline",
    "per_group_context_isolation",
    "scheduling_disclosure_without_leakage",
    "credential_isolation",
    "idempotent_external_effects",
    "context_package_in_its_group",
}


@pytest.fixture(scope="module")
def learn_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("learn") / "run"
    sandbox = Sandbox(directory, SAMPLES / "learn.toml", worker_files=False)
    assert sandbox.run().finished
    sandbox.close()
    return directory


def test_on_a_log_without_the_behaviours_every_other_check_fails(learn_dir: Path) -> None:
    results = run_checks(learn_dir)
    passed = {r.name for r in results if r.ok}
    assert passed <= HOLDS_ON_LEARN, passed - HOLDS_ON_LEARN
    assert len(failing(results)) >= len(all_checks()) - len(HOLDS_ON_LEARN)


def test_the_cli_exits_one_when_a_check_fails(learn_dir: Path) -> None:
    assert main(["poc", "--dir", str(learn_dir), "--check-only"]) == 1


def _copy(run: ScenarioRun, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run.directory, target)
    return target


def _rewrite(path: Path, change: object) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [change(r) for r in rows]  # type: ignore[operator]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))


def _only(directory: Path, names: tuple[str, ...]) -> dict[str, Result]:
    return {r.name: r for r in run_checks(directory, only=names)}


def test_an_altered_snapshot_body_fails_the_snapshot_checks(
    step_run: tuple[ScenarioRun, list[Result]], tmp_path: Path
) -> None:
    directory = _copy(step_run[0], tmp_path)

    def alter(row: dict) -> dict:  # type: ignore[type-arg]
        row["body"]["events"] = row["body"]["events"][:-1]
        return row

    _rewrite(directory / "poc" / "snapshots.jsonl", alter)
    results = _only(directory, ("signed_archival_snapshots", "cursor_too_old_snapshot_restore"))
    assert not any(r.ok for r in results.values())


def test_a_replica_behind_the_head_fails_the_cursor_check(
    step_run: tuple[ScenarioRun, list[Result]], tmp_path: Path
) -> None:
    directory = _copy(step_run[0], tmp_path)

    def behind(row: dict) -> dict:  # type: ignore[type-arg]
        row["cursors"] = {g: s - 1 for g, s in row["cursors"].items()}
        return row

    _rewrite(directory / "poc" / "replicas.jsonl", behind)
    assert not _only(directory, ("cursors_reach_heads",))["cursors_reach_heads"].ok


def test_without_the_recorded_probes_the_fence_checks_fail(
    step_run: tuple[ScenarioRun, list[Result]], tmp_path: Path
) -> None:
    directory = _copy(step_run[0], tmp_path)
    (directory / "poc" / "probes.jsonl").unlink()
    names = ("action_id_collision", "duplicate_command_idempotent", "work_already_owned")
    assert not any(r.ok for r in _only(directory, names).values())


def test_a_restart_record_that_disagrees_with_the_replay_fails(
    step_run: tuple[ScenarioRun, list[Result]], tmp_path: Path
) -> None:
    directory = _copy(step_run[0], tmp_path)

    def drop(row: dict) -> dict:  # type: ignore[type-arg]
        row["queuesRebuilt"] = {g: q[1:] for g, q in row["queuesRebuilt"].items()}
        return row

    _rewrite(directory / "poc" / "restart.jsonl", drop)
    assert not _only(directory, ("queues_rebuilt_from_replay",))["queues_rebuilt_from_replay"].ok
