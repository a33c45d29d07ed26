"""``mwp-local campaign --seeds N``: run seeded fault schedules over sample missions and check
every resulting log against the invariants; print per-invariant counts, exit 1 on a violation.

``mwp-local campaign --check DIR`` runs only the invariant checker over an existing directory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mwp_local.campaign.runner import TrialResult, meanings, run_campaign
from mwp_local.campaign.schedule import FAULT_KINDS

from ..campaign.checker import check_directory
from ..drivers.mission_file import MissionFileError
from ..drivers.mission_file import load as load_mission_file
from ._common import fail, sandbox_directory

DEFAULT_MISSION = Path(__file__).resolve().parents[2] / "sample_missions" / "campaign.toml"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument("--seeds", type=int, default=20, help="how many trials (seeds 0..N-1)")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed")
    parser.add_argument(
        "--mission",
        type=Path,
        action="append",
        help="a mission file (repeat for several; seed s runs mission s mod count); default: "
        "sample_missions/campaign.toml",
    )
    parser.add_argument(
        "--jobs", type=int, default=min(4, os.cpu_count() or 1), help="trials run in parallel"
    )
    parser.add_argument("--keep", type=Path, help="keep every trial directory under this one")
    parser.add_argument(
        "--check", type=sandbox_directory, metavar="DIR", help="only check one directory"
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _totals(results: list[TrialResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {
        n: {"checks": 0, "violations": 0, "examples": [], "meaning": m}
        for n, m in meanings().items()
    }
    for r in results:
        for name, (checks, violations, examples) in r.tallies.items():
            row = out[name]
            row["checks"] += checks
            row["violations"] += violations
            row["examples"] += [f"seed {r.seed}: {e}" for e in examples][
                : 10 - len(row["examples"])
            ]
    return out


def _crashes(results: list[TrialResult], totals: dict[str, dict[str, Any]]) -> dict[str, int]:
    """What the crash trials did: how many, what they acknowledged and lost, and how many
    checks ``acknowledged_present`` made of it."""
    crashed = [r.crash for r in results if r.crash]
    return {
        "trials": len(crashed),
        "acknowledged": sum(c["acknowledged"] for c in crashed),
        "lost": sum(c["lost"] for c in crashed),
        "max_lost": max((c["lost"] for c in crashed), default=0),
        "checks": totals["acknowledged_present"]["checks"],
    }


def _faults(results: list[TrialResult]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in results:
        for kind, (scheduled, applied) in r.faults.items():
            row = out.setdefault(kind, {"scheduled": 0, "applied": 0})
            row["scheduled"] += scheduled
            row["applied"] += applied
    for name, row in out.items():
        fault_kind = FAULT_KINDS.get(name)
        row["how"] = fault_kind.how if fault_kind else "(this variant)"
        row["available"] = fault_kind.applied if fault_kind else True
    return out


def _check_only(args: argparse.Namespace) -> int:
    report = check_directory(args.check)
    if args.json:
        print(
            json.dumps(
                {
                    n: {"checks": t.checks, "violations": t.violations, "examples": t.examples}
                    for n, t in report.tallies.items()
                },
                indent=2,
            )
        )
    else:
        rows = [["invariant", "checks", "violations"]]
        rows += [[n, str(t.checks), str(t.violations)] for n, t in report.tallies.items()]
        print(_table(rows))
        for problem in report.problems():
            print(f"  - {problem}")
    return 0 if report.ok else 1


def run(args: argparse.Namespace) -> int:
    """Run the campaign and print the tables; exit 1 on any violation."""
    if args.check is not None:
        return _check_only(args)
    missions = [str(m) for m in (args.mission or [DEFAULT_MISSION])]
    for mission in missions:  # a wrong file is refused before any trial starts
        try:
            load_mission_file(mission)
        except MissionFileError as exc:
            return fail(str(exc))
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    started = time.perf_counter()
    done = 0

    def progress(result: TrialResult) -> None:
        nonlocal done
        done += 1
        if not args.json and sys.stdout.isatty():
            sys.stdout.write(f"\r{done}/{len(seeds)} trials")
            sys.stdout.flush()

    results = run_campaign(seeds, missions, jobs=args.jobs, keep=args.keep, progress=progress)
    wall = time.perf_counter() - started
    totals, faults = _totals(results), _faults(results)
    crashes = _crashes(results, totals)
    violations = sum(r.violations for r in results)
    failing = [r for r in results if r.violations]
    if args.json:
        print(
            json.dumps(
                {
                    "trials": len(results),
                    "finished": sum(r.finished for r in results),
                    "violations": violations,
                    "wall_seconds": round(wall, 2),
                    "invariants": totals,
                    "faults": faults,
                    "crashes": crashes,
                    "bus": {
                        k: sum(r.bus.get(k, 0) for r in results)
                        for k in sorted({k for r in results for k in r.bus})
                    },
                    "failing_trials": [{"seed": r.seed, "directory": r.directory} for r in failing],
                },
                indent=2,
            )
        )
        return 1 if violations else 0
    if sys.stdout.isatty():
        sys.stdout.write("\n")
    finished = sum(r.finished for r in results)
    print(
        f"{len(results)} trials over {', '.join(Path(m).name for m in missions)} in {wall:.1f} s; "
        f"{finished} ran their Missions to a terminal state"
    )
    rows = [["invariant", "checks", "violations"]]
    rows += [[n, str(t["checks"]), str(t["violations"])] for n, t in totals.items()]
    print(_table(rows))
    print()
    rows = [["fault", "scheduled", "applied", "how"]]
    for name, row in sorted(faults.items()):
        how = row["how"] if row["available"] else f"NOT APPLIED YET: {row['how']}"
        shown = f"  {name.split('/')[1]}" if "/" in name else name
        scheduled = "" if "/" in name else str(row["scheduled"])
        rows.append([shown, scheduled, str(row["applied"]), how])
    print(_table(rows))
    if crashes["trials"]:
        print(
            f"\ncrashed like kill -9 (the write-behind tail dropped, the directory checked from "
            f"its files): {crashes['trials']} trials, {crashes['acknowledged']} Commands "
            f"acknowledged, {crashes['lost']} of them lost with the tail (at most "
            f"{crashes['max_lost']} in one trial); acknowledged_present made "
            f"{crashes['checks']} checks"
        )
    bus: dict[str, int] = {}
    for r in results:
        for key, value in r.bus.items():
            bus[key] = bus.get(key, 0) + value
    if bus:
        print(
            f"\ndelivery bus, in {sum(1 for r in results if r.bus)} trials: "
            + ", ".join(f"{k} {v}" for k, v in sorted(bus.items()) if v)
        )
    if failing:
        print(f"\nVIOLATIONS: {violations} in {len(failing)} trial(s)")
        for name, row in totals.items():
            for example in row["examples"]:
                print(f"  - {name}: {example}")
        for r in failing:
            print(f"  kept: {r.directory}")
        return 1
    print("\nOK: no invariant was violated")
    return 0
