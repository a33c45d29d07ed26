"""``mwp-local poc --dir DIR [--json] [--mode step|threads] [--seed N]``: run the §22 proof of
concept (``sample_missions/poc.toml`` plus scripted probes) into a new directory, check the log,
and print the report; exit 1 when any check fails."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mwp_local.poc.checks import run_checks
from mwp_local.poc.report import canonical_report, table
from mwp_local.poc.scenario import SAMPLE, run_scenario

from ..drivers.mission_file import MissionFileError
from ._common import fail, sandbox_problem


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument("--dir", type=Path, required=True, help="a new sandbox directory")
    parser.add_argument("--json", action="store_true", help="print the canonical JSON report")
    parser.add_argument("--mode", choices=("step", "threads"), default="step")
    parser.add_argument("--seed", type=int, help="override the mission file's seed")
    parser.add_argument("--mission", type=Path, default=SAMPLE, help=argparse.SUPPRESS)
    parser.add_argument(
        "--check-only", action="store_true", help="check an existing directory without running"
    )


def run(args: argparse.Namespace) -> int:
    """Run (unless ``--check-only``), check, report; 0 only when every check passed."""
    scenario = None
    if args.check_only:
        problem = sandbox_problem(args.dir)
        if problem is not None:
            return fail(problem)
    else:
        try:
            scenario = run_scenario(args.dir, mode=args.mode, seed=args.seed, mission=args.mission)
        except (MissionFileError, FileExistsError) as exc:
            return fail(str(exc))
    results = run_checks(args.dir)
    if args.json:
        sys.stdout.write(canonical_report(results, scenario).decode("utf-8") + "\n")
    else:
        print(table(results))
        if scenario is not None:
            print(
                f"{scenario.mode} mode, seed {scenario.seed}: {scenario.steps} steps, "
                f"{scenario.wall_seconds:.2f} s wall (run and probes)"
            )
    return 0 if all(r.ok for r in results) else 1
