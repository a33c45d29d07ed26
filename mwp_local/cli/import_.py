"""``mwp-local import DIR FILE.jsonl``: ingest signed Events, verified and audited.

Every Event is verified (signature, trusted acceptance) and replayed through the state tables
before anything is written; one bad line rejects the whole file and leaves the log untouched.
"""

from __future__ import annotations

import argparse

from mwp_local.protocol.errors import ProtocolError

from ..store.sandbox_dir import open_directory
from ._common import directory, input_file


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)
    parser.add_argument(
        "file", type=input_file, metavar="FILE.jsonl", help="signed Events, one per line"
    )


def run(args: argparse.Namespace) -> int:
    """Import, or explain why nothing was imported."""
    lines = [line for line in args.file.read_bytes().splitlines() if line.strip()]
    log = open_directory(args.dir)
    try:
        count = log.import_events(lines)
    except ProtocolError as exc:
        print(f"REJECTED (nothing imported) {exc.code.value}: {exc.explanation}")
        return 1
    except Exception as exc:
        print(f"REJECTED (nothing imported): {exc}")
        return 1
    finally:
        log.store.close()
    print(f"Imported {count} Events; they verify and replay through the state tables")
    return 0
