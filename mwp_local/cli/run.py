"""``mwp-local run MISSION_FILE --dir DIR [--seed N] [--mode step|threads] [-v]``: run a mission
file to the end, with a progress bar (or, with ``-v``, every step and why), then print a
summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..drivers.mission_file import MissionFileError
from ..drivers.sandbox import Sandbox, StepReport
from ._common import fail


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument("mission", type=Path, metavar="MISSION_FILE", help="a mission file (TOML)")
    parser.add_argument("--dir", type=Path, required=True, help="a new sandbox directory")
    parser.add_argument("--seed", type=int, help="override the mission file's seed")
    parser.add_argument("--mode", choices=("step", "threads"), default="step")
    parser.add_argument("--max-steps", type=int, default=100_000)
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="print every step and why the agent took it"
    )
    parser.add_argument(
        "--scale",
        type=float,
        default=600.0,
        help="threads mode: simulated seconds per real second (default 600)",
    )
    parser.add_argument(
        "--print-acks",
        action="store_true",
        help="print 'ACK {json}' for every Command once its commit has returned (for kill -9 "
        "campaigns: every acknowledged Command must survive)",
    )


def _bar(done: int, total: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return "[" + "#" * filled + "." * (width - filled) + "]"


def run(args: argparse.Namespace) -> int:
    """Run and summarize; exit 1 when some Mission did not reach a terminal state."""
    try:
        sandbox = Sandbox(args.dir, args.mission, seed=args.seed, mode=args.mode)
    except (MissionFileError, FileExistsError) as exc:
        return fail(str(exc))
    if args.print_acks:
        from mwp_local.campaign.acks import record_acknowledgements

        def write(line: str) -> None:
            sys.stdout.write(line)
            sys.stdout.flush()

        record_acknowledgements(sandbox.log, write)
    items = sum(len(m.work) for m in sandbox.spec.missions)
    interactive = sys.stdout.isatty() and not args.verbose

    def progress(step: int, report: StepReport) -> None:
        if args.verbose:
            print(report.summary())
            print(f"    why: {report.why}")
            if not report.accepted and report.rule:
                print(f"    rule: {report.rule}")
        elif interactive and step % 10 == 0:
            verified = sum(
                1 for i in sandbox.log.state.work_items.values() if str(i.state) == "verified"
            )
            sys.stdout.write(
                f"\r{_bar(verified, items)} {verified}/{items} WorkItems verified, "
                f"{step} steps, {report.at}"
            )
            sys.stdout.flush()

    summary = sandbox.run(max_steps=args.max_steps, progress=progress, scale=args.scale)
    if interactive:
        sys.stdout.write("\n")
    print("\n".join(summary.lines()))
    print(
        f"Log: {args.dir / 'group.duckdb'}  (try: mwp-local sql {args.dir} "
        '"SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC")'
    )
    sandbox.close()
    return 0 if summary.finished else 1
