"""Crash safety of group commit: SIGKILL at random moments never loses an acknowledged Command
and never leaves half a batch behind; ``verify-log`` passes after every crash."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization
from mwp_local.store.verify import verify_log

CHILD = Path(__file__).with_name("crash_child.py")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow  # kill -9 trials of a real writer process
def test_sigkill_during_group_commit_keeps_every_acknowledged_command(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    directory = tmp_path / "sandbox"
    acknowledged: list[str] = []
    for trial in range(5):
        wanted = rng.randint(1, 6)
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(directory), str(trial)],
            stdout=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert child.stdout is not None
        for _ in range(wanted):
            line = child.stdout.readline().decode()
            assert line, "the child stopped before acknowledging"
            acknowledged.extend(line.split())
        child.send_signal(signal.SIGKILL)  # somewhere inside the next batch, or between batches
        child.wait()
        org = load_organization(directory)
        store = DuckDBLogStore(directory / LOG_FILE, read_only=True)
        try:
            receipts = {r.action_id: r for r in store.receipts()}
            missing = [a for a in acknowledged if a not in receipts]
            assert missing == [], f"trial {trial}: acknowledged but lost: {missing[:3]}"
            events = {e.event_id for e in store.events()}
            for receipt in receipts.values():
                assert set(receipt.event_ids) <= events  # no receipt without its Events
            assert len(receipts) % 10 == 9  # whole batches only: 8 bootstrap + 1 create + 10k
            report = verify_log(org, store)
            assert report.ok, report.problems
        finally:
            store.close()
