"""Sample runs shared by the analysis tests: each sample Mission run once to its end, in step
mode, and closed, so its log file can be opened read-only (or exported) by every test."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"

#: A small market for one kind of Worker: one paused for the first hour (its offers expire),
#: two with a single slot each (they decline for capacity), an urgent WorkItem offered to
#: several at once (the losers' offers are ``lost_race``).
MARKET: dict[str, Any] = {
    "name": "market",
    "sandbox": {"seed": 5, "start": "2026-07-15T09:00:00Z"},
    "agents": [
        {"name": "coord", "capabilities": ["mwp.coordination@1.0.0"], "max_concurrency": 4},
        {"name": "w1", "capabilities": ["mwp.build@1.2.0"], "max_concurrency": 1},
        {"name": "w2", "capabilities": ["mwp.build@1.0.0"], "max_concurrency": 1},
        {"name": "w3", "capabilities": ["mwp.build@1.1.0"], "max_concurrency": 1},
    ],
    "faults": [{"agent": "w1", "kind": "pause", "at": 0, "for": "1h"}],
    "missions": [
        {
            "id": "m",
            "objective": "Build a thing in parts",
            "owner": "olga",
            "coordinator": "coord",
            "deadline": "3d",
            "budget": {"financial": 500, "tool_calls": 500, "compute_seconds": 500000},
            "work": [
                {
                    "id": "part",
                    "count": 6,
                    "goal": "Build part {n}",
                    "capability": "mwp.build@1.0.0",
                    "duration": "20m",
                    "budget": {"financial": 20},
                },
                {
                    "id": "hot",
                    "goal": "Fix it now",
                    "capability": "mwp.build@1.0.0",
                    "duration": "10m",
                    "urgency": "critical",
                    "budget": {"financial": 20},
                },
            ],
        }
    ],
}

#: The runs the analysis tests read: four samples and the market.
RUNS = ("learn", "flagship", "retries", "child", "market")


def _spec(name: str) -> Any:
    if name == "market":
        return parse(copy.deepcopy(MARKET), name="market")
    return parse(tomllib.loads((SAMPLES / f"{name}.toml").read_text()), name=name)


@pytest.fixture(scope="session")
def sample_runs(tmp_path_factory: pytest.TempPathFactory) -> Mapping[str, Path]:
    """Run name → its sandbox directory, every run finished and closed."""
    out = {}
    for name in RUNS:
        directory = tmp_path_factory.mktemp(f"run-{name}") / "sandbox"
        sandbox = Sandbox(directory, _spec(name))
        try:
            assert sandbox.run().finished
        finally:
            sandbox.close()
        out[name] = directory
    return out
