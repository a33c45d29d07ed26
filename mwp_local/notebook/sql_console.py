"""A SQL console widget over a sandbox's log views (ipywidgets, imported here and only here).

A text area for the query, a parameters box (``name=value`` per line, bound as ``$name``
parameters, never pasted into the SQL), a "run" button and an HTML table. Each run uses its own
read-only cursor (``store.views.sql``), so it is safe beside a run in threads mode. An error is
shown in the console as one plain message, not raised into the callback. The console leaves a
static copy of its query and result in the output (``static.StaticCopy``).
"""

from __future__ import annotations

from html import escape
from typing import Any

import duckdb
import ipywidgets as w

from ..protocol.errors import ProtocolError
from ..render.html import STYLE, error_html, table_html
from .magic import PARAMETER, store_of
from .static import StaticCopy

DEFAULT_QUERY = "SELECT kind, count(*) AS n FROM events GROUP BY kind ORDER BY n DESC, kind"


def parse_params(text: str) -> dict[str, str]:
    """``name=value`` lines as a parameter dict (blank lines ignored)."""
    params: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            name, sep, value = line.partition("=")
            if not sep:
                raise ValueError(f"a parameter line is name=value, not {line!r}")
            params[name.strip()] = value.strip()
    return params


class SqlConsole:
    """Type a query, press "run", read the table; ``result`` keeps the last pyarrow Table. The
    query it is made with runs at once (``run=False``: wait for the button)."""

    def __init__(
        self, target: Any, query: str = DEFAULT_QUERY, params: str = "", *, run: bool = True
    ) -> None:
        self.store = store_of(target)
        self.query = w.Textarea(value=query, layout=w.Layout(width="100%", height="6em"))
        self.query.add_class("mwp-sql-query")
        self.params = w.Textarea(
            value=params, placeholder="name=value per line", layout=w.Layout(width="40%")
        )
        self.run_button = w.Button(description="run", button_style="primary")
        self.output = w.HTML(
            f'{STYLE}<div class="mwp"><i>Press <b>run</b> to query the log.</i></div>'
        )
        self.output.add_class("mwp-sql-result")
        self.run_button.on_click(lambda _b: self.run())
        self.result: Any = None
        self.widget = w.VBox([self.query, w.HBox([self.params, self.run_button]), self.output])
        self.widget.add_class("mwp-sql-console")
        self.static = StaticCopy("sql-console", self.static_html)
        if run and query.strip():
            self.run()  # the first query's answer is there at once (and in the static copy)

    def run(self) -> Any:
        """Run the query with its parameters and show the table (or the error)."""
        from ..store.views import sql

        try:
            given = parse_params(self.params.value)
            wanted = PARAMETER.findall(self.query.value)
            missing = sorted(set(wanted) - set(given))
            if missing:
                raise ValueError(f"no value for parameter(s): {', '.join(missing)}")
            params = {name: given[name] for name in wanted}  # only those the query names
            self.result = sql(self.store, self.query.value, params or None)
        except (ValueError, PermissionError, ProtocolError, duckdb.Error) as error:
            self.output.value = error_html(str(error).strip())
            self.result = None
            self.static.update()
            return None
        self.output.value = table_html(self.result)
        self.static.update()
        return self.result

    def static_html(self) -> str:
        """The query, its parameters and what it returned, as HTML (the static copy)."""
        params = (
            f"<div><small>parameters: {escape(self.params.value)}</small></div>"
            if (self.params.value.strip())
            else ""
        )
        return (
            f'{STYLE}<div class="mwp"><pre class="mwp-sql-text">{escape(self.query.value)}</pre>'
            f"{params}</div>{self.output.value}"
        )

    def _ipython_display_(self) -> None:
        self.static.display(self.widget)
