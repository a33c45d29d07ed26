"""``%%mwp_sql``: SQL over a sandbox's log views, right in a cell.

    %%mwp_sql sb -o transitions
    SELECT sequence, from_state, to_state FROM work_item_transitions
    WHERE work_item_id = $item ORDER BY position

The first argument names a variable holding a ``Sandbox``, a log store, or a sandbox directory
path (a string naming a directory that holds ``group.duckdb`` works too). ``$name``
placeholders are bound from the notebook's variables as parameters (never pasted into the SQL
text). ``-o var`` keeps the result (a pyarrow Table) in ``var``. Each call runs on its own
read-only cursor, so it is safe beside a run in threads mode. A mistake (a wrong column, a
missing variable, a statement that writes) is one plain message, as in the SQL console and
``mwp-local sql``, never a traceback through DuckDB.

Queries reach only the sandbox's own files (``store.sql_access``). ``--allow-external-access``
lifts that for a sandbox directory opened for the cell; a running Sandbox keeps the choice it
was created with (``Sandbox(..., sql_external_access=True)``).
"""

from __future__ import annotations

import difflib
import re
import shlex
import sys
from pathlib import Path
from typing import Any

#: A ``$name`` placeholder.
PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")

USAGE = (
    "usage: %%mwp_sql SANDBOX [-o NAME] [--allow-external-access]  "
    "(then the query on the following lines)"
)


class SqlCellError(ValueError):
    """A ``%%mwp_sql`` cell that cannot run: its message says why, plainly."""


#: The option that lets a cell over a sandbox directory read files outside it.
EXTERNAL = "--allow-external-access"


def store_of(target: Any, *, external_access: bool = False) -> Any:
    """The log store behind a Sandbox, a GroupLog, a sandbox directory, or a store
    (``external_access`` only for a directory, which is opened here)."""
    from ..store.duckdb_log import DuckDBLogStore

    if isinstance(target, str | Path):
        path = Path(target) / "group.duckdb"
        if not path.exists():
            raise SqlCellError(f"{str(target)!r} is not a sandbox directory (no {path})")
        return DuckDBLogStore(path, read_only=True, external_access=external_access)
    if external_access:
        raise SqlCellError(
            f"{EXTERNAL} applies to a sandbox directory opened for this cell; a Sandbox or "
            "store already open keeps the choice it was made with "
            "(Sandbox(..., sql_external_access=True))"
        )
    if hasattr(target, "log"):  # a Sandbox
        return target.log.store
    if hasattr(target, "store"):  # a GroupLog
        return target.store
    return target


def _target(name: str, namespace: dict[str, Any]) -> Any:
    """The notebook variable ``name``, or a sandbox directory of that name."""
    if name in namespace:
        return namespace[name]
    if (Path(name) / "group.duckdb").exists():
        return name
    if name.isidentifier():
        close = difflib.get_close_matches(name, [k for k in namespace if not k.startswith("_")])
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SqlCellError(
            f"no notebook variable named {name!r} (and no sandbox directory {name!r}){hint}"
        )
    raise SqlCellError(f"{name!r} is not a sandbox directory (no group.duckdb in it)")


def run_cell(line: str, cell: str, namespace: dict[str, Any]) -> Any:
    """Run one ``%%mwp_sql`` cell; returns the result table (``SqlCellError`` if it cannot)."""
    import duckdb

    from ..protocol.errors import ProtocolError
    from ..store.views import lag_note, sql

    try:
        args = shlex.split(line)
    except ValueError as error:
        raise SqlCellError(f"{error}; {USAGE}") from None
    external = EXTERNAL in args
    if external:
        args.remove(EXTERNAL)
    output = None
    if "-o" in args:
        at = args.index("-o")
        if at + 1 >= len(args):
            raise SqlCellError(f"-o needs a variable name; {USAGE}")
        output = args[at + 1]
        del args[at : at + 2]
    if len(args) != 1:
        raise SqlCellError(USAGE)
    if not cell.strip():
        raise SqlCellError(f"the cell has no query; {USAGE}")
    target = _target(args[0], namespace)
    wanted = PARAMETER.findall(cell)
    missing = [n for n in dict.fromkeys(wanted) if n not in namespace]
    if missing:
        raise SqlCellError(f"no notebook variable for parameter(s): {', '.join(missing)}")
    params = {name: namespace[name] for name in wanted}
    store = store_of(target, external_access=external)
    note = lag_note(store, cell)
    if note:
        print(note, file=sys.stderr)
    try:
        table = sql(store, cell, params or None)
    except (duckdb.Error, ProtocolError, ValueError) as error:
        raise SqlCellError(str(error).strip()) from None
    finally:
        if isinstance(target, str | Path):
            store.close()  # opened for this cell only
    if output:
        namespace[output] = table
    return table


def register(ipython: Any) -> None:
    """Register the cell magic with an IPython shell."""
    from IPython.core.error import UsageError
    from IPython.display import HTML, display

    from ..render.html import table_html

    def mwp_sql(line: str, cell: str) -> None:
        try:
            table = run_cell(line, cell, ipython.user_ns)
        except SqlCellError as error:
            raise UsageError(str(error)) from None
        display(HTML(table_html(table)))  # type: ignore[no-untyped-call]

    mwp_sql.__doc__ = __doc__
    ipython.register_magic_function(mwp_sql, magic_kind="cell", magic_name="mwp_sql")
