"""``mwp-local verify-log DIR``: re-verify signatures, chain, sequences, tables, projections and
every Artifact blob."""

from __future__ import annotations

import argparse

from mwp_local.store.base import LogStoreError
from mwp_local.store.duckdb_log import DuckDBLogStore

from ..store.blobs import BlobStore
from ..store.sandbox_dir import LOG_FILE, load_organization
from ..store.verify import verify_log
from ._common import directory


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of this subcommand."""
    directory(parser)


def run(args: argparse.Namespace) -> int:
    """Print the report; exit 1 on any problem."""
    org = load_organization(args.dir)
    try:
        store = DuckDBLogStore(args.dir / LOG_FILE, read_only=True)
    except LogStoreError as exc:
        print(f"FAILED: the log cannot be opened: {exc}")
        return 1
    try:
        report = verify_log(org, store, blobs=BlobStore(args.dir / "blobs"))
    finally:
        store.close()
    print(
        f"{report.events} Events in {report.groups} Group(s), {report.receipts} receipts, "
        f"{report.projections_compared} projection rows compared, {report.blobs} Artifact blobs "
        "re-hashed"
    )
    if report.projections_behind:
        print(
            "projections not compared: a writer crashed with projection rows unwritten, so the "
            "tables lag the log; opening the directory for writing re-renders them"
        )
    if report.ok:
        print(
            "OK: signatures, hash chain, sequences, state tables, projections and Artifact blobs "
            "all verify"
        )
        return 0
    print(f"FAILED: {len(report.problems)} problem(s)")
    for problem in report.problems:
        print(f"  - {problem}")
    return 1
