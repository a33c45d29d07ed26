"""``%%mwp_sql``: SQL over a sandbox's log views, right in a cell.

    %%mwp_sql sb -o transitions
    SELECT sequence, from_state, to_state FROM work_item_transitions
    WHERE work_item_id = $item ORDER BY position

The first argument names a variable holding a ``Sandbox``, a log store, or a sandbox directory
path. ``$name`` placeholders are bound from the notebook's variables as parameters (never pasted
into the SQL text). ``-o var`` keeps the result (a pyarrow Table) in ``var``. Each call runs on
its own read-only cursor, so it is safe beside a run in threads mode.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

#: A ``$name`` placeholder.
PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def store_of(target: Any) -> Any:
    """The log store behind a Sandbox, a GroupLog, a sandbox directory, or a store."""
    from ..store.duckdb_log import DuckDBLogStore

    if hasattr(target, "log"):  # a Sandbox
        return target.log.store
    if hasattr(target, "store"):  # a GroupLog
        return target.store
    if isinstance(target, str | Path):
        return DuckDBLogStore(Path(target) / "group.duckdb", read_only=True)
    return target


def run_cell(line: str, cell: str, namespace: dict[str, Any]) -> Any:
    """Run one ``%%mwp_sql`` cell; returns the result table."""
    from ..store.views import sql

    args = shlex.split(line)
    if not args:
        raise ValueError("usage: %%mwp_sql SANDBOX_VARIABLE [-o NAME]")
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
    table = sql(store_of(target), cell, params or None)
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
