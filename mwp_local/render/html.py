"""HTML renderings of sandbox values for notebooks: a step, a step history, a rejection, a run
summary, a query result, and the static copy a widget leaves in the output.

Pure functions returning HTML text (escaped), used by ``_repr_html_`` methods and by widgets.
Colours follow JupyterLab's theme variables (``--jp-*``, with light fallbacks where they are not
defined, as in a plain HTML page): text and table backgrounds come from the theme, highlights
are translucent (so they darken on a dark theme and lighten on a light one), and the few solid
badges carry their own text colour.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

#: The renderings' CSS; ``div.mwp`` outranks JupyterLab's own rules for rendered tables.
STYLE = (
    "<style>"
    "div.mwp{font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;"
    "color:var(--jp-content-font-color0,#111)}"
    "div.mwp table{border-collapse:collapse;margin:4px 0}"
    "div.mwp td,div.mwp th{border:1px solid var(--jp-border-color1,#bbb);padding:3px 8px;"
    "text-align:left !important;vertical-align:top;color:var(--jp-content-font-color0,#111)}"
    "div.mwp th{background:var(--jp-layout-color2,#eee);font-weight:600}"
    "div.mwp tr.changed>td,div.mwp tr.changed>th{background:rgba(255,152,0,.3)}"
    "div.mwp tr.selected>td{background:rgba(33,150,243,.25)}"
    "div.mwp tr[data-id]{cursor:pointer}"
    "div.mwp .ok,div.mwp .no{display:inline-block;padding:1px 6px;border-radius:4px;"
    "color:#fff;font-weight:bold}"
    "div.mwp .ok{background:#1b5e20}div.mwp .no{background:#b71c1c}"
    "div.mwp code{font-size:12px;color:inherit;background:var(--jp-layout-color2,#eee);"
    "padding:0 2px}"
    "div.mwp small,div.mwp .muted{color:var(--jp-content-font-color1,#333)}"
    "div.mwp .null{font-style:italic;color:var(--jp-content-font-color1,#333)}"
    "div.mwp pre{white-space:pre-wrap;word-break:break-all;margin:2px 0;"
    "color:var(--jp-content-font-color0,#111)}"
    "div.mwp .why{margin:2px 0 6px}div.mwp.mwp-error{white-space:pre-wrap}"
    "div.mwp .mwp-history{max-height:260px;overflow:auto}"
    "div.mwp .mwp-history table{width:100%}div.mwp .mwp-history td{overflow-wrap:break-word}"
    ".jp-OutputArea-child:has(.mwp-live)+.jp-OutputArea-child .mwp-static{display:none}"
    "</style>"
)

#: How a changed row of a before/after diff is marked.
_CHANGED = ' class="changed"'
#: Readable names of the fields a step's before/after shows.
_FIELDS: Mapping[str, str] = {
    "workItem": "WorkItem",
    "mission": "Mission",
    "ownershipEpoch": "Ownership Epoch",
    "executionLease": "Execution Lease",
}
#: A cell longer than this folds into a ``<details>`` (never cut).
LONG_CELL = 300


def _short(value: Any) -> str:
    """An identifier as a person reads it: a URN's last part."""
    text = str(value)
    return text.rsplit(":", 1)[-1] if text.startswith("urn:") else text


def _value(value: Any) -> str:
    if value is None:
        return '<span class="null">none</span>'
    text = str(value)
    if text.startswith("urn:"):
        return f'<span title="{escape(text)}">{escape(_short(text))}</span>'
    return escape(text)


def diff_html(rows: Sequence[tuple[str, Any, Any, bool]], *, new: bool = False) -> str:
    """A before/after table of one WorkItem or Mission: ``(field, before, after, changed)``
    rows; ``new``: the entity did not exist before the step."""
    if not rows:
        return ""
    body = "".join(
        f"<tr{_CHANGED if changed else ''}><th>{escape(_FIELDS.get(k, k))}</th>"
        f"<td>{'<i>did not exist</i>' if new and i == 0 else ('' if new else _value(b))}</td>"
        f"<td>{_value(a)}</td></tr>"
        for i, (k, b, a, changed) in enumerate(rows)
    )
    return f'<table class="mwp-diff"><tr><th></th><th>before</th><th>after</th></tr>{body}</table>'


def step_html(report: Any) -> str:
    """One Sandbox step: who acted and why, the Command, its Events or its rejection, and how
    the one WorkItem or Mission it names changed (before/after)."""
    head = (
        f'<div class="mwp-step-head"><b>Step {report.number}</b> at '
        f"<code>{escape(report.at)}</code>: <b>{escape(report.agent)}</b> sends "
        f"<code>{escape(report.kind)}</code></div>"
        f'<div class="why"><b>Why:</b> {escape(report.why or "(no reason given)")}</div>'
    )
    if report.accepted:
        items = "".join(
            f"<li><details><summary><code>#{escape(str(e.get('sequence', '')))}</code> "
            f"<code>{escape(e['kind'])}</code> <small>{escape(e['eventId'])}</small></summary>"
            f"<pre>{escape(json.dumps(e.get('payload', {}), indent=1))}</pre></details></li>"
            for e in report.events
        )
        body = (
            f'<div><span class="ok">ACCEPTED</span> the Group Authority appended '
            f"{len(report.events)} Event(s) (click one for its payload):</div><ul>{items}</ul>"
        )
    else:
        body = rejection_html(report.code, report.explanation, report.rule)
    changes = report.changes() if hasattr(report, "changes") else []
    new = bool(changes) and not report.before
    diff = diff_html(changes, new=new)
    command = escape(json.dumps(report.command.get("payload", {}), indent=1))
    return (
        f'{STYLE}<div class="mwp">{head}{body}{diff}'
        f"<details><summary>Command payload</summary><pre>{command}</pre></details></div>"
    )


def rejection_html(code: str | None, explanation: str | None, rule: str | None) -> str:
    """A refused Command: its section-19 code, the plain explanation, the rule."""
    rule_html = f"<div><small>rule: {escape(rule)}</small></div>" if rule else ""
    return (
        f'<div><span class="no">REJECTED {escape(code or "")}</span></div>'
        f"<div>{escape(explanation or '')}</div>{rule_html}"
    )


def outcome_text(report: Any) -> str:
    """A step's outcome in a few words: its Event kinds, or its rejection code."""
    if report.accepted:
        return ", ".join(e["kind"] for e in report.events) or "idempotent retry"
    return f"refused: {report.code}"


def history_html(reports: Sequence[Any], selected: int | None = None, window: int = 300) -> str:
    """Every step so far, one row each (number, virtual time, agent, Command, outcome, why), the
    ``selected`` step marked; rows carry ``data-id`` (the step number) for a click handler.
    More than ``window`` steps show the ``window`` around the selection."""
    if not reports:
        return '<div class="mwp-history"><i>No step yet.</i></div>'
    at = next((i for i, r in enumerate(reports) if r.number == selected), len(reports) - 1)
    start = max(0, min(at - window // 2, len(reports) - window))
    shown = reports[start : start + window]
    mark = ' class="selected"'
    refused = '<span class="no">✘</span> '
    rows = "".join(
        f'<tr data-id="{r.number}"{mark if r.number == selected else ""}>'
        f"<td>{r.number}</td><td><code>{escape(r.at[11:19])}</code></td>"
        f"<td>{escape(r.agent)}</td><td><code>{escape(r.kind)}</code></td>"
        f"<td>{'' if r.accepted else refused}{escape(outcome_text(r))}</td>"
        f"<td>{escape(r.why)}</td></tr>"
        for r in shown
    )
    hidden = len(reports) - len(shown)
    more = f"<div><small>{hidden} other steps not listed</small></div>" if hidden else ""
    return (
        '<div class="mwp-history"><table><tr><th>#</th><th>time</th><th>agent</th>'
        f"<th>Command</th><th>outcome</th><th>why</th></tr>{rows}</table></div>{more}"
    )


def summary_html(summary: Any) -> str:
    """A run summary."""
    missions = {m.rsplit(":", 1)[-1]: s for m, s in sorted(summary.missions.items())}
    delivery = (
        _kv({"delivery": ", ".join(f"{k} {v}" for k, v in summary.delivery.items())})
        if getattr(summary, "delivery", None)
        else ""
    )
    return (
        f'{STYLE}<div class="mwp mwp-summary"><b>{"Finished" if summary.finished else "Stopped"}'
        f"</b> after {summary.steps} steps ({summary.simulated_seconds:.0f} s simulated, "
        f"{summary.wall_seconds:.2f} s wall)"
        f"{_kv({'Mission ' + k: v for k, v in missions.items()})}"
        f"{_kv({'WorkItems': _counts(summary.work_items), 'Events': summary.events})}"
        f"{_kv({'rejections': _counts(summary.rejections) or 'none'})}{delivery}"
        f"{_failed_html(getattr(summary, 'failed_attempts', ()))}"
        f"{_stall_html(getattr(summary, 'stall', None))}</div>"
    )


def _failed_html(failed: Any) -> str:
    """Each failed attempt of a run summary, with its reason (an exception is named there)."""
    return "".join(
        _kv({f"failed {w.rsplit(':', 1)[-1]} attempt {attempt}": reason})
        for w, attempt, reason in failed
    )


def _stall_html(stall: Any) -> str:
    """Why a run stopped early and what each unfinished WorkItem waits for (a ``Stall``)."""
    if stall is None:
        return ""
    rows = "".join(
        f"<tr><td>{escape(w.mission)}</td><td>{escape(w.work_item or '(the Mission)')}</td>"
        f"<td>{escape(w.state)}</td><td>{escape(w.waits_for)}</td></tr>"
        for w in stall.waits
    )
    table = (
        "<table><tr><th>Mission</th><th>WorkItem</th><th>state</th><th>waits for</th></tr>"
        f"{rows}</table>"
        if rows
        else ""
    )
    return (
        f'<div class="bad"><b>Stopped at {escape(stall.at)}</b>: {escape(stall.reason)}.</div>'
        f"{table}"
    )


def restart_html(report: Any) -> str:
    """What restarting a Worker did (a ``RestartReport``)."""
    queues = {
        "queues before": sum(len(q) for q in report.queues_before.values()),
        "queues rebuilt": sum(len(q) for q in report.queues_rebuilt.values()),
    }
    return (
        f'{STYLE}<div class="mwp"><b>Worker {escape(report.agent)} restarted</b>'
        + _kv(
            {
                "local file": "deleted first" if report.deleted_local_file else "kept",
                "Events restored from the file": report.restored_events,
                "Events re-delivered from the log": report.redelivered_events,
                "stored queues matched their Events": report.stored_queues_matched,
                **{k: f"{v} WorkItems" for k, v in queues.items()},
                "new Session Epoch": report.session_epoch,
                "Execution Leases revoked": len(report.revoked_leases),
            }
        )
        + "</div>"
    )


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _kv(rows: Mapping[str, Any]) -> str:
    cells = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(str(v))}</td></tr>" for k, v in rows.items()
    )
    return f"<table>{cells}</table>"


def duration_text(months: int = 0, days: int = 0, nanoseconds: int = 0) -> str:
    """A duration as a person reads it: ``21 min 20 s``, ``1 day 2 h``, ``0.25 s``."""
    sign = "−" if months < 0 or days < 0 or nanoseconds < 0 else ""
    months, days, nanoseconds = abs(months), abs(days), abs(nanoseconds)
    seconds, rest = divmod(nanoseconds, 1_000_000_000)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    parts = []
    if months:
        parts.append(f"{months} month{'s' if months != 1 else ''}")
    if days:
        parts.append(f"{days} day{'s' if days != 1 else ''}")
    if hours:
        parts.append(f"{hours} h")
    if minutes:
        parts.append(f"{minutes} min")
    if seconds or rest or not parts:
        fraction = f"{rest / 1e9:.3f}".lstrip("0").rstrip("0").rstrip(".") if rest else ""
        parts.append(f"{seconds}{fraction} s")
    return sign + " ".join(parts)


def cell_html(value: Any) -> str:
    """One value of a query result: NULL shown as NULL, durations as durations, timestamps in
    ISO 8601, nested values as JSON, long text folded (never cut)."""
    if value is None:
        return '<span class="null">NULL</span>'
    if all(hasattr(value, a) for a in ("months", "days", "nanoseconds")):
        return escape(duration_text(value.months, value.days, value.nanoseconds))
    if isinstance(value, _dt.timedelta):  # whole days read as days, as an INTERVAL does
        sign = "−" if value < _dt.timedelta(0) else ""
        value = abs(value)
        rest = (value.seconds * 1_000_000 + value.microseconds) * 1000
        return escape(sign + duration_text(days=value.days, nanoseconds=rest))
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        text = value.isoformat()
    elif isinstance(value, dict | list):
        text = json.dumps(value, default=str, ensure_ascii=False)
    elif isinstance(value, bytes):
        text = value.hex()
    else:
        text = str(value)
    if len(text) <= LONG_CELL:
        return escape(text)
    return (
        f"<details><summary>{escape(text[:120])}… <small>({len(text)} characters)</small>"
        f"</summary><pre>{escape(text)}</pre></details>"
    )


def table_html(table: Any, max_rows: int = 200) -> str:
    """A query result (a pyarrow Table) as an HTML table of at most ``max_rows`` rows: column
    types on hover, NULL shown, durations as durations, long values folded."""
    names = list(table.column_names)
    types = [str(t) for t in table.schema.types]
    rows = table.slice(0, max_rows).to_pylist()
    head = "".join(
        f'<th title="{escape(t)}">{escape(n)}</th>' for n, t in zip(names, types, strict=True)
    )
    body = "".join(
        "<tr>" + "".join(f"<td>{cell_html(r[n])}</td>" for n in names) + "</tr>" for r in rows
    )
    more = table.num_rows - len(rows)
    count = f"{table.num_rows} row{'s' if table.num_rows != 1 else ''}"
    tail = f"<div><small>{count}" + (f", {more} not shown" if more > 0 else "") + "</small></div>"
    return f'{STYLE}<div class="mwp mwp-result"><table><tr>{head}</tr>{body}</table>{tail}</div>'


def error_html(message: str) -> str:
    """An error a person caused (a wrong column, a missing parameter): the message, no
    traceback."""
    return (
        f'{STYLE}<div class="mwp mwp-error"><span class="no">error</span> {escape(message)}</div>'
    )


def static_html(inner: str, view: str) -> str:
    """The static copy of a widget's current state that sits in the output right after it.

    A saved notebook, a static viewer or ``nbconvert --to html`` has no widget models, so this
    copy is what they show; while the live widget is drawn just above it (JupyterLab marks it
    ``mwp-live``), CSS hides the copy. ``view`` names the widget (``data-view``)."""
    return (
        f'{STYLE}<div class="mwp mwp-static" data-view="{escape(view)}">{inner}'
        '<div class="mwp-static-note"><small>Saved view: the state when the notebook last '
        "ran or was clicked. Run the cell for the live widget.</small></div></div>"
    )
