"""The ``mwp-local`` command line: one module per subcommand, registered in a table.

Each subcommand module exposes ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args) -> int``.
This package only parses arguments and dispatches; the work happens in the library. A path that
cannot be read or written (an ``OSError``) ends the command with ``error: PATH: reason`` on
standard error and exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

#: Subcommand name → module under ``mwp_local.cli`` (imported only when used, so that
#: ``mwp-local --help`` stays fast).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "conformance": (
        "conformance",
        "run the official structural, cryptography and admission bundles",
    ),
    "init": ("init", "create a sandbox directory with its Organization and keys"),
    "sign": ("sign", "sign an unsigned Command as a sandbox Principal"),
    "submit": ("submit", "apply signed Commands; print receipts or rejections"),
    "sql": ("sql", "query the log's SQL views"),
    "verify-log": ("verify_log", "re-verify the whole log and its projections"),
    "export": ("export", "export the log as Hive-partitioned Parquet or JSON lines"),
    "import": ("import_", "ingest signed Events (JSON lines), verified and audited"),
    "audit-import": (
        "audit_import",
        "import another Organization's signed Events for analysis, against its Registry",
    ),
    "registry": ("registry", "print the signing-key Registry"),
    "run": ("run", "run a mission file to the end (step or threads mode)"),
    "poc": ("poc", "run the §22 proof of concept and check its log (exit 1 if a check fails)"),
    "campaign": ("campaign", "run seeded fault campaigns and check every log's invariants"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The top-level parser with every registered subcommand; with ``only``, just that
    subcommand's module is imported and its options configured (the others are listed with
    their help text, which is all a parse of ``only`` can need from them)."""
    parser = argparse.ArgumentParser(
        prog="mwp-local",
        description="A local sandbox for MissionWeaveProtocol 0.1.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if only is not None and name != only:
            continue
        module = importlib.import_module(f"{__name__}.{module_name}")
        module.configure(command)
        command.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``mwp-local``; returns the process exit code."""
    if hasattr(signal, "SIGPIPE"):  # `mwp-local … | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    words = list(sys.argv[1:] if argv is None else argv)
    chosen = next((w for w in words if not w.startswith("-")), None)
    only = chosen if chosen in SUBCOMMANDS else "" if chosen is None else None
    # ``only=""`` (no subcommand: ``--help`` or an error) imports none of them; an unknown word
    # builds the whole parser so that argparse names the choices.
    args = build_parser(only).parse_args(argv)
    try:
        code: int = args._run(args)
    except OSError as exc:  # a path given on the command line cannot be read or written
        from ._common import fail

        code = fail(_describe(exc))
    return code


def _describe(exc: OSError) -> str:
    """An operating-system error in words: the path and what went wrong with it."""
    if exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
