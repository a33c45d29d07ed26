"""Directed graphs drawn as SVG text: boxes laid out by ``layout.layered_layout``, edges with
arrowheads, a legend, labels a person reads, the full identity on hover.

``graph_svg`` draws ``GraphNode``s and ``GraphEdge``s: each node is a ``<g class="node"
data-id=…>`` (what a click handler attaches to) with a title line, an optional second line and a
``<title>`` tooltip; each edge a ``<g class="edge" data-from=… data-to=…>`` holding its polyline
and an explicit arrowhead triangle (no ``<marker>``: marker IDs would collide between drawings
on one page, and a hidden copy's markers vanish in some browsers). Edges are drawn first, under
the boxes; the layout already keeps them out of every box. Colours that sit on the page
background follow JupyterLab's theme (``--jp-*`` variables, with light fallbacks elsewhere);
text inside a box is dark on the box's light fill in every theme.

Pure functions of frozen values, no widgets.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from .layout import layered_layout, natural_key

__all__ = ["GraphEdge", "GraphNode", "LegendEntry", "figure_html", "graph_svg"]

#: Text drawn on a box's light fill, in every theme.
BOX_TEXT = "#1a1a1a"
#: Text and lines on the page background (theme-aware, light fallback).
PAGE_TEXT = "var(--jp-content-font-color0, #111)"
EDGE_COLOUR = "var(--jp-content-font-color2, #666)"
SELECTED = "#d62728"
NODE_WIDTH, NODE_HEIGHT = 170.0, 40.0
#: Roughly how many characters of 11 px sans-serif fit in a box.
_FIT = 26


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphNode:
    """One box: what it shows, how it is filled, what hovering says."""

    node_id: str
    title: str
    subtitle: str = ""
    fill: str = "#eeeeee"
    #: A short word for the kind of node (``work_item``, ``artifact``, ...): a CSS class and a
    #: ``data-kind`` attribute.
    kind: str = "node"
    #: The full text on hover (defaults to the ID).
    tooltip: str = ""
    #: Extra ``data-*`` attributes (state, Mission, Group), for filters and tests.
    data: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphEdge:
    """An arrow from ``source`` to ``target``; ``kind`` names it in the legend, ``dashed``
    draws it dashed."""

    source: str
    target: str
    kind: str = ""
    dashed: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class LegendEntry:
    """A legend item: a filled box, or (``arrow``) an arrow, solid or dashed."""

    label: str
    fill: str = ""
    arrow: bool = False
    dashed: bool = False


def _fit(text: str, limit: int = _FIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _arrowhead(points: Sequence[tuple[float, float]], size: float = 8.0) -> str:
    """A filled triangle whose tip is the polyline's last point, along its last segment."""
    (x1, y1), (x2, y2) = points[-2], points[-1]
    angle = math.atan2(y2 - y1, x2 - x1)
    left = (x2 - size * math.cos(angle - 0.45), y2 - size * math.sin(angle - 0.45))
    right = (x2 - size * math.cos(angle + 0.45), y2 - size * math.sin(angle + 0.45))
    return f"M{x2:.1f},{y2:.1f} L{left[0]:.1f},{left[1]:.1f} L{right[0]:.1f},{right[1]:.1f} Z"


def _legend(entries: Sequence[LegendEntry], width: float) -> tuple[list[str], float]:
    """The legend drawn in rows across ``width``: SVG parts and the height they take."""
    if not entries:
        return [], 0.0
    parts, x, y, row = ['<g class="legend">'], 10.0, 10.0, 18.0
    for entry in entries:
        item = 34.0 + 6.2 * len(entry.label)
        if x + item > max(width, 300.0) and x > 10.0:
            x, y = 10.0, y + row
        if entry.arrow:
            dash = ' stroke-dasharray="5,3"' if entry.dashed else ""
            parts.append(
                f'<path d="M{x:.1f},{y + 6:.1f} L{x + 20:.1f},{y + 6:.1f}" '
                f'style="stroke:{EDGE_COLOUR}" stroke-width="1.4" fill="none"{dash}/>'
                f'<path d="{_arrowhead([(x, y + 6), (x + 24, y + 6)])}" '
                f'style="fill:{EDGE_COLOUR}"/>'
            )
        else:
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="22" height="12" rx="3" '
                f'fill="{escape(entry.fill)}" stroke="#555"/>'
            )
        parts.append(
            f'<text x="{x + 28:.1f}" y="{y + 10:.1f}" style="fill:{PAGE_TEXT}">'
            f"{escape(entry.label)}</text>"
        )
        x += item
    parts.append("</g>")
    return parts, y + row + 4


def graph_svg(
    nodes: Sequence[GraphNode],
    edges: Sequence[GraphEdge],
    *,
    selected: str | None = None,
    legend: Sequence[LegendEntry] = (),
    css_class: str = "mwp-graph",
) -> str:
    """The graph drawn left to right in layers (work flows in the arrows' direction)."""
    ordered = sorted(nodes, key=lambda n: natural_key(n.node_id))
    layout = layered_layout(
        [n.node_id for n in ordered],
        [(e.source, e.target) for e in edges],
        node_width=NODE_WIDTH,
        node_height=NODE_HEIGHT,
    )
    legend_parts, top = _legend(legend, layout.width)
    width = max(layout.width, 320.0)
    height = layout.height + top + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{escape(css_class)}" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        'font-family="sans-serif" font-size="11">',
        *legend_parts,
        f'<g class="graph" transform="translate(0,{top:.1f})">',
    ]
    by_pair = {(e.source, e.target): e for e in edges}
    for route in layout.routes:
        edge = by_pair[(route.source, route.target)]
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(route.points)
        )
        dash = ' stroke-dasharray="5,3"' if edge.dashed else ""
        parts.append(
            f'<g class="edge" data-from="{escape(route.source)}" '
            f'data-to="{escape(route.target)}" data-kind="{escape(edge.kind)}">'
            f"<title>{escape(edge.kind or 'edge')}: {escape(route.source)} → "
            f"{escape(route.target)}</title>"
            f'<path class="edge-line" d="{path}" fill="none" style="stroke:{EDGE_COLOUR}" '
            f'stroke-width="1.4"{dash}/>'
            f'<path class="arrowhead" d="{_arrowhead(route.points)}" '
            f'style="fill:{EDGE_COLOUR}"/></g>'
        )
    for node in ordered:
        box = layout.boxes[node.node_id]
        outline = (
            f'stroke="{SELECTED}" stroke-width="3"'
            if node.node_id == selected
            else 'stroke="#555" stroke-width="1"'
        )
        data = "".join(f' data-{escape(k)}="{escape(v)}"' for k, v in sorted(node.data.items()))
        one_line = not node.subtitle
        title_y = box.y + (box.height / 2 + 4 if one_line else 16)
        parts.append(
            f'<g class="node {escape(node.kind)}" data-id="{escape(node.node_id)}" '
            f'data-kind="{escape(node.kind)}"{data}>'
            f"<title>{escape(node.tooltip or node.node_id)}</title>"
            f'<rect x="{box.x:.1f}" y="{box.y:.1f}" width="{box.width:.0f}" '
            f'height="{box.height:.0f}" rx="6" fill="{escape(node.fill)}" {outline}/>'
            f'<text x="{box.x + box.width / 2:.1f}" y="{title_y:.1f}" text-anchor="middle" '
            f'fill="{BOX_TEXT}" font-weight="bold">{escape(_fit(node.title))}</text>'
        )
        if node.subtitle:
            parts.append(
                f'<text x="{box.x + box.width / 2:.1f}" y="{box.y + 31:.1f}" '
                f'text-anchor="middle" fill="{BOX_TEXT}">{escape(_fit(node.subtitle, 30))}'
                "</text>"
            )
        parts.append("</g>")
    parts.append("</g></svg>")
    return "".join(parts)


def figure_html(svg: str, *, max_height: int = 640, note: str = "") -> str:
    """An SVG in a box that scrolls (pans) when the drawing is larger than ``max_height``, with
    an optional note under it; what a static rendering of a large graph needs."""
    small = f'<div class="mwp-note"><small>{escape(note)}</small></div>' if note else ""
    return (
        f'<div class="mwp-figure" style="overflow:auto;max-height:{max_height}px;'
        f'max-width:100%">{svg}</div>{small}'
    )
