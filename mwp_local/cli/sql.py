"""``mwp-local sql DIR "QUERY"``: query the log's documented views (read-only)."""

from __future__ import annotations

import argparse
import json

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.views import sql

from ._common import directory, fail, format_table, name_value


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)
    parser.add_argument("query", help="SQL over the views events, work_items, leases, …")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        type=name_value,
        metavar="NAME=VALUE",
        help="bind $NAME safely (repeatable)",
    )
    parser.add_argument("--json", action="store_true", help="JSON lines instead of a table")


def run(args: argparse.Namespace) -> int:
    """Run the query and print the result."""
    params = dict(args.param) or None
    store = DuckDBLogStore(args.dir / "group.duckdb", read_only=True)
    try:
        table = sql(store, args.query, params)
    except Exception as exc:  # a learner's SQL error: show it plainly
        return fail(str(exc), 1)
    finally:
        store.close()
    if args.json:
        for row in table.to_pylist():
            print(json.dumps(row, default=str))
    else:
        print(format_table(table))
    return 0
