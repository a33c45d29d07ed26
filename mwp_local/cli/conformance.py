"""``mwp-local conformance``: run the official bundles through the project's own code.

Prints one line per bundle (``structural 58/58``) and every failure; exits 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mwp_local.conformance import run_all

from ._common import fail


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument(
        "--root",
        type=Path,
        required=True,
        help="a protocol checkout, e.g. ../shared/protocol",
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report")


def run(args: argparse.Namespace) -> int:
    """Run all three bundles and report."""
    root: Path = args.root
    if not (root / "conformance" / "manifest.json").is_file():
        return fail(f"{root} is not a protocol checkout (no conformance/manifest.json)")
    results = run_all(root)
    ok = all(r.passed == r.total and not r.failures for r in results)
    if args.json:
        report = {
            "root": str(root),
            "ok": ok,
            "bundles": [
                {
                    "name": r.name,
                    "passed": r.passed,
                    "total": r.total,
                    "failures": list(r.failures),
                }
                for r in results
            ],
        }
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        for r in results:
            print(f"{r.name} {r.passed}/{r.total}")
        for r in results:
            for failure in r.failures:
                print(f"FAIL {r.name}: {failure}")
    return 0 if ok else 1
