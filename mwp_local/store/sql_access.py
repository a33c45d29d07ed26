"""What a query over a sandbox's log may read: the sandbox's own files, unless opted out.

Queries are read-only (``views.sql``), but DuckDB's table functions read any file the process
can (``read_csv('/etc/passwd')``, ``glob('/home/*')``). ``contain`` turns DuckDB's external
access off for the log's database, with the sandbox directory (the log file's directory) as the
one allowed directory, and locks the configuration so that no statement can turn it back on.
The store applies it to every connection it opens unless asked not to
(``DuckDBLogStore(..., external_access=True)``); the command line, the notebook magic and the
SQL console rely on it, and say so in ``describe_refusal``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import duckdb

__all__ = ["OPT_OUT", "contain", "describe_refusal"]

#: How a person opts out, in words for error messages.
OPT_OUT = (
    "`mwp-local sql ... --allow-external-access`, `Sandbox(..., sql_external_access=True)` or "
    "`%%mwp_sql DIR --allow-external-access`"
)


def contain(con: duckdb.DuckDBPyConnection, directory: Path) -> None:
    """Let ``con``'s database read and write files only under ``directory``, for good."""
    allowed = str(directory.resolve()).rstrip("/") + "/"
    con.execute("SET allowed_directories = $dirs", {"dirs": [allowed]})
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET lock_configuration = true")


def describe_refusal(error: duckdb.PermissionException) -> str:
    """A refused file access, in words: what happened and how to opt out."""
    detail = str(error).split("\n", 1)[0].removeprefix("Permission Error: ")
    return (
        f"{detail}. Queries over a sandbox read only the sandbox's own files; to read other "
        f"files on purpose, opt out with {OPT_OUT}"
    )
