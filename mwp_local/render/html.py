"""HTML renderings of sandbox values for notebooks: a step, a rejection, a run summary, a table.

Pure functions returning HTML text (escaped), used by ``_repr_html_`` methods and by widgets.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

#: The renderings' CSS; ``div.mwp`` outranks JupyterLab's own rules for rendered tables.
STYLE = (
    "<style>div.mwp{font-family:sans-serif;font-size:13px}div.mwp table{border-collapse:collapse}"
    "div.mwp td,div.mwp th{border:1px solid #ddd;padding:2px 6px;text-align:left !important;"
    "vertical-align:top}div.mwp .ok{color:#2ca02c;font-weight:bold}"
    "div.mwp .no{color:#d62728;font-weight:bold}div.mwp code{font-size:12px}</style>"
)


#: How a changed row of a before/after diff is marked.
_CHANGED = ' class="changed" style="background:#fff3cd"'


def _kv(rows: dict[str, Any]) -> str:
    cells = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


def step_html(report: Any) -> str:
    """One Sandbox step: who acted and why, the Command, and its Events or its rejection."""
    head = (
        f"<div><b>Step {report.number}</b> at <code>{escape(report.at)}</code>: "
        f"<b>{escape(report.agent)}</b> sends <code>{escape(report.kind)}</code></div>"
        f"<div><i>{escape(report.why)}</i></div>"
    )
    if report.accepted:
        items = "".join(
            f"<li><code>#{escape(str(e.get('sequence', '')))}</code> "
            f"<code>{escape(e['kind'])}</code> <small>{escape(e['eventId'])}</small></li>"
            for e in report.events
        )
        body = f'<div class="ok">ACCEPTED</div><ul>{items}</ul>'
    else:
        body = rejection_html(report.code, report.explanation, report.rule)
    diff = ""
    if report.before or report.after:
        keys = list(dict.fromkeys([*report.before, *report.after]))
        rows = "".join(
            f"<tr{_CHANGED if report.before.get(k) != report.after.get(k) else ''}>"
            f"<th>{escape(k)}</th><td>{escape(str(report.before.get(k)))}</td>"
            f"<td>{escape(str(report.after.get(k)))}</td></tr>"
            for k in keys
        )
        diff = f"<table><tr><th></th><th>before</th><th>after</th></tr>{rows}</table>"
    command = escape(json.dumps(report.command.get("payload", {}), indent=1)[:1500])
    return (
        f'{STYLE}<div class="mwp">{head}{body}{diff}'
        f"<details><summary>Command payload</summary><pre>{command}</pre></details></div>"
    )


def rejection_html(code: str | None, explanation: str | None, rule: str | None) -> str:
    """A refused Command: its section-19 code, the plain explanation, the rule."""
    rule_html = f"<div><small>rule: {escape(rule)}</small></div>" if rule else ""
    return (
        f'<div class="no">REJECTED {escape(code or "")}</div>'
        f"<div>{escape(explanation or '')}</div>{rule_html}"
    )


def summary_html(summary: Any) -> str:
    """A run summary."""
    missions = {m.rsplit(":", 1)[-1]: s for m, s in sorted(summary.missions.items())}
    return (
        f'{STYLE}<div class="mwp"><b>{"Finished" if summary.finished else "Stopped"}</b> '
        f"after {summary.steps} steps ({summary.simulated_seconds:.0f} s simulated)"
        f"{_kv(missions)}{_kv({'WorkItems': summary.work_items, 'Events': summary.events})}"
        f"{_kv({'rejections': summary.rejections or 'none'})}</div>"
    )


def table_html(table: Any, max_rows: int = 200) -> str:
    """A pyarrow Table as an HTML table (at most ``max_rows`` rows)."""
    names = list(table.column_names)
    rows = table.slice(0, max_rows).to_pylist()
    head = "".join(f"<th>{escape(n)}</th>" for n in names)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(str(r[n]))[:300]}</td>" for n in names) + "</tr>"
        for r in rows
    )
    more = table.num_rows - len(rows)
    tail = f"<div><small>{table.num_rows} rows" + (f", {more} not shown" if more > 0 else "")
    return f'{STYLE}<div class="mwp"><table><tr>{head}</tr>{body}</table>{tail}</small></div></div>'
