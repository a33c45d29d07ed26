"""``mwp-local audit-import OUT FILE.jsonl --registry FIXTURE --trust SERVICE...``: another
Organization's signed Events, for analysis.

Every Event is verified against that Organization's Registry fixture (the official format) and
must have been accepted by one of the ``--trust`` services; what verifies is kept in a new log
under ``OUT`` with the documented views, so ``mwp-local sql OUT QUERY`` works on it. The report
(also ``OUT/audit-report.json``) says what was read, imported, refused (line by line, why),
interpreted and not. It never touches a sandbox: the strict ``mwp-local import`` is the path
into one (``store.audit_import``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ..store.audit_import import AUDIT_REPORT, LOG_FILE, audit_import, load_registry
from ._common import fail, input_file, input_or_stdin


def _target(text: str) -> Path:
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a file, not a directory")
    if (path / LOG_FILE).exists() or (path / AUDIT_REPORT).exists():
        raise argparse.ArgumentTypeError(
            f"{path} holds a log already; an audit import writes a new directory"
        )
    return path


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    parser.add_argument("out", type=_target, metavar="OUT", help="a new directory for the log")
    parser.add_argument(
        "file",
        type=input_or_stdin,
        metavar="FILE.jsonl",
        help="signed Events, one per line (- reads stdin)",
    )
    parser.add_argument(
        "--registry",
        type=input_file,
        required=True,
        metavar="FIXTURE",
        help="the Organization's Registry (official registry-fixture JSON)",
    )
    parser.add_argument(
        "--trust",
        action="append",
        required=True,
        metavar="SERVICE",
        help="the Principal ID of a service whose acceptance to trust (repeatable)",
    )


def run(args: argparse.Namespace) -> int:
    """Import what verifies; print the report."""
    import sys

    try:
        registry = load_registry(args.registry)
    except ValueError as exc:
        return fail(f"{exc}; give the Organization's Registry fixture with --registry")
    data = sys.stdin.buffer.read() if str(args.file) == "-" else args.file.read_bytes()
    report = audit_import(data.splitlines(), registry, args.trust, args.out, source=str(args.file))
    for line in report.summary():
        print(line)
    print(f'Report: {args.out / AUDIT_REPORT}; query it: mwp-local sql {args.out} "SELECT ..."')
    return 0
