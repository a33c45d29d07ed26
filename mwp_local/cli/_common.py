"""Helpers shared by subcommands: the clock, sandbox paths and the argument types that check them
before anything is opened, the ``error:`` line on standard error, printing outcomes."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from mwp_local.protocol.timestamps import Timestamp, format_utc, parse_timestamp


def add_now(parser: argparse.ArgumentParser) -> None:
    """The ``--now`` option: the instant the sandbox treats as current (default: wall clock)."""
    parser.add_argument(
        "--now",
        help="the current time as an RFC 3339 UTC timestamp (default: the wall clock); "
        "useful for reproducible runs",
    )


def now_from(args: argparse.Namespace) -> Timestamp:
    """The current instant: ``--now`` or the wall clock (millisecond precision)."""
    if getattr(args, "now", None):
        return parse_timestamp(args.now)
    micros = int(_dt.datetime.now(_dt.UTC).timestamp() * 1000) * 1000
    return parse_timestamp(format_utc(micros))


def directory(parser: argparse.ArgumentParser, *, new: bool = False) -> None:
    """The positional sandbox directory: an existing one, checked while the arguments are parsed
    (so a wrong path is a usage error, exit 2, before anything is opened), or with ``new`` the
    path of one to create."""
    if new:
        parser.add_argument("dir", type=Path, metavar="DIR", help="the new sandbox directory")
    else:
        parser.add_argument(
            "dir", type=sandbox_directory, metavar="DIR", help="a sandbox directory"
        )


def sandbox_problem(path: Path) -> str | None:
    """Why ``path`` is not a sandbox directory, in words for the person who typed it; None if
    it is one."""
    # What makes a sandbox directory (``sandbox_dir`` writes both); imported here, where a
    # directory is checked, so that subcommands without one need not load the sandbox.
    from ..store.sandbox_dir import LOG_FILE, ORGANIZATION_FILE

    if not path.exists():
        return f"{path} does not exist"
    if not path.is_dir():
        return f"{path} is not a directory"
    for name in (ORGANIZATION_FILE, LOG_FILE):
        if not (path / name).is_file():
            return (
                f"{path} is not a sandbox directory (no {name}); "
                "`mwp-local init DIR` or `mwp-local run MISSION_FILE --dir DIR` creates one"
            )
    return None


def analysis_directory(text: str) -> Path:
    """argparse type: a sandbox directory, or one an audit import wrote (its log and report)."""
    from ..store.audit_import import AUDIT_REPORT, LOG_FILE

    path = Path(text)
    if (path / LOG_FILE).is_file() and (path / AUDIT_REPORT).is_file():
        return path
    return sandbox_directory(text)


def sandbox_directory(text: str) -> Path:
    """argparse type: an existing sandbox directory."""
    path = Path(text)
    problem = sandbox_problem(path)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return path


def input_file(text: str) -> Path:
    """argparse type: an existing file to read."""
    path = Path(text)
    if not path.exists():
        raise argparse.ArgumentTypeError(f"{path} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is a directory, not a file")
    return path


def input_or_stdin(text: str) -> Path:
    """argparse type: an existing file to read, or ``-`` for standard input."""
    return Path(text) if text == "-" else input_file(text)


def name_value(text: str) -> tuple[str, str]:
    """argparse type: ``NAME=VALUE`` (the value may hold further ``=``)."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def fail(message: str, code: int = 2) -> int:
    """Print ``error: message`` on standard error and return ``code`` (the exit code)."""
    print(f"error: {message}", file=sys.stderr)
    return code


def print_outcome(outcome: Any, *, as_json: bool = False) -> None:
    """Print a receipt or a rejection (code, explanation, rule) for a person."""
    if outcome.ok:
        receipt = json.loads(outcome.receipt.receipt_json) if outcome.receipt else {}
        if as_json:
            print(
                json.dumps({"accepted": True, "duplicate": outcome.duplicate, "receipt": receipt})
            )
            return
        tag = "ACCEPTED (idempotent retry: original receipt)" if outcome.duplicate else "ACCEPTED"
        print(f"{tag} {receipt.get('kind')} {receipt.get('actionId')}")
        for event in receipt.get("events", []):
            seq = f"#{event['sequence']}" if event.get("sequence") else "(org)"
            print(f"  {seq:>6} {event['kind']}  {event['eventId']}")
        return
    error = outcome.error
    if as_json:
        print(
            json.dumps(
                {
                    "accepted": False,
                    "code": error.code.value,
                    "explanation": error.explanation,
                    "rule": error.rule,
                    "stage": error.stage,
                }
            )
        )
        return
    print(f"REJECTED {error.code.value}: {error.explanation}")
    if error.rule:
        print(f"  rule: {error.rule}")
    if error.stage:
        print(f"  stage: {error.stage} ({error.reason})")
