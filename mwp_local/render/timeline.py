"""The Timeline and the Scheduler panel: pure renderings, no widgets.

``timeline_svg`` draws each Worker's execution slots over time from the log alone: one bar per
Execution Lease (from its issue to its closure), laid into the Worker's lanes, with marks where
the log shows a checkpoint, a preemption, a block, a failure, an expiry or a revocation.
``scheduler_panel_html`` draws a Worker Scheduler's frozen ``SchedulerSnapshot``: per-Group
queues, quotas, weights and service shares, and the slots.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from html import escape
from typing import Any

from ..protocol.timestamps import format_utc, parse_timestamp
from ..store.views import of_kinds
from .html import STYLE
from .layout import natural_key

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
#: Colour of a lease bar by how it closed.
CLOSURE_COLOURS: Mapping[str, str] = {
    "checkpoint": "#9ecae1",
    "submitted": "#74c476",
    "blocked": "#fcbba1",
    "failed": "#fb6a4a",
    "expired": "#fdae6b",
    "revoked": "#bcbddc",
    "open": "#fdd0a2",
}
#: The mark drawn for an Event kind on a Worker's lane.
MARKS: Mapping[str, tuple[str, str]] = {
    "work.checkpointed": ("#08519c", "checkpoint"),
    "work.blocked": ("#cb181d", "block"),
    "work.failed": ("#67000d", "failure"),
    "ext.mwp-local.sandbox.lease_expired": ("#d94801", "lease expired"),
    "ext.missionweaveprotocol.core.work_execution_lease_revoked": ("#54278f", "lease revoked"),
}

LEASES_SQL = """
SELECT lease_id, holder_agent_id, work_item_id, state, closure_reason, issued_at, closed_at,
       expires_at
FROM leases WHERE lease_type = 'execution' ORDER BY issued_at, lease_id
""".strip()
#: The marks' Events: ``of_kinds`` reads one kind at a time, not every Event's payload.
MARKS_SQL = (
    "SELECT kind, actor_id, work_item_id, occurred_at_ts AS occurred_at, payload "
    f"FROM {of_kinds(*MARKS)} ORDER BY position"
)


def _us(value: datetime | str | None) -> int | None:
    """Microseconds of a view's ``TIMESTAMPTZ`` (a datetime) or of RFC 3339 text."""
    if isinstance(value, datetime):
        return (value - _EPOCH) // timedelta(microseconds=1)
    return parse_timestamp(value).epoch_micros if value else None


def _short(identifier: str | None) -> str:
    return (identifier or "").rsplit(":", 1)[-1]


#: Tick spacings the time axis chooses from (seconds).
_TICKS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200)
_PAGE_TEXT = "var(--jp-content-font-color0, #111)"
_GRID = "var(--jp-border-color2, #ddd)"


def _tick_label(seconds: int) -> str:
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"+{hours}:{minutes:02d}:{secs:02d}" if hours else f"+{minutes}:{secs:02d}"


def timeline_svg(leases: Sequence[Mapping[str, Any]], marks: Sequence[Mapping[str, Any]]) -> str:
    """Workers' slots over time: ``leases`` and ``marks`` are rows of ``LEASES_SQL`` and
    ``MARKS_SQL`` (as dicts). The axis below counts virtual time from the first lease."""
    if not leases:
        return "<div><i>No Execution Lease yet.</i></div>"
    starts = [_us(r["issued_at"]) or 0 for r in leases]
    ends = [_us(r["closed_at"]) or _us(r["expires_at"]) or 0 for r in leases]
    t0, t1 = min(starts), max(max(ends), max(starts) + 1)
    width, left, lane_h = 900, 110, 22
    scale = (width - left - 10) / (t1 - t0)
    lanes: dict[str, list[int]] = {}  # per Worker: the end of each lane's last bar
    placed: list[tuple[str, int, Mapping[str, Any], int, int]] = []
    for row, start, end in zip(leases, starts, ends, strict=True):
        worker = row["holder_agent_id"]
        ends_of = lanes.setdefault(worker, [])
        lane = next((i for i, e in enumerate(ends_of) if e <= start), len(ends_of))
        if lane == len(ends_of):
            ends_of.append(end)
        else:
            ends_of[lane] = end
        placed.append((worker, lane, row, start, end))
    offsets, y = {}, 14
    for worker in sorted(lanes, key=natural_key):
        offsets[worker] = y
        y += lane_h * len(lanes[worker]) + 12
    span_s = (t1 - t0) / 1e6
    step = next((t for t in _TICKS if span_s / t <= 10), _TICKS[-1])
    axis_y = y + 2
    height = axis_y + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" '
        'font-family="sans-serif" font-size="10" class="mwp-timeline">',
        f'<g class="axis"><path d="M{left},{axis_y} L{width - 10},{axis_y}" '
        f'style="stroke:{_PAGE_TEXT}" stroke-width="1"/>',
    ]
    tick = 0
    while tick <= span_s + 1e-9:
        x = left + tick * 1e6 * scale
        parts.append(
            f'<path d="M{x:.1f},6 L{x:.1f},{axis_y + 4}" style="stroke:{_GRID}" '
            f'stroke-width="0.6"/><text class="tick" x="{x:.1f}" y="{axis_y + 15}" '
            f'text-anchor="middle" style="fill:{_PAGE_TEXT}">{_tick_label(tick)}</text>'
        )
        tick += step
    parts.append(
        f'<text x="{left}" y="{axis_y + 27}" style="fill:{_PAGE_TEXT}">virtual time since '
        f"{escape(format_utc(t0))} (h:mm:ss)</text></g>"
    )
    for worker, top in offsets.items():
        parts.append(
            f'<text x="4" y="{top + 14}" style="fill:{_PAGE_TEXT}">{escape(_short(worker))}</text>'
        )
    for worker, lane, row, start, end in placed:
        x = left + (start - t0) * scale
        w = max((end - start) * scale, 2)
        top = offsets[worker] + lane * lane_h
        closure = row["closure_reason"] or ("open" if row["state"] == "active" else row["state"])
        colour = CLOSURE_COLOURS.get(str(closure), "#ddd")
        parts.append(
            f'<g class="lease"><title>{escape(_short(row["work_item_id"]))}: lease '
            f"{escape(str(row['lease_id'])[-12:])} {escape(str(row['state']))} "
            f"({escape(str(closure))}), {escape(str(row['issued_at']))} to "
            f"{escape(str(row['closed_at'] or row['expires_at']))}</title>"
            f'<rect x="{x:.1f}" y="{top}" width="{w:.1f}" height="{lane_h - 4}" '
            f'fill="{colour}" stroke="#555" stroke-width="0.5"/>'
            f'<text x="{x + 2:.1f}" y="{top + 13}" fill="#1a1a1a">'
            f"{escape(_short(row['work_item_id'])[: max(int(w / 6) - 1, 0)])}</text></g>"
        )
    for mark in marks:
        worker = mark["actor_id"] if mark["actor_id"] in offsets else None
        at = _us(mark["occurred_at"])
        if worker is None or at is None:
            continue
        colour, label = MARKS[mark["kind"]]
        if mark["kind"] == "work.checkpointed" and '"preempted":true' in str(mark["payload"]):
            colour, label = "#000000", "preemption"
        x = left + (at - t0) * scale
        top = offsets[worker]
        parts.append(
            f'<g class="mark"><title>{escape(label)}: {escape(_short(mark["work_item_id"]))} '
            f"at {escape(str(mark['occurred_at']))}</title>"
            f'<path d="M{x:.1f},{top - 4} l4,-6 l-8,0 z" fill="{colour}" '
            f'style="stroke:{_PAGE_TEXT}" stroke-width="0.4"/></g>'
        )
    parts.append("</svg>")
    legend = " ".join(
        f'<span style="background:{c};color:#1a1a1a;padding:0 6px">{escape(k)}</span>'
        for k, c in CLOSURE_COLOURS.items()
    )
    note = (
        f"<div><small>lease closed by: {legend}; ▼ marks: checkpoint (blue), preemption "
        "(black), block (red), failure, expiry, revocation</small></div>"
    )
    return f'{STYLE}<div class="mwp">{"".join(parts)}{note}</div>'


def timeline_html(store: Any) -> str:
    """The Timeline of a log store (a DuckDB log)."""
    from ..store.views import sql

    return timeline_svg(sql(store, LEASES_SQL).to_pylist(), sql(store, MARKS_SQL).to_pylist())


def scheduler_panel_html(snapshot: Any, title: str = "") -> str:
    """A Worker Scheduler's ``SchedulerSnapshot``: per-Group queues, quotas and shares."""
    rows = "".join(
        f"<tr><td>{escape(_short(g.group_id))}</td><td>{g.weight:g} ({g.weight_share:.0%})</td>"
        f"<td>{'∞' if g.quota is None else g.quota}</td><td>{len(g.queue)}</td>"
        f"<td>{escape(', '.join(_short(q.work_item_id) for q in g.queue)) or '—'}</td>"
        f"<td>{escape(', '.join(_short(r) for r in g.running)) or '—'}</td>"
        f"<td>{g.served_share:.0%}</td><td>{g.debt_us / 1e6:+.1f} s</td></tr>"
        for g in snapshot.groups
    )
    slots = "".join(
        f"<li><code>{escape(s.slot_id)}</code>: "
        + (
            f"running <b>{escape(_short(s.work_item_id))}</b> (Group {escape(_short(s.group_id))})"
            if s.work_item_id
            else "free"
        )
        + (" <b>(preemption requested)</b>" if s.preemption_requested else "")
        + "</li>"
        for s in snapshot.slots
    )
    taken = format_utc(snapshot.taken_at_us) if snapshot.taken_at_us > 10**12 else ""
    clock = (f"<small>at {escape(taken)}; " if taken else "<small>") + (
        f"fair-share virtual time {snapshot.virtual_time / 1e6:,.1f} s of service per unit "
        "of weight</small>"
    )
    return (
        f'{STYLE}<div class="mwp mwp-scheduler"><b>{escape(title or "Scheduler")}</b> '
        f"{clock}<table><tr><th>Group</th>"
        "<th>weight (share)</th><th>quota</th><th>queued</th><th>queue order</th>"
        "<th>running</th><th>service share</th><th>debt (+) / credit (−)</th></tr>"
        f"{rows}</table><div>slots:</div><ul>{slots or '<li>none reported yet</li>'}</ul></div>"
    )


def find_scheduler(policy: Any) -> Any:
    """The Scheduler inside a Worker's policy (policies may wrap one another), or None."""
    seen = 0
    while policy is not None and seen < 5:
        if hasattr(policy, "scheduler"):
            return policy.scheduler
        policy, seen = getattr(policy, "inner", None), seen + 1
    return None
