"""Kill a child process (SIGKILL) right after it has written its N-th ``ACK`` line.

The child keeps running on its own threads while the parent reads, so the kill lands wherever
the child is by then; the moment is chosen by the count alone (no sleeps). Every line the child
wrote before it died is read afterwards, so "acknowledged" means "written to the pipe".
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_and_kill(argv: Sequence[str], after_acks: int, log: Path) -> tuple[list[str], bool]:
    """Start ``argv`` in the repository, SIGKILL it after ``after_acks`` acknowledgements;
    return its output lines and whether it was killed (False if it finished first). Its stderr
    goes to ``log``."""
    with log.open("w") as stderr:
        proc = subprocess.Popen(
            list(argv),
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
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
