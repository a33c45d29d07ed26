"""``mwp-local run -v`` prints every step and why the agent took it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mwp_local.cli import main
from mwp_local.drivers.sandbox import Sandbox

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


def test_verbose_run_prints_every_step_and_its_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", str(SAMPLES / "learn.toml"), "--dir", str(tmp_path / "run"), "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = [i for i, line in enumerate(lines) if re.match(r"#\d+ ", line)]
    # the same file and seed, run here: one line per Command the log received from the agents
    twin = Sandbox(tmp_path / "twin", SAMPLES / "learn.toml", seed=1)
    twin.run()
    sent = twin.sql(
        "SELECT count(*) AS n FROM receipts WHERE actor_id NOT LIKE '%:service:%'"
    ).to_pylist()[0]["n"] + len(twin.log.store.rejections())
    twin.close()
    assert len(steps) == sent > 0
    for i in steps:
        why = lines[i + 1]
        assert why.startswith("    why: ") and len(why) > len("    why: ")
