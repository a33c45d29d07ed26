"""Graph widgets: a Mission's WorkItem DAG coloured by state, and the provenance graph with
click-to-inspect. This module imports ipywidgets and anywidget: import it from a notebook only.

Both draw SVG computed in Python from the log (``svg.dag_svg``), so they render offline; the
provenance graph's nodes are clickable (``clickable.ClickableSvg``) and a click shows the
Artifact's signed manifest, the Evidence citing it and a fresh hash check of its content.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as w

from ..protocol.jsontext import parse_strict
from ..render.provenance import ProvenanceModel, inspect_html
from ..render.svg import dag_svg
from .clickable import ClickableSvg


def _documents(sandbox: Any) -> list[dict[str, Any]]:
    return [parse_strict(e.document) for e in sandbox.log.store.events()]


def mission_graph_svg(sandbox: Any, mission_id: str | None = None) -> str:
    """The WorkItem DAG of ``mission_id`` (every Mission if None), coloured by current state."""
    state = sandbox.log.state
    items = [
        i
        for i in sorted(state.work_items.values(), key=lambda i: i.work_item_id)
        if mission_id is None or i.mission_id == mission_id
    ]
    nodes = [(i.work_item_id, i.work_item_id.rsplit(":", 1)[-1], str(i.state)) for i in items]
    edges = [(d, i.work_item_id) for i in items for d in i.dependencies]
    return dag_svg(nodes, edges)


class MissionGraph:
    """A Mission's WorkItem DAG, coloured by state; ``refresh()`` redraws it from the log."""

    def __init__(self, sandbox: Any, mission_id: str | None = None) -> None:
        self.sandbox = sandbox
        self.mission_id = mission_id
        self.view = w.HTML()
        self.view.add_class("mwp-mission-graph")
        self.refresh()

    def refresh(self) -> None:
        """Redraw from the current state."""
        self.view.value = mission_graph_svg(self.sandbox, self.mission_id)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.view)  # type: ignore[no-untyped-call]


class ProvenanceGraph:
    """Artifacts, WorkItems and Missions; click a node to inspect it."""

    def __init__(self, sandbox: Any, blobs_dir: Path | str | None = None) -> None:
        self.sandbox = sandbox
        self.blobs_dir = blobs_dir if blobs_dir is not None else sandbox.directory / "blobs"
        self.graph = ClickableSvg()
        self.inspector = w.HTML("<i>Click a node to inspect it.</i>")
        self.inspector.add_class("mwp-inspector")
        self.graph.observe(lambda change: self.inspect(change["new"]), names="selected")
        self.widget = w.VBox([self.graph, self.inspector])
        self.widget.add_class("mwp-provenance")
        self.model: ProvenanceModel
        self.refresh()

    def refresh(self) -> None:
        """Rebuild the graph from the log."""
        states = {k: str(v.state) for k, v in self.sandbox.log.state.work_items.items()}
        self.model = ProvenanceModel.from_events(_documents(self.sandbox), states)
        self.graph.svg = self.model.svg(self.graph.selected or None)

    def inspect(self, node_id: str) -> str:
        """Show ``node_id`` in the inspector (what a click does) and outline it."""
        if not node_id:
            return ""
        self.graph.selected = node_id
        self.graph.svg = self.model.svg(node_id)
        self.inspector.value = inspect_html(self.model, node_id, self.blobs_dir)
        return str(self.inspector.value)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]
