"""One proof-of-concept run per mode, shared by the tests that read it (each run takes a while)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.poc.checks import Result, run_checks
from mwp_local.poc.scenario import ScenarioRun, run_scenario


@pytest.fixture(scope="session")
def step_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ScenarioRun, list[Result]]:
    """The proof of concept in step mode, and its checks."""
    directory = tmp_path_factory.mktemp("poc-step") / "run"
    run = run_scenario(directory, mode="step")
    return run, run_checks(directory)


@pytest.fixture(scope="session")
def threads_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[ScenarioRun, list[Result]]:
    """The proof of concept in threads mode, and its checks."""
    directory = tmp_path_factory.mktemp("poc-threads") / "run"
    run = run_scenario(directory, mode="threads")
    return run, run_checks(directory)


def failing(results: list[Result]) -> dict[str, str]:
    """Name → evidence of every failed check."""
    return {r.name: r.evidence for r in results if not r.ok}


__all__ = ["Path", "failing"]
