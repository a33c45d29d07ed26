"""kill -9 campaign: a threads-mode run is killed (SIGKILL) at seeded random moments; each time
the reopened directory passes ``verify-log`` and the invariant checker, and every Command the run
had acknowledged (printed after its durable commit returned) is in the log.

The kill moment is "right after the N-th acknowledgement was read", N seeded per trial; the run
keeps going on its own threads while the test reads, so the kill lands wherever the run is by
then (mid-commit, between commits, while a Worker's local store is being written). No sleeps.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mwp_local.campaign.acks import parse_acks
from mwp_local.campaign.checker import check_directory
from mwp_local.cli import main as cli
from mwp_local.store.sandbox_dir import open_directory

REPO = Path(__file__).resolve().parents[2]
MISSION = REPO / "sample_missions" / "campaign.toml"
TRIALS = int(os.environ.get("MWP_KILL_TRIALS", "20"))


def _run_and_kill(directory: Path, seed: int, after_acks: int, log: Path) -> tuple[list[str], bool]:
    """Start the run, SIGKILL it after ``after_acks`` acknowledgements; return its output lines
    and whether it was killed (False if it finished first)."""
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mwp_local.cli",
                "run",
                str(MISSION),
                "--dir",
                str(directory),
                "--mode",
                "threads",
                "--seed",
                str(seed),
                "--scale",
                "2400",
                "--print-acks",
            ],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
        killed = False
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            acks = 0
            for line in proc.stdout:
                lines.append(line)
                acks += line.startswith("ACK ")
                if acks >= after_acks:
                    os.kill(proc.pid, signal.SIGKILL)
                    killed = True
                    break
            lines += proc.stdout.read().splitlines(keepends=True)  # what it wrote before dying
        finally:
            if proc.poll() is None and not killed:
                os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
    return lines, killed


@pytest.mark.slow
def test_a_run_killed_at_random_moments_always_reopens_whole(tmp_path: Path) -> None:
    rng = random.Random(9)
    killed = 0
    for trial in range(TRIALS):
        directory = tmp_path / f"run-{trial}"
        lines, was_killed = _run_and_kill(
            directory, seed=trial, after_acks=rng.randint(1, 50), log=tmp_path / f"{trial}.err"
        )
        killed += was_killed
        acks = parse_acks(lines)
        ack_file = tmp_path / f"acks-{trial}.jsonl"
        ack_file.write_text("".join(line[4:] for line in lines if line.startswith("ACK ")))
        assert cli(["verify-log", str(directory)]) == 0, f"trial {trial}: verify-log failed"
        report = check_directory(directory, acks=ack_file)
        assert report.ok, f"trial {trial}: {report.problems()}"
        assert report.tallies["acknowledged_present"].checks == len(acks) > 0
        log = open_directory(directory)  # and it opens for writing again, replaying its log
        assert log.store.event_count() >= len([a for a in acks if a["outcome"] == "accepted"])
        log.store.close()
    assert killed == TRIALS
