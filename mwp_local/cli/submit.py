"""``mwp-local submit DIR FILE...``: apply signed Commands; print receipts or rejections.

Each FILE holds one Command, or several as JSON lines. ``--group-commit`` decides all of them and
commits them in one transaction (acknowledged together); by default each is committed on its own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..store.sandbox_dir import open_directory
from ._common import add_now, directory, input_or_stdin, now_from, print_outcome


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)
    parser.add_argument(
        "files", type=input_or_stdin, nargs="+", metavar="FILE", help="signed Commands"
    )
    parser.add_argument("--group-commit", action="store_true", help="one transaction for all")
    parser.add_argument("--json", action="store_true", help="one JSON line per outcome")
    add_now(parser)


def _commands(files: list[Path]) -> list[bytes]:
    out: list[bytes] = []
    for file in files:
        data = sys.stdin.buffer.read() if str(file) == "-" else file.read_bytes()
        stripped = data.strip()
        lines = stripped.split(b"\n")
        if len(lines) > 1 and all(line.strip().startswith(b"{") for line in lines if line.strip()):
            out.extend(line.strip() for line in lines if line.strip())
        else:
            out.append(stripped)
    return out


def run(args: argparse.Namespace) -> int:
    """Submit and report; exit 1 when any Command was rejected."""
    commands = _commands(args.files)
    log = open_directory(args.dir)
    now = now_from(args)
    if args.group_commit:
        outcomes = log.submit_many(commands, now)
    else:
        outcomes = [log.submit(c, now) for c in commands]
    for outcome in outcomes:
        print_outcome(outcome, as_json=args.json)
    log.close()
    return 0 if all(o.ok for o in outcomes) else 1
