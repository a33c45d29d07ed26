"""The Sandbox's durability: ``step()`` returns a durable action; ``run()`` (in step and
threads mode) and ``write_behind()`` acknowledge first and write in batches, which changes no
Event; a Worker's local file is never durable ahead of the Group log; a crash inside ``run()``
leaves a log file that is a verified prefix of the run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.sandbox_dir import open_directory
from mwp_local.store.verify import verify_log

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_missions"


def _documents(sandbox: Sandbox) -> list[str]:
    return [e.document for e in sandbox.log.store.events()]


def test_step_returns_only_once_its_action_is_durable(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    for _ in range(10):
        assert sandbox.step() is not None
        assert sandbox.log.store.staged == 0  # type: ignore[attr-defined]
        assert all(not r._pending for r in sandbox.runtimes)  # Worker files hold what they saw
    sandbox.close()


def test_write_behind_acknowledges_first_and_every_read_sees_everything(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    store = sandbox.log.store
    with sandbox.write_behind():
        for _ in range(12):
            sandbox.step()
        assert store.staged > 0  # type: ignore[attr-defined]
        rows = sandbox.sql("SELECT count(*) AS n FROM events").to_pylist()
        assert store.staged == 0  # type: ignore[attr-defined]  # the read wrote them first
        assert rows[0]["n"] == store.event_count()  # every acknowledged Event
        sandbox.step()
        worker = next(r for r in sandbox.runtimes if r.local is not None and r._pending)
        worker.flush()  # a Worker's file commits: the log goes first
        assert store.staged == 0  # type: ignore[attr-defined]
        sandbox.step()
    assert store.staged == 0  # type: ignore[attr-defined]  # leaving the block wrote the rest
    sandbox.close()


@pytest.mark.slow  # runs every sample mission twice
def test_batched_writing_changes_no_event(tmp_path: Path) -> None:
    stepped = Sandbox(tmp_path / "a", SAMPLES / "flagship.toml", seed=5)
    while stepped.step() is not None:
        pass
    batched = Sandbox(tmp_path / "b", SAMPLES / "flagship.toml", seed=5)
    summary = batched.run()
    assert summary.finished and batched.log.store.staged == 0  # type: ignore[attr-defined]
    assert _documents(batched) == _documents(stepped)
    assert verify_log(batched.log.org, batched.log.store).ok
    stepped.close()
    batched.close()


_CRASH = """
import os, sys
sys.path.insert(0, {repo!r})
from mwp_local.drivers.sandbox import Sandbox
sandbox = Sandbox({directory!r}, {mission!r}, seed=5)
with sandbox.write_behind():
    for _ in range(140):
        sandbox.step()
    print(sandbox.log.store.event_count(), sandbox.log.store.staged, flush=True)
    os._exit(0)  # a crash inside the run: the staged tail never reaches the file
"""


def test_a_crash_inside_a_run_leaves_a_verified_prefix(tmp_path: Path) -> None:
    mission = str(SAMPLES / "flagship.toml")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _CRASH.format(repo=str(REPO), directory=str(tmp_path / "c"), mission=mission),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    acknowledged, staged = map(int, done.stdout.split())
    assert staged > 0
    log = open_directory(tmp_path / "c", read_only=True)
    kept = [e.document for e in log.store.events()]
    assert verify_log(log.org, log.store).ok
    log.store.close()
    reference = Sandbox(tmp_path / "r", mission, seed=5)
    reference.run()
    assert kept == _documents(reference)[: len(kept)]  # a prefix of the same run
    assert 0 < len(kept) <= acknowledged  # the staged tail is what was lost
    reference.close()


def test_acknowledgements_turn_write_behind_off(tmp_path: Path) -> None:
    from mwp_local.campaign.acks import parse_acks, record_acknowledgements

    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    lines: list[str] = []
    staged: list[int] = []

    def write(line: str) -> None:  # when an ACK is written, nothing may be waiting
        staged.append(sandbox.log.store.staged)  # type: ignore[attr-defined]
        lines.append(line)

    record_acknowledgements(sandbox.log, write)
    summary = sandbox.run()
    assert summary.finished and len(parse_acks(lines)) == summary.steps
    assert set(staged) == {0}
    sandbox.close()


@pytest.mark.threads
def test_threads_mode_writes_behind_and_no_worker_file_gets_ahead_of_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run()`` in threads mode stages from every agent thread; whenever a Worker's file
    commits, each Event it records is already durable in the Group log file."""
    from mwp_local.store.agent_store import DuckDBLocalStore
    from mwp_local.store.duckdb_log import DuckDBLogStore

    durable: set[str] = set()
    ahead: list[str] = []
    staged_commits: list[int] = []
    real_flush = DuckDBLogStore._flush
    real_commit = DuckDBLocalStore.commit

    def flush(self: DuckDBLogStore) -> None:  # caller holds the write lock
        ids = [e.event_id for s in self._staged for e in s.batch.events]
        staged_commits.append(len(self._staged))
        real_flush(self)
        durable.update(ids)

    def commit(self: DuckDBLocalStore, batch: Any) -> None:
        ahead.extend(row.event_id for row in batch.events if row.event_id not in durable)
        real_commit(self, batch)

    monkeypatch.setattr(DuckDBLogStore, "_flush", flush)
    monkeypatch.setattr(DuckDBLocalStore, "commit", commit)
    sandbox = Sandbox(tmp_path / "t", SAMPLES / "flagship.toml", seed=5, mode="threads")
    summary = sandbox.run(timeout_s=240, scale=1500)
    assert summary.finished
    assert ahead == []
    assert max(staged_commits) > 1  # Commands were acknowledged before their batch was written
    assert sandbox.log.store.staged == 0  # type: ignore[attr-defined]
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()


def test_write_behind_syncs_each_blob_before_the_log_write_that_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml")
    store, blobs = sandbox.log.store, sandbox._blobs
    deferred: list[int] = []
    put = blobs.put

    def counting_put(content: Any, *, defer_sync: bool = False) -> Any:
        ref = put(content, defer_sync=defer_sync)
        deferred.append(len(blobs.unsynced))
        return ref

    writes: list[tuple[Path, ...]] = []
    transaction = store._transaction  # type: ignore[attr-defined]

    def checked(*args: Any) -> None:
        writes.append(blobs.unsynced)  # what a crash during this log write could lose
        transaction(*args)

    monkeypatch.setattr(blobs, "put", counting_put)
    monkeypatch.setattr(store, "_transaction", checked)
    sandbox.run()
    assert deferred and max(deferred) > 0  # blobs waited for their log write ...
    assert writes and all(waiting == () for waiting in writes)  # ... and none outlived it
    assert blobs.unsynced == ()
    for _ in range(3):  # outside write-behind every blob is durable when put
        sandbox.step()
    assert blobs.unsynced == ()
    sandbox.close()
