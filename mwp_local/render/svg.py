"""SVG drawings computed in Python: the state machines drawn from their tables (the WorkItem
machine of §10.2, the Mission lifecycle of §7.1, a Worker's Capacity Slot lifecycle), and a
Mission's WorkItem DAG coloured by state. Pure functions returning SVG text, so they render
everywhere (JupyterLab, saved notebooks, static exports) and can be golden-tested. Every edge is
a row of the table the Authority (or, for the slot, the Worker) decides with: change a row and
the drawing follows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from html import escape
from typing import Any

from ..agents.worker.lifecycle import SLOT_TABLE, SlotState
from ..protocol.tables import (
    MISSION_TABLE,
    WORK_ITEM_TABLE,
    MissionState,
    TransitionTable,
    WorkItemState,
)

#: Fill colour of each WorkItem state.
STATE_COLOURS: Mapping[str, str] = {
    "none": "#eeeeee",
    "open_work_proposal": "#f5f5dc",
    "open": "#dbe9f6",
    "offered": "#c6dbef",
    "queued": "#fdd0a2",
    "active": "#fdae6b",
    "blocked": "#fcbba1",
    "submitted": "#c7e9c0",
    "verified": "#74c476",
    "failed": "#fb6a4a",
    "cancelled": "#bdbdbd",
}
#: Fill colour of each Mission state.
MISSION_STATE_COLOURS: Mapping[str, str] = {
    "none": "#eeeeee",
    "active": "#fdae6b",
    "awaiting_approval": "#c7e9c0",
    "approved": "#74c476",
    "failed": "#fb6a4a",
    "cancelled": "#bdbdbd",
}

#: Where each state of the WorkItem machine is drawn (column, row): the happy path runs left to
#: right, detours below.
_POSITIONS: Mapping[StrEnum, tuple[int, int]] = {
    WorkItemState.NONE: (0, 0),
    WorkItemState.OPEN_WORK_PROPOSAL: (0, 1),
    WorkItemState.OPEN: (1, 0),
    WorkItemState.OFFERED: (2, 0),
    WorkItemState.QUEUED: (3, 0),
    WorkItemState.ACTIVE: (4, 0),
    WorkItemState.SUBMITTED: (5, 0),
    WorkItemState.VERIFIED: (6, 0),
    WorkItemState.BLOCKED: (4, 1),
    WorkItemState.FAILED: (2, 2),
    WorkItemState.CANCELLED: (5, 2),
}
#: Where each Mission state is drawn: creation, work and approval left to right, the two
#: other terminal states below.
_MISSION_POSITIONS: Mapping[StrEnum, tuple[int, int]] = {
    MissionState.NONE: (0, 0),
    MissionState.ACTIVE: (1, 0),
    MissionState.AWAITING_APPROVAL: (2, 0),
    MissionState.APPROVED: (3, 0),
    MissionState.FAILED: (1, 1),
    MissionState.CANCELLED: (2, 1),
}
#: Fill colour of each Capacity Slot state.
SLOT_STATE_COLOURS: Mapping[str, str] = {
    "none": "#eeeeee",
    "running": "#fdae6b",
    "awaiting_external": "#fdd0a2",
    "producing": "#c6dbef",
    "publishing": "#c7e9c0",
    "failing": "#fcbba1",
    "checkpointed": "#dbe9f6",
    "blocked": "#fcbba1",
    "submitted": "#74c476",
    "failed": "#fb6a4a",
    "lost": "#bdbdbd",
}
#: Where each Capacity Slot state is drawn: the attempt left to right, its releases below.
_SLOT_POSITIONS: Mapping[StrEnum, tuple[int, int]] = {
    SlotState.NONE: (0, 0),
    SlotState.RUNNING: (1, 0),
    SlotState.AWAITING_EXTERNAL: (2, 0),
    SlotState.PRODUCING: (3, 0),
    SlotState.PUBLISHING: (4, 0),
    SlotState.SUBMITTED: (5, 0),
    SlotState.CHECKPOINTED: (0, 1),
    SlotState.LOST: (1, 2),
    SlotState.BLOCKED: (2, 2),
    SlotState.FAILING: (3, 1),
    SlotState.FAILED: (4, 2),
}
_W, _H, _DX, _DY = 118, 34, 150, 90


def _svg_open(width: float, height: float) -> str:
    """An ``<svg>`` that keeps its size but shrinks to fit a narrow output area."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" style="max-width:100%;height:auto" '
        'font-family="sans-serif" font-size="11">'
    )


def _centre(positions: Mapping[StrEnum, tuple[int, int]], state: StrEnum) -> tuple[float, float]:
    col, row = positions[state]
    return 20 + col * _DX + _W / 2, 20 + row * _DY + _H / 2


def table_svg(
    table: TransitionTable[Any, Any],
    positions: Mapping[StrEnum, tuple[int, int]],
    colours: Mapping[str, str],
    current: str | None = None,
) -> str:
    """A state machine drawn from ``table``: one box per state at ``positions`` (column, row),
    one arrow per (source, target) pair of its rows, titled with the rows' transitions;
    ``current`` is outlined and the transitions allowed from it are drawn bold. Two states
    joined both ways get two bent arrows, so neither hides the other."""
    allowed_from = next((s for s in positions if str(s) == current), None) if current else None
    edges: dict[tuple[StrEnum, StrEnum], list[str]] = {}
    for state, transition, table_row in table.pairs():
        for target in table_row.targets:
            edges.setdefault((state, target), []).append(str(transition))
    columns = max(col for col, _ in positions.values())
    rows = max(row for _, row in positions.values())
    parts = [
        _svg_open(40 + columns * _DX + _W, 40 + rows * _DY + _H),
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" '
        'markerHeight="6" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555"/>'
        "</marker></defs>",
    ]
    for (source, target), names in sorted(edges.items()):
        x1, y1 = _centre(positions, source)
        x2, y2 = _centre(positions, target)
        bold = allowed_from is not None and source is allowed_from
        width = 2.2 if bold else 0.8
        colour = "#d62728" if bold else "#888"
        title = escape(", ".join(sorted(set(names))))
        if source is target:
            top = y1 - _H / 2
            path = f"M{x1 - 20},{top} C{x1 - 30},{y1 - 60} {x1 + 30},{y1 - 60} {x1 + 20},{top}"
        else:
            mx, my = (x1 + x2) / 2, (y1 + y2) / 2 - (25 if y1 == y2 and abs(x2 - x1) > _DX else 0)
            if (target, source) in edges:  # bend each of the pair to its own side
                length = max(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1.0)
                mx, my = mx + 14 * (y2 - y1) / length, my - 14 * (x2 - x1) / length
            path = f"M{x1},{y1} Q{mx},{my} {x2},{y2}"
        parts.append(
            f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="{width}" '
            f'marker-end="url(#arrow)"><title>{title}</title></path>'
        )
    for state, (col, row) in positions.items():
        x, y = 20 + col * _DX, 20 + row * _DY
        is_current = current is not None and str(state) == current
        stroke = "#d62728" if is_current else "#444"
        parts.append(
            f'<g class="state" data-state="{state}"><rect x="{x}" y="{y}" width="{_W}" '
            f'height="{_H}" rx="8" fill="{colours[str(state)]}" stroke="{stroke}" '
            f'stroke-width="{3 if is_current else 1}"/><text x="{x + _W / 2}" y="{y + _H / 2 + 4}" '
            f'text-anchor="middle">{escape(str(state).replace("_", " "))}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def state_machine_svg(
    current: str | None = None,
    table: TransitionTable[Any, Any] = WORK_ITEM_TABLE,
) -> str:
    """The WorkItem state machine drawn from ``table`` (the Authority's ``WORK_ITEM_TABLE``
    unless given another); ``current`` is highlighted and the transitions allowed from it are
    drawn bold."""
    return table_svg(table, _POSITIONS, STATE_COLOURS, current)


def mission_machine_svg(
    current: str | None = None,
    table: TransitionTable[Any, Any] = MISSION_TABLE,
) -> str:
    """The Mission lifecycle of §7.1 drawn from ``table`` (``MISSION_TABLE`` unless given
    another); ``current`` is highlighted and the transitions allowed from it are drawn bold."""
    return table_svg(table, _MISSION_POSITIONS, MISSION_STATE_COLOURS, current)


def slot_machine_svg(
    current: str | None = None,
    table: TransitionTable[Any, Any] = SLOT_TABLE,
) -> str:
    """A Worker's Capacity Slot lifecycle drawn from ``table`` (``SLOT_TABLE``, the one every
    slot's ``move`` checks, unless given another); ``current`` is highlighted."""
    return table_svg(table, _SLOT_POSITIONS, SLOT_STATE_COLOURS, current)


def dag_svg(
    nodes: Iterable[tuple[str, str, str]],
    edges: Iterable[tuple[str, str]],
    *,
    selected: str | None = None,
    colours: Mapping[str, str] = STATE_COLOURS,
) -> str:
    """A DAG drawn in layers: ``nodes`` are ``(id, label, state)``, ``edges`` ``(from, to)``
    meaning *to depends on from*. Layer = longest path from a root. Each node is a
    ``<g class="node" data-id=…>`` (what a click handler attaches to); ``selected`` is outlined;
    a node is filled with ``colours[state]``."""
    nodes = list(nodes)
    edges = [(a, b) for a, b in edges]
    ids = {n[0] for n in nodes}
    parents: dict[str, list[str]] = {n[0]: [] for n in nodes}
    for a, b in edges:
        if a in ids and b in ids:
            parents[b].append(a)
    layer: dict[str, int] = {}

    def depth(node: str, seen: frozenset[str] = frozenset()) -> int:
        if node in layer:
            return layer[node]
        if node in seen:  # a cycle cannot happen in a Mission DAG; draw it flat if it does
            return 0
        value = 1 + max((depth(p, seen | {node}) for p in parents[node]), default=-1)
        layer[node] = value
        return value

    for node_id, _, _ in nodes:
        depth(node_id)
    rows: dict[int, int] = {}
    position: dict[str, tuple[float, float]] = {}
    for node_id, _, _ in sorted(nodes, key=lambda n: (layer[n[0]], n[0])):
        col = layer[node_id]
        row = rows.get(col, 0)
        rows[col] = row + 1
        position[node_id] = (20 + col * 190, 20 + row * 60)
    width = 40 + (max(layer.values(), default=0) + 1) * 190
    height = 40 + max(rows.values(), default=1) * 60
    parts = [_svg_open(width, height)]
    for a, b in edges:
        if a in position and b in position:
            (x1, y1), (x2, y2) = position[a], position[b]
            parts.append(
                f'<line x1="{x1 + 150}" y1="{y1 + 17}" x2="{x2}" y2="{y2 + 17}" stroke="#888"/>'
            )
    for node_id, label, state in nodes:
        x, y = position[node_id]
        outline = 'stroke="#d62728" stroke-width="3"' if node_id == selected else 'stroke="#444"'
        parts.append(
            f'<g class="node" data-id="{escape(node_id)}"><title>{escape(node_id)}: {escape(state)}'
            f'</title><rect x="{x}" y="{y}" width="150" height="34" rx="6" '
            f'fill="{colours.get(state, "#fff")}" {outline}/><text x="{x + 75}" '
            f'y="{y + 21}" text-anchor="middle">{escape(label[:22])}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def allowed_transitions_html(
    current: str | None, table: TransitionTable[Any, Any] = WORK_ITEM_TABLE
) -> str:
    """The transitions ``table`` (the §10.2 table unless given another) allows from
    ``current``: each row's Command or cause, its targets, the Event kinds that record it and
    the guards the Authority runs (read from the same table the Authority uses)."""
    if current is None:
        return f"<div><small>No {escape(table.aggregate)} selected yet.</small></div>"
    states = {s for row in table.rows for s in (*row.sources, *row.targets)}
    state = next((s for s in states if str(s) == current), None)
    allowed = table.allowed(state) if state is not None else ()
    items = []
    for transition in allowed:
        row = table.lookup(state, transition)
        guards = ", ".join(row.checks)
        events = ", ".join(dict.fromkeys(str(e) for e in row.events))
        items.append(
            f"<li><code>{escape(str(row.transition))}</code> → "
            f"{escape(' | '.join(str(t) for t in row.targets))}"
            + (f" <small>(records {escape(events)})</small>" if events else "")
            + (f" <small>(guards: {escape(guards)})</small>" if guards else "")
            + "</li>"
        )
    return (
        f'<div class="mwp-allowed">From <b>{escape(current)}</b> the table allows:'
        f"<ul>{''.join(items) or '<li>nothing: terminal</li>'}</ul></div>"
    )
