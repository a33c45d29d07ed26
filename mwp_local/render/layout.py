"""A layered (Sugiyama-style) layout of a directed graph, left to right, as plain numbers.

``layered_layout`` places each node in a column (its *layer*: work flows left to right), orders
the nodes of each column to reduce edge crossings, and routes every edge from its source's right
side to its target's left side. The four classic steps, each small enough to read:

1. **Cycles** are broken by reversing the edges a depth-first search finds pointing back (a
   Mission DAG has none; a drawing must not loop forever if one ever does).
2. **Layers**: longest path from the sources; a source with successors then moves right next to
   its nearest successor, so it does not trail a long edge.
3. **Order**: an edge spanning several layers gets one *dummy* node per layer it crosses, so every
   edge joins adjacent layers; then barycentre sweeps (down and up) reorder each layer, keeping
   the order with the fewest crossings (counted exactly, with a Fenwick tree).
4. **Coordinates**: each node moves towards the mean height of its neighbours, subject to its
   layer's order and spacing (a weighted isotonic regression, pool-adjacent-violators), in
   alternating sweeps.

Because every segment of a route either runs through the empty gap between two columns or
crosses a column horizontally at a dummy's height (kept ``dummy_gap`` away from every box), no
edge passes through a node's box. Ties are broken by natural sort of the node IDs (``service-2``
before ``service-10``), so the same graph always gives the same layout. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

__all__ = ["Box", "Layout", "Route", "layered_layout", "natural_key"]

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """A sort key that orders embedded numbers by value: ``item-2`` before ``item-10``."""
    return tuple(
        (1, int(part), "") if part.isdigit() else (0, 0, part.casefold())
        for part in _DIGITS.split(text)
        if part
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Box:
    """A node's box: top-left corner and size."""

    x: float
    y: float
    width: float
    height: float

    @property
    def centre_y(self) -> float:
        """The vertical middle of the box."""
        return self.y + self.height / 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Route:
    """One edge as drawn: its endpoints and the polyline from source to target (the last point
    touches the target's box)."""

    source: str
    target: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Where everything goes: a box per node, a route per edge, the drawing's size."""

    boxes: Mapping[str, Box]
    routes: tuple[Route, ...]
    layers: Mapping[str, int]
    width: float
    height: float
    #: Edge crossings left after ordering (between adjacent layers, dummies included).
    crossings: int


def layered_layout(
    nodes: Sequence[str],
    edges: Sequence[tuple[str, str]],
    *,
    node_width: float = 170.0,
    node_height: float = 40.0,
    layer_gap: float = 70.0,
    node_gap: float = 18.0,
    dummy_gap: float = 10.0,
    margin: float = 10.0,
    sweeps: int = 12,
    key: Callable[[str], Any] = natural_key,
) -> Layout:
    """Lay ``nodes`` out in layers; ``edges`` are ``(source, target)``. Unknown endpoints,
    self-loops and repeated edges are dropped. ``key`` orders ties (natural sort by default)."""
    known = set(nodes)
    order_of = {n: i for i, n in enumerate(sorted(dict.fromkeys(nodes), key=key))}
    ids = sorted(order_of, key=order_of.__getitem__)
    unique = list(dict.fromkeys((a, b) for a, b in edges if a in known and b in known and a != b))
    forward = _break_cycles(ids, unique)
    layer = _layers(ids, forward)
    graph = _Graph.build(ids, forward, layer, order_of)
    order = graph.initial_order()
    order, crossings = graph.minimise_crossings(order, sweeps)

    def height(n: str) -> float:
        return 0.0 if graph.is_dummy(n) else node_height

    def gap(a: str, b: str) -> float:
        return dummy_gap if graph.is_dummy(a) or graph.is_dummy(b) else node_gap

    ys = graph.coordinates(order, height, gap)
    top = min((ys[n] - height(n) / 2 for column in order for n in column), default=0.0)
    shift = margin - top
    column_x = [margin + i * (node_width + layer_gap) for i in range(len(order))]
    boxes = {
        n: Box(x=column_x[layer[n]], y=ys[n] - node_height / 2 + shift, width=node_width,
               height=node_height)
        for n in ids
    }  # fmt: skip
    dummy_y = {n: ys[n] + shift for column in order for n in column if graph.is_dummy(n)}
    routes = _routes(unique, forward, graph, boxes, dummy_y, column_x, node_width)
    bottom = max((b.y + b.height for b in boxes.values()), default=0.0)
    bottom = max([bottom, *dummy_y.values()])
    width = margin * 2 + len(order) * node_width + max(len(order) - 1, 0) * layer_gap
    return Layout(
        boxes=boxes,
        routes=routes,
        layers=dict(layer),
        width=max(width, 0.0),
        height=bottom + margin if ids else 0.0,
        crossings=crossings,
    )


def _break_cycles(ids: Sequence[str], edges: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
    """The edges with every back edge of a depth-first search reversed (an acyclic set)."""
    out: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in edges:
        out[a].append(b)
    colour: dict[str, int] = {}  # 1: on the stack, 2: done
    back: set[tuple[str, str]] = set()
    for root in ids:
        if root in colour:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        colour[root] = 1
        while stack:
            node, i = stack.pop()
            if i < len(out[node]):
                stack.append((node, i + 1))
                nxt = out[node][i]
                if colour.get(nxt) == 1:
                    back.add((node, nxt))
                elif nxt not in colour:
                    colour[nxt] = 1
                    stack.append((nxt, 0))
            else:
                colour[node] = 2
    return {(b, a) if (a, b) in back else (a, b) for a, b in edges}


def _layers(ids: Sequence[str], edges: set[tuple[str, str]]) -> dict[str, int]:
    """Longest path from the sources; then each source sits just left of its nearest successor."""
    preds: dict[str, list[str]] = {n: [] for n in ids}
    succs: dict[str, list[str]] = {n: [] for n in ids}
    for a, b in edges:
        preds[b].append(a)
        succs[a].append(b)
    indegree = {n: len(preds[n]) for n in ids}
    ready = [n for n in ids if indegree[n] == 0]
    layer: dict[str, int] = {}
    while ready:
        node = ready.pop(0)
        layer[node] = 1 + max((layer[p] for p in preds[node]), default=-1)
        for s in succs[node]:
            indegree[s] -= 1
            if indegree[s] == 0:
                ready.append(s)
    for node in ids:
        if not preds[node] and succs[node]:
            layer[node] = min(layer[s] for s in succs[node]) - 1
    return layer


@dataclass(slots=True)
class _Graph:
    """The proper layered graph: real nodes and dummies, every edge between adjacent layers."""

    layer: dict[str, int]
    up: dict[str, list[str]]  # neighbours in the layer to the left
    down: dict[str, list[str]]  # neighbours in the layer to the right
    chains: dict[tuple[str, str], list[str]]  # (source, target) → its dummies, left to right
    rank: dict[str, tuple[int, ...]]  # the tie-breaking order of every node and dummy
    layers: int

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        edges: set[tuple[str, str]],
        layer: dict[str, int],
        order_of: Mapping[str, int],
    ) -> _Graph:
        full = dict(layer)
        up: dict[str, list[str]] = {n: [] for n in ids}
        down: dict[str, list[str]] = {n: [] for n in ids}
        chains: dict[tuple[str, str], list[str]] = {}
        rank: dict[str, tuple[int, ...]] = {n: (order_of[n],) for n in ids}
        for a, b in sorted(edges, key=lambda e: (order_of[e[0]], order_of[e[1]])):
            previous, chain = a, []
            for level in range(layer[a] + 1, layer[b]):
                dummy = f"\0{a}\0{b}\0{level}"
                full[dummy] = level
                up[dummy], down[dummy] = [], []
                rank[dummy] = (order_of[a], order_of[b])
                chain.append(dummy)
                down[previous].append(dummy)
                up[dummy].append(previous)
                previous = dummy
            down[previous].append(b)
            up[b].append(previous)
            chains[(a, b)] = chain
        count = 1 + max(full.values(), default=-1)
        return cls(layer=full, up=up, down=down, chains=chains, rank=rank, layers=count)

    @staticmethod
    def is_dummy(node: str) -> bool:
        return node.startswith("\0")

    def initial_order(self) -> list[list[str]]:
        """Layer 0 by natural order, each next layer by the mean position of its left
        neighbours (a breadth-first start that already untangles much)."""
        columns: list[list[str]] = [[] for _ in range(self.layers)]
        for node in sorted(self.layer, key=self.rank.__getitem__):
            columns[self.layer[node]].append(node)
        for i in range(1, self.layers):
            self._reorder(columns, i, self.up)
        return columns

    def _reorder(self, columns: list[list[str]], i: int, side: dict[str, list[str]]) -> None:
        """Sort layer ``i`` by the barycentre of its neighbours on ``side`` (a node without any
        keeps its place)."""
        fixed = columns[i - 1] if side is self.up else columns[i + 1]
        where = {n: p for p, n in enumerate(fixed)}
        current = columns[i]

        def barycentre(item: tuple[int, str]) -> tuple[float, int]:
            p, node = item
            near = [where[m] for m in side[node]]
            return (sum(near) / len(near) if near else float(p), p)

        columns[i] = [n for _, n in sorted(enumerate(current), key=barycentre)]

    def crossings(self, columns: list[list[str]]) -> int:
        """Exact crossings between adjacent layers (inversions, counted with a Fenwick tree)."""
        total = 0
        for i in range(len(columns) - 1):
            lower = {n: p for p, n in enumerate(columns[i + 1])}
            targets = [
                lower[m] for n in columns[i] for m in sorted(self.down[n], key=lower.__getitem__)
            ]
            total += _inversions(targets, len(columns[i + 1]))
        return total

    def minimise_crossings(
        self, columns: list[list[str]], sweeps: int
    ) -> tuple[list[list[str]], int]:
        best = [list(c) for c in columns]
        best_count = self.crossings(best)
        for sweep in range(sweeps):
            if best_count == 0:
                break
            if sweep % 2 == 0:
                for i in range(1, len(columns)):
                    self._reorder(columns, i, self.up)
            else:
                for i in range(len(columns) - 2, -1, -1):
                    self._reorder(columns, i, self.down)
            count = self.crossings(columns)
            if count < best_count:
                best, best_count = [list(c) for c in columns], count
        return best, best_count

    def coordinates(
        self,
        columns: list[list[str]],
        height: Callable[[str], float],
        gap: Callable[[str, str], float],
        rounds: int = 6,
    ) -> dict[str, float]:
        """Vertical centres: each layer stacked in its order, then pulled towards its
        neighbours' mean height (alternately the left and the right neighbours; dummies pull
        harder, so long edges run straight)."""
        ys: dict[str, float] = {}
        seps: list[list[float]] = []
        for column in columns:
            minimum = [(height(a) + height(b)) / 2 + gap(a, b) for a, b in pairwise(column)]
            seps.append(minimum)
            y = 0.0
            for k, node in enumerate(column):
                ys[node] = y
                if k < len(minimum):
                    y += minimum[k]
        tallest = max((sum(s) for s in seps), default=0.0)
        for column, minimum in zip(columns, seps, strict=True):
            offset = (tallest - sum(minimum)) / 2
            for node in column:
                ys[node] += offset
        for r in range(rounds * 2):
            side = self.up if r % 2 == 0 else self.down
            indices = range(len(columns)) if r % 2 == 0 else range(len(columns) - 1, -1, -1)
            for i in indices:
                column = columns[i]
                if not column:
                    continue
                targets = []
                weights = []
                for node in column:
                    near = side[node]
                    targets.append(sum(ys[m] for m in near) / len(near) if near else ys[node])
                    weights.append((3.0 if self.is_dummy(node) else 1.0) if near else 0.25)
                for node, y in zip(column, _spaced_fit(targets, weights, seps[i]), strict=True):
                    ys[node] = y
        return ys


def _inversions(values: list[int], size: int) -> int:
    """Pairs ``i < j`` with ``values[i] > values[j]``."""
    tree = [0] * (size + 1)
    count = 0
    for seen, v in enumerate(values):
        # how many seen so far are greater than v: seen - (how many <= v)
        i, at_most = v + 1, 0
        while i > 0:
            at_most += tree[i]
            i -= i & -i
        count += seen - at_most
        i = v + 1
        while i <= size:
            tree[i] += 1
            i += i & -i
    return count


def _spaced_fit(targets: list[float], weights: list[float], seps: list[float]) -> list[float]:
    """The positions closest to ``targets`` (weighted least squares) with
    ``y[k+1] - y[k] >= seps[k]``: isotonic regression of the shifted targets (pool adjacent
    violators), shifted back."""
    offsets = [0.0]
    for s in seps:
        offsets.append(offsets[-1] + s)
    shifted = [t - o for t, o in zip(targets, offsets, strict=True)]
    blocks: list[list[float]] = []  # [weighted mean, total weight, count]
    for value, weight in zip(shifted, weights, strict=True):
        blocks.append([value, weight, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, c2 = blocks.pop()
            v1, w1, c1 = blocks.pop()
            total = w1 + w2
            blocks.append([(v1 * w1 + v2 * w2) / total, total, c1 + c2])
    fitted: list[float] = []
    for value, _, count in blocks:
        fitted.extend([value] * int(count))
    return [z + o for z, o in zip(fitted, offsets, strict=True)]


def _routes(
    edges: Sequence[tuple[str, str]],
    forward: set[tuple[str, str]],
    graph: _Graph,
    boxes: Mapping[str, Box],
    dummy_y: Mapping[str, float],
    column_x: Sequence[float],
    node_width: float,
) -> tuple[Route, ...]:
    """Each edge's polyline: out of the source's right side, across each dummy's column at the
    dummy's height, into the target's left side. Several edges at one side of a box get ports
    spread along it, ordered by where the edges come from, so they do not overlap."""
    paths: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for a, b in edges:
        drawn = (a, b) if (a, b) in forward else (b, a)
        middle: list[tuple[float, float]] = []
        for dummy in graph.chains[drawn]:
            x = column_x[graph.layer[dummy]]
            middle += [(x, dummy_y[dummy]), (x + node_width, dummy_y[dummy])]
        paths[(a, b)] = middle
    outs: dict[str, list[tuple[str, str]]] = {}
    ins: dict[str, list[tuple[str, str]]] = {}
    for a, b in edges:
        s, t = (a, b) if (a, b) in forward else (b, a)
        outs.setdefault(s, []).append((a, b))
        ins.setdefault(t, []).append((a, b))

    def toward(edge: tuple[str, str], end: str) -> float:
        """The height of the next point an edge heads to from its ``end`` node."""
        a, b = edge
        s, t = (a, b) if edge in forward else (b, a)
        middle = paths[edge] if edge in forward else paths[edge][::-1]
        if end == s:
            return middle[0][1] if middle else boxes[t].centre_y
        return middle[-1][1] if middle else boxes[s].centre_y

    def ports(node: str, group: list[tuple[str, str]]) -> dict[tuple[str, str], float]:
        box = boxes[node]
        ordered = sorted(group, key=lambda e: (toward(e, node), e))
        step = min(8.0, box.height * 0.7 / max(len(ordered), 1))
        return {
            e: box.centre_y + (k - (len(ordered) - 1) / 2) * step for k, e in enumerate(ordered)
        }

    out_port = {e: y for n, g in outs.items() for e, y in ports(n, g).items()}
    in_port = {e: y for n, g in ins.items() for e, y in ports(n, g).items()}
    routes = []
    for a, b in edges:
        s, t = (a, b) if (a, b) in forward else (b, a)
        middle = paths[(a, b)] if (a, b) in forward else paths[(a, b)][::-1]
        start = (boxes[s].x + boxes[s].width, out_port[(a, b)])
        end_x, end_y = boxes[t].x, in_port[(a, b)]
        points = [start, *middle, (end_x - 8.0, end_y), (end_x, end_y)]
        if (a, b) not in forward:  # a reversed (cycle) edge points back to its real target
            points = points[::-1]
        routes.append(
            Route(source=a, target=b, points=tuple((round(x, 1), round(y, 1)) for x, y in points))
        )
    return tuple(routes)
