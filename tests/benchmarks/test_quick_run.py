"""``benchmarks/run.py --quick`` runs every benchmark once on tiny sizes and writes a well-formed
``results.json``. Only that is checked: speed is measured by ``make bench``, never asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

#: The slow tier: one quick run of every benchmark takes about half a minute.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FIGURES = {"1", "2", "3", "4", "5", "6", "7"}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("bench") / "results.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--output", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    doc: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return doc


def test_quick_run_is_marked_quick_and_says_the_machine_is_noisy(results: dict[str, Any]) -> None:
    assert results["quick"] is True
    assert "noisy" in results["noise"]
    assert results["machine"]["cpus"] >= 1


def test_every_figure_of_the_issue_has_an_entry(results: dict[str, Any]) -> None:
    figures = {entry["figure"].split(".")[0].rstrip("abcd") for entry in results["entries"]}
    assert figures == FIGURES


def test_every_measured_entry_has_name_unit_median_min_max_and_repetitions(
    results: dict[str, Any],
) -> None:
    for entry in results["entries"]:
        assert entry["name"] and entry["unit"], entry
        if entry["status"] == "pending":
            assert entry["reason"].startswith("pending"), entry
            continue
        assert entry["status"] == "measured", entry
        assert entry["repetitions"] == len(entry["samples"]) >= 1, entry
        assert entry["min"] <= entry["median"] <= entry["max"], entry


def test_entries_with_a_ceiling_have_a_ratio_and_targets_a_verdict(
    results: dict[str, Any],
) -> None:
    for entry in results["entries"]:
        if "ceiling" in entry:
            ceiling = entry["ceiling"]
            assert {"name", "unit", "median", "min", "max", "repetitions"} <= set(ceiling)
            assert isinstance(entry["ratio"], float), entry
        if entry["status"] == "measured":
            assert "target" in entry and "met" in entry, entry
        if entry.get("target") is not None:
            assert isinstance(entry["met"], bool), entry


def test_scenario_figures_run_the_poc_and_the_large_mission_in_both_modes(
    results: dict[str, Any],
) -> None:
    scenario = {e["figure"]: e for e in results["entries"] if e["figure"].startswith("6")}
    assert set(scenario) == {"6a", "6b", "6c", "6d"}
    assert scenario["6a"]["status"] == "measured", scenario["6a"]  # `mwp-local poc` ran
    assert scenario["6a"]["target"] is None and scenario["6a"]["met"] is None  # retired
    assert scenario["6b"]["status"] == scenario["6c"]["status"] == "measured"
    assert "Missions: 2 approved" in scenario["6b"]["notes"]  # step mode: deterministic
    assert "Missions:" in scenario["6c"]["notes"]  # threads mode: the outcome is reported
    for figure in ("6b", "6c"):  # agent actions per CPU-second against issue 25's target
        assert scenario[figure]["unit"] == "actions/CPU-s"
        assert scenario[figure]["target"].startswith("≥ 3 × ")
    growth = scenario["6d"]  # the cost per action at the full size against a tenth of it
    assert growth["unit"] == "ms/action" and growth["target"].startswith("≤ 1.2 × the cost at ")
    assert growth["ratio"] == pytest.approx(growth["median"] / growth["ceiling"]["median"], 1e-3)
