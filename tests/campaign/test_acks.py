"""``mwp-local run --print-acks``: one line per Command, written after its commit returned, and
every one of them is found in the log by ``acknowledged_present``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.campaign.acks import parse_acks
from mwp_local.campaign.checker import check_directory
from mwp_local.cli import main as cli

REPO = Path(__file__).resolve().parents[2]


def test_every_acknowledged_command_of_a_run_is_in_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "run"
    mission = REPO / "sample_missions" / "campaign.toml"
    assert cli(["run", str(mission), "--dir", str(directory), "--print-acks"]) == 0
    lines = capsys.readouterr().out.splitlines(keepends=True)
    acks = parse_acks(lines)
    assert len(acks) > 40 and {a["outcome"] for a in acks} <= {"accepted", "rejected"}
    (tmp_path / "acks.jsonl").write_text(
        "".join(line[4:] for line in lines if line.startswith("ACK "))
    )
    report = check_directory(directory, acks=tmp_path / "acks.jsonl")
    assert report.ok, report.problems()
    assert report.tallies["acknowledged_present"].checks == len(acks)


def test_a_torn_last_line_is_not_an_acknowledgement() -> None:
    whole = 'ACK {"action": "a", "actor": "b", "outcome": "accepted"}\n'
    assert parse_acks([whole, whole[:-9]]) == [{"action": "a", "actor": "b", "outcome": "accepted"}]
