"""``mwp-local import DIR FILE.jsonl``: ingest signed Events, as strictly as the live Authority.

Every Event gets the checks the live Group Authority applies to an Event it appends (its
signature, the Signed Documents it embeds, its kind, its sequence, the state tables, the schemas
of what it embeds; ``store.log_import``) before anything is written; one bad line refuses the
whole file, named by its line, Event ID and kind, and leaves the log and projections untouched.
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
    lines = args.file.read_bytes().splitlines()  # blank lines too: refusals name file lines
    log = open_directory(args.dir, snapshot=False)  # the plain replay judges the log itself
    try:
        admitted = log.import_events(lines)
    except ProtocolError as exc:
        print(f"REJECTED (nothing imported) {exc.code.value}: {exc.explanation}")
        return 1
    except Exception as exc:
        print(f"REJECTED (nothing imported): {exc}")
        return 1
    finally:
        log.store.close()
    held = admitted.already_held
    skipped = (
        f" (the file's first {held} lines are this log's own Events, already held, and were "
        "skipped)"
        if held
        else ""
    )
    print(
        f"Imported {len(admitted.records)} Events{skipped}; they verify and replay through the "
        "state tables as the live Authority's would"
    )
    return 0
