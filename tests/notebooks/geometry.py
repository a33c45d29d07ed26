"""Reading a drawn graph back from its SVG text, for tests: node boxes, edge polylines,
arrowheads, and whether a segment passes through a box. Plain geometry on the parsed SVG,
independent of the code that lays the graph out."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

NS = {"s": "http://www.w3.org/2000/svg"}
_POINT = re.compile(r"[ML]\s*(-?[\d.]+),(-?[\d.]+)")


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float

    def crossed_by(
        self, a: tuple[float, float], b: tuple[float, float], inset: float = 1.0
    ) -> bool:
        """Whether segment ``a``-``b`` passes through the box shrunk by ``inset`` (touching its
        border, as an edge's ends do, does not count)."""
        x0, y0 = self.x + inset, self.y + inset
        x1, y1 = self.x + self.width - inset, self.y + self.height - inset
        t0, t1 = 0.0, 1.0
        dx, dy = b[0] - a[0], b[1] - a[1]
        for p, q in ((-dx, a[0] - x0), (dx, x1 - a[0]), (-dy, a[1] - y0), (dy, y1 - a[1])):
            if p == 0:
                if q < 0:
                    return False
                continue
            t = q / p
            if p < 0:
                t0 = max(t0, t)
            else:
                t1 = min(t1, t)
            if t0 > t1:
                return False
        return True


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    points: list[tuple[float, float]]
    arrowhead: list[tuple[float, float]]


def parse(svg: str) -> tuple[dict[str, Rect], list[Edge], dict[str, list[str]]]:
    """``(boxes by node ID, edges, the text lines of each node)`` of a graph drawn as SVG; the
    graph group's ``translate`` is applied."""
    root = ET.fromstring(svg)
    graph = root.find(".//s:g[@class='graph']", NS)
    assert graph is not None, "no <g class='graph'>"
    shift = [float(v) for v in re.findall(r"-?[\d.]+", graph.get("transform", "0,0"))] or [0, 0]
    dx, dy = shift[0], shift[1] if len(shift) > 1 else 0.0
    boxes: dict[str, Rect] = {}
    texts: dict[str, list[str]] = {}
    for node in graph.findall("s:g", NS):
        if "node" not in (node.get("class") or "").split():
            continue
        rect = node.find("s:rect", NS)
        assert rect is not None
        boxes[node.get("data-id", "")] = Rect(
            float(rect.get("x", 0)) + dx,
            float(rect.get("y", 0)) + dy,
            float(rect.get("width", 0)),
            float(rect.get("height", 0)),
        )
        texts[node.get("data-id", "")] = [
            "".join(t.itertext()) for t in node.findall("s:text", NS)
        ] + ["".join(t.itertext()) for t in node.findall("s:title", NS)]
    edges = []
    for group in graph.findall("s:g", NS):
        if (group.get("class") or "") != "edge":
            continue
        line = group.find("s:path[@class='edge-line']", NS)
        head = group.find("s:path[@class='arrowhead']", NS)
        assert line is not None

        def points(path: ET.Element | None) -> list[tuple[float, float]]:
            if path is None:
                return []
            return [(float(x) + dx, float(y) + dy) for x, y in _POINT.findall(path.get("d", ""))]

        edges.append(
            Edge(group.get("data-from", ""), group.get("data-to", ""), points(line), points(head))
        )
    return boxes, edges, texts


def crossings(boxes: dict[str, Rect], edges: list[Edge]) -> list[tuple[str, str, str]]:
    """``(edge source, edge target, node)`` for every edge segment through a box (its own
    source's and target's included: an edge only touches their borders)."""
    found = []
    by_x = sorted(boxes.items(), key=lambda kv: kv[1].x)
    for edge in edges:
        for a, b in zip(edge.points, edge.points[1:], strict=False):
            left, right = min(a[0], b[0]), max(a[0], b[0])
            top, bottom = min(a[1], b[1]), max(a[1], b[1])
            for node, box in by_x:
                if box.x > right:
                    break
                if box.x + box.width < left or box.y > bottom or box.y + box.height < top:
                    continue
                if box.crossed_by(a, b):
                    found.append((edge.source, edge.target, node))
    return found
