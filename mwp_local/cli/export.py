"""``mwp-local export DIR --parquet OUT`` (Hive-partitioned by Group) or ``--jsonl FILE``
(the signed Events, one per line, in log order: the input of ``mwp-local import``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.parquet import export_parquet

from ..store.sandbox_dir import LOG_FILE
from ._common import directory, fail


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--parquet", type=Path, metavar="OUT", help="a directory to write")
    target.add_argument("--jsonl", type=Path, metavar="FILE", help="a JSON-lines file to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier export")


def run(args: argparse.Namespace) -> int:
    """Write the export and say what was written."""
    store = DuckDBLogStore(args.dir / LOG_FILE, read_only=True)
    try:
        if args.jsonl is not None:
            count = 0
            with args.jsonl.open("w", encoding="utf-8") as out:
                for record in store.events():
                    out.write(record.document + "\n")
                    count += 1
            print(f"Wrote {count} signed Events to {args.jsonl}")
            return 0
        try:
            summary = export_parquet(store, args.parquet, overwrite=args.overwrite)
        except FileExistsError as exc:
            return fail(f"{exc} (use --overwrite)")
        print(
            f"Wrote {summary.events.rows} Events, {summary.receipts.rows} receipts and "
            f"{summary.rejections.rows} rejections to {summary.out_dir} (Hive-partitioned by Group)"
        )
        return 0
    finally:
        store.close()
