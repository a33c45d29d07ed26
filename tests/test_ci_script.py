"""The CI entry point parses as bash and ends by running ``make test``.

A broken merge once pasted a block into a comment of ``.ci/run``; CI then failed in
0 s before running anything. ``bash -n`` catches that on every ``make test``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CI_RUN = ROOT / ".ci" / "run"


def test_ci_run_parses_as_bash() -> None:
    result = subprocess.run(["bash", "-n", str(CI_RUN)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_ci_run_ends_with_make_test() -> None:
    lines = [line.strip() for line in CI_RUN.read_text().splitlines() if line.strip()]
    assert lines[-1] == "make test"
    assert lines[0] == "#!/usr/bin/env bash"
