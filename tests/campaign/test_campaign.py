"""``mwp-local campaign``: seeded fault schedules over the campaign mission, zero violations;
the schedule is data and deterministic; kinds the sandbox cannot apply yet are never counted as
applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mwp_local.campaign.schedule import FAULT_KINDS, make_schedule
from mwp_local.cli import main as cli
from mwp_local.drivers.mission_file import load

MISSION = Path(__file__).resolve().parents[2] / "sample_missions" / "campaign.toml"
SEEDS = 10


def test_schedules_are_seeded_data() -> None:
    spec = load(MISSION)
    first = [make_schedule(s, str(MISSION), spec) for s in range(20)]
    assert first == [make_schedule(s, str(MISSION), spec) for s in range(20)]
    assert len({repr(s.faults) for s in first}) == 20
    kinds = {f.kind for s in first for f in s.faults}
    assert kinds == set(FAULT_KINDS)  # every kind is scheduled, applicable yet or not


def test_a_campaign_of_ten_seeds_finds_no_violation(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli(["campaign", "--seeds", str(SEEDS), "--jobs", "2", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, result["invariants"]
    assert result["trials"] == SEEDS and result["violations"] == 0
    for name in (
        "work_item_paths",
        "fencing",
        "single_live_owner",
        "budgets",
        "signatures",
        "projections_replay",
        "external_effect_once",
        "faults_refused",
        "acknowledged_present",
    ):
        assert result["invariants"][name]["checks"] > 0, name
    crashes = result["crashes"]  # seeds 2, 3 and 9 crash after acknowledging
    assert crashes["trials"] == 3 and crashes["acknowledged"] > 0
    assert crashes["checks"] == result["invariants"]["acknowledged_present"]["checks"]
    faults = result["faults"]
    for name, kind in FAULT_KINDS.items():
        if not kind.applied and name in faults:
            assert faults[name]["applied"] == 0, name  # scheduled, reported, never faked
    applied = {n for n, f in faults.items() if f["applied"] and "/" not in n}
    assert {"worker_crash", "forged_command", "stale_command"} <= applied
