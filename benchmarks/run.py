"""``make bench``: measure the sandbox against ceilings measured in the same run.

Usage::

    python benchmarks/run.py                 # every figure, full sizes (~10 minutes)
    python benchmarks/run.py --quick         # every benchmark once on tiny sizes (smoke test)
    python benchmarks/run.py --only 1,4      # some figures only
    python benchmarks/run.py --output PATH   # where results.json goes
    python benchmarks/run.py --only 6 --threads-work-per-mission 250   # 6c at 2,000 WorkItems
    python benchmarks/run.py --only 6 --work-per-mission 50 --growth-work-per-mission 5 \
        --threads-work-per-mission 50       # figure 6 at a fifth of its size
    python benchmarks/run.py --markdown benchmarks/results.json   # its Markdown table

Prints a table and writes ``results.json`` (``benchmarks/results.json`` by default; a quick run
writes to a temporary directory unless ``--output`` is given, so it never replaces the results
of a full run). The figures are those of issue 10 (see benchmarks/README.md for how
to read them). Speed is reported here and never asserted: a missed target is printed as
``MISSED``, and the run still succeeds.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # run as a script, the sibling modules are importable
    sys.path.insert(0, str(HERE))

import authority_bench  # noqa: E402
import misc_bench  # noqa: E402
import scenario_bench  # noqa: E402
import sql_bench  # noqa: E402
from harness import (  # noqa: E402
    NOISE_NOTE,
    Entry,
    load_average,
    markdown_from_results,
    render_table,
    write_results,
)

FIGURES = ("1", "2", "3", "4", "5", "6", "7")


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; returns the process exit status (0 even when targets are missed)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="every benchmark once, tiny sizes")
    parser.add_argument("--only", default="", help="comma-separated figures, e.g. 1,4")
    parser.add_argument("--output", type=Path, help="where to write results.json")
    parser.add_argument(
        "--work-per-mission",
        type=int,
        help="WorkItems per Mission of figures 6b and 6d (step mode; 250 gives 2,000 WorkItems)",
    )
    parser.add_argument(
        "--growth-work-per-mission",
        type=int,
        help="WorkItems per Mission of the small run figure 6d compares with (25: 200)",
    )
    parser.add_argument(
        "--threads-work-per-mission",
        type=int,
        help="WorkItems per Mission of figure 6c (threads mode; 250 gives 2,000 WorkItems)",
    )
    parser.add_argument(
        "--markdown", type=Path, help="print the Markdown table of a results.json and stop"
    )
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown_from_results(json.loads(args.markdown.read_text(encoding="utf-8"))))
        return 0
    only = tuple(f.strip() for f in args.only.split(",") if f.strip())
    unknown = [f for f in only if f not in FIGURES]
    if unknown:
        parser.error(f"unknown figure(s) {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    output = args.output
    if output is None:
        output = (
            Path(tempfile.mkdtemp(prefix="mwp-bench-quick-")) / "results.json"
            if args.quick
            else HERE / "results.json"
        )

    def wanted(figure: str) -> bool:
        return not only or figure in only

    began = time.perf_counter()
    entries: list[Entry] = []
    print(f"mwp_local benchmarks ({'quick' if args.quick else 'full'} run)")
    print(NOISE_NOTE)
    steps: list[tuple[str, str, Callable[[], list[Entry]]]] = [
        ("1", "Authority throughput", lambda: authority_bench.figure_1(_authority(args.quick))),
        (
            "2",
            "growth, replay and rebuild (figures 2 and 3)",
            lambda: authority_bench.figure_2_and_3(_authority(args.quick)),
        ),
        ("4", "SQL on a large log, Parquet export", lambda: sql_bench.figure_4(_sql(args.quick))),
        ("5", "Artifact blobs", lambda: misc_bench.figure_5(_misc(args.quick))),
        (
            "6",
            "scenario wall times",
            lambda: scenario_bench.figure_6(_scenario(args)),
        ),
        ("7", "import time", lambda: misc_bench.figure_7(_misc(args.quick))),
    ]
    load = [load_average()]
    for figure, title, run in steps:
        if not (wanted(figure) or (figure == "2" and wanted("3"))):
            continue
        started = time.perf_counter()
        print(f"\n… figure {figure}{'' if figure != '2' else ' and 3'}: {title}", flush=True)
        entries += run()
        load.append(load_average())
        print(
            f"  done in {time.perf_counter() - started:.1f} s (load average {load[-1]})",
            flush=True,
        )
    seconds = time.perf_counter() - began
    print()
    print(render_table(entries))
    missed = [e for e in entries if e.met is False]
    pending = [e for e in entries if e.pending]
    print(
        f"\n{len(entries)} figures in {seconds:.0f} s: "
        f"{sum(e.met is True for e in entries)} targets met, {len(missed)} missed, "
        f"{len(pending)} pending."
    )
    if missed:
        print("Missed targets: " + "; ".join(f"{e.figure} {e.name}" for e in missed))
    busy = [v for v in load if v is not None]
    if busy:
        print(
            f"1-minute load average during the run: {min(busy)}–{max(busy)} on "
            f"{os.cpu_count()} cores (above the core count, other work competed for the CPU)."
        )
    print(NOISE_NOTE)
    write_results(output, entries, quick=args.quick, seconds=seconds, load=load)
    print(f"Results written to {output}")
    return 0


def _authority(quick: bool) -> authority_bench.Sizes:
    return authority_bench.QUICK if quick else authority_bench.FULL


def _sql(quick: bool) -> sql_bench.Sizes:
    return sql_bench.QUICK if quick else sql_bench.FULL


def _misc(quick: bool) -> misc_bench.Sizes:
    return misc_bench.QUICK if quick else misc_bench.FULL


def _scenario(args: argparse.Namespace) -> scenario_bench.Sizes:
    sizes = scenario_bench.QUICK if args.quick else scenario_bench.FULL
    chosen = {
        name: value
        for name in ("work_per_mission", "growth_work_per_mission", "threads_work_per_mission")
        if (value := getattr(args, name)) is not None
    }
    return dataclasses.replace(sizes, **chosen)


if __name__ == "__main__":
    sys.exit(main())
