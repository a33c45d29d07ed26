"""A Mission's WorkItem DAG (§10.4) as SVG text: one box per WorkItem, coloured by its state, an
arrow from each dependency to the WorkItem that waits for it, a legend.

``mission_dag_svg`` reads WorkItem records (``authority.model.WorkItemRecord`` or anything with
the same fields: ``work_item_id``, ``state``, ``dependencies``, ``mission_id``, ``group_id``,
``contract``), so it draws the Authority's current state or a replay of the log up to any
point alike. ``filter_items`` selects by Mission, Group and state. Pure functions, no widgets.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .graph_svg import GraphEdge, GraphNode, LegendEntry, graph_svg
from .layout import natural_key
from .svg import STATE_COLOURS

__all__ = ["filter_items", "item_choices", "mission_dag_svg"]


def _short(identifier: str) -> str:
    return identifier.rsplit(":", 1)[-1]


def filter_items(
    items: Iterable[Any],
    *,
    mission: str | None = None,
    group: str | None = None,
    state: str | None = None,
) -> list[Any]:
    """The WorkItems of ``mission`` and ``group`` in ``state`` (None: any), in natural order."""
    return sorted(
        (
            i
            for i in items
            if (mission is None or i.mission_id == mission)
            and (group is None or i.group_id == group)
            and (state is None or str(i.state) == state)
        ),
        key=lambda i: natural_key(i.work_item_id),
    )


def item_choices(items: Iterable[Any]) -> dict[str, list[str]]:
    """The Missions, Groups and states the WorkItems have, for filter menus."""
    items = list(items)
    return {
        "mission": sorted({i.mission_id for i in items}, key=natural_key),
        "group": sorted({i.group_id for i in items}, key=natural_key),
        "state": sorted({str(i.state) for i in items}, key=natural_key),
    }


def mission_dag_svg(items: Sequence[Any], *, selected: str | None = None) -> str:
    """The DAG of ``items``; a dependency outside ``items`` is not drawn. With no WorkItem, a
    sentence saying why the drawing is empty."""
    if not items:
        return (
            '<div class="mwp-empty"><i>No WorkItem yet: the DAG appears once the Coordinator '
            "authorizes work (<code>work.authorize</code>). Step on, or pick another filter."
            "</i></div>"
        )
    ids = {i.work_item_id for i in items}
    nodes = [
        GraphNode(
            node_id=i.work_item_id,
            title=_short(i.work_item_id),
            subtitle=str(i.state).replace("_", " "),
            fill=STATE_COLOURS.get(str(i.state), "#ffffff"),
            kind="work_item",
            tooltip=(
                f"WorkItem {i.work_item_id} ({i.state})\n"
                + str((getattr(i, "contract", None) or {}).get("goal", ""))
            ).strip(),
            data={"state": str(i.state), "mission": i.mission_id, "group": i.group_id},
        )
        for i in items
    ]
    edges = [
        GraphEdge(source=d, target=i.work_item_id, kind="needed by")
        for i in items
        for d in i.dependencies
        if d in ids
    ]
    states = sorted({str(i.state) for i in items}, key=natural_key)
    legend = [
        *(LegendEntry(label=s.replace("_", " "), fill=STATE_COLOURS.get(s, "#fff"))
          for s in states),
        LegendEntry(label="A → B: B depends on A", arrow=True),
    ]  # fmt: skip
    return graph_svg(nodes, edges, selected=selected, legend=legend, css_class="mwp-dag-svg")
