"""DuckDB's errors in the store's terms, for the person who has to act on them.

DuckDB lets one process at a time use a database file that is open for writing: a second
process, even a read-only one, gets ``IOException: Could not set lock on file ...``. That is the
usual way to meet it here: a notebook's Sandbox holds its directory's log open while someone
runs ``mwp-local sql DIR`` (or opens the same directory) elsewhere.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path

import duckdb

from .base import StoreLockedError

_LOCK = re.compile(r"Could not set lock on file")
_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def locked_error(path: Path, exc: duckdb.Error) -> StoreLockedError | None:
    """``StoreLockedError`` when ``exc`` says another process holds ``path``, else None."""
    text = str(exc)
    if not _LOCK.search(text):
        return None
    holder = _HOLDER.search(text)
    who = (
        f"process {holder['pid']} ({holder['program']})"
        if holder is not None
        else "another process"
    )
    return StoreLockedError(
        errno.EBUSY,
        f"the log is open for writing in {who}; DuckDB lets one process at a time use a log "
        "file that is being written. Close the Sandbox there (sandbox.close()), or query it "
        "from that process (sandbox.sql(...))",
        str(path),
    )


__all__ = ["locked_error"]
