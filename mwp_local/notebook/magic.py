"""``%%mwp_sql``: SQL over a sandbox's log views, right in a cell.

    %%mwp_sql sb -o transitions
    SELECT sequence, from_state, to_state FROM work_item_transitions
    WHERE work_item_id = $item ORDER BY position

The first argument names a variable holding a ``Sandbox``, a log store, or a sandbox directory
path. ``$name`` placeholders are bound from the notebook's variables as parameters (never pasted
into the SQL text). ``-o var`` keeps the result (a pyarrow Table) in ``var``. Each call runs on
its own read-only cursor, so it is safe beside a run in threads mode.

Queries reach only the sandbox's own files (``store.sql_access``). ``--allow-external-access``
lifts that for a sandbox directory opened for the cell; a running Sandbox keeps the choice it
was created with (``Sandbox(..., sql_external_access=True)``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

#: A ``$name`` placeholder.
PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


#: The option that lets a cell over a sandbox directory read files outside it.
EXTERNAL = "--allow-external-access"


def store_of(target: Any, *, external_access: bool = False) -> Any:
    """The log store behind a Sandbox, a GroupLog, a sandbox directory, or a store
    (``external_access`` only for a directory, which is opened here)."""
    from ..store.duckdb_log import DuckDBLogStore

    if isinstance(target, str | Path):
        return DuckDBLogStore(
            Path(target) / "group.duckdb", read_only=True, external_access=external_access
        )
    if external_access:
        raise ValueError(
            f"{EXTERNAL} applies to a sandbox directory opened for this cell; a Sandbox or "
            "store already open keeps the choice it was made with "
            "(Sandbox(..., sql_external_access=True))"
        )
    if hasattr(target, "log"):  # a Sandbox
        return target.log.store
    if hasattr(target, "store"):  # a GroupLog
        return target.store
    return target


def run_cell(line: str, cell: str, namespace: dict[str, Any]) -> Any:
    """Run one ``%%mwp_sql`` cell; returns the result table."""
    from ..store.views import sql

    args = shlex.split(line)
    if not args:
        raise ValueError("usage: %%mwp_sql SANDBOX_VARIABLE [-o NAME]")
    external = EXTERNAL in args
    if external:
        args.remove(EXTERNAL)
    output = None
    if "-o" in args:
        at = args.index("-o")
        output = args[at + 1]
        del args[at : at + 2]
    target = namespace[args[0]] if args[0] in namespace else args[0]
    params = {name: namespace[name] for name in PARAMETER.findall(cell) if name in namespace}
    missing = [n for n in PARAMETER.findall(cell) if n not in namespace]
    if missing:
        raise NameError(f"no notebook variable for parameter(s): {', '.join(missing)}")
    store = store_of(target, external_access=external)
    try:
        table = sql(store, cell, params or None)
    finally:
        if isinstance(target, str | Path):
            store.close()  # opened for this cell only
    if output:
        namespace[output] = table
    return table


def register(ipython: Any) -> None:
    """Register the cell magic with an IPython shell."""
    from IPython.display import HTML, display

    from ..render.html import table_html

    def mwp_sql(line: str, cell: str) -> None:
        table = run_cell(line, cell, ipython.user_ns)
        display(HTML(table_html(table)))  # type: ignore[no-untyped-call]

    ipython.register_magic_function(mwp_sql, magic_kind="cell", magic_name="mwp_sql")
