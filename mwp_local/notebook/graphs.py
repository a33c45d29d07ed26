"""Graph widgets: a Mission's WorkItem DAG coloured by state, and the provenance graph with
click-to-inspect. This module imports ipywidgets and anywidget: import it from a notebook only.

Both draw SVG computed in Python from the log (``render.mission_graph``, ``render.provenance``,
laid out by ``render.layout``), in a viewport that pans and zooms (``clickable.ClickableSvg``),
with filters by Mission, Group and WorkItem state for large graphs. Given a ``Stepper`` they
follow it: they redraw the log as it was at the step the Stepper shows. Each leaves a static
copy of what it shows in the output (``static.StaticCopy``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as w

from ..render.graph_svg import figure_html
from ..render.html import STYLE
from ..render.mission_graph import filter_items, item_choices, mission_dag_svg
from ..render.provenance import ProvenanceModel, inspect_html
from ..render.reprs import work_item_html
from .clickable import ClickableSvg
from .replay import LogReplay
from .static import StaticCopy

_ALL = "all"
#: A graph with more nodes than this starts filtered to its first Mission (the caption says so).
LARGE = 150


def mission_graph_svg(sandbox: Any, mission_id: str | None = None) -> str:
    """The WorkItem DAG of ``mission_id`` (every Mission if None), coloured by current state."""
    return mission_dag_svg(filter_items(sandbox.log.state.work_items.values(), mission=mission_id))


class _Filters:
    """Three drop-downs (Mission, Group, state) that call ``changed()`` when one changes."""

    def __init__(self, changed: Any) -> None:
        self.mission = w.Dropdown(description="Mission", options=[_ALL], value=_ALL)
        self.group = w.Dropdown(description="Group", options=[_ALL], value=_ALL)
        self.state = w.Dropdown(description="state", options=[_ALL], value=_ALL)
        self.box = w.HBox([self.mission, self.group, self.state])
        self.box.add_class("mwp-filters")
        self.quiet = False  # True while the graph itself sets the menus
        self.narrowed = False  # whether a large graph was narrowed to one Mission
        self._offered = False

        def notify(_change: Any) -> None:
            if not self.quiet:
                changed()

        for dropdown in (self.mission, self.group, self.state):
            dropdown.observe(notify, names="value")

    def offer(self, choices: dict[str, list[str]], total: int = 0) -> None:
        """Offer what the graph holds (keeping a choice that is still there). The first time,
        a graph of more than ``LARGE`` nodes over several Missions is narrowed to the first."""
        self.quiet = True
        try:
            for name, dropdown in (
                ("mission", self.mission),
                ("group", self.group),
                ("state", self.state),
            ):
                options = [_ALL, *choices.get(name, [])]
                if list(dropdown.options) != options:
                    keep = dropdown.value if dropdown.value in options else _ALL
                    dropdown.options = options
                    dropdown.value = keep
            missions = choices.get("mission", [])
            if (
                not self._offered
                and total > LARGE
                and len(missions) > 1
                and self.mission.value == _ALL
            ):
                self.mission.value = missions[0]
                self.narrowed = True
            self._offered = self._offered or total > 0
        finally:
            self.quiet = False

    def values(self) -> dict[str, str | None]:
        return {
            "mission": None if self.mission.value == _ALL else self.mission.value,
            "group": None if self.group.value == _ALL else self.group.value,
            "state": None if self.state.value == _ALL else self.state.value,
        }

    def text(self) -> str:
        chosen = [f"{k} {v.rsplit(':', 1)[-1]}" for k, v in self.values().items() if v]
        large = (
            f" (a large graph starts with its first Mission: choose Mission '{_ALL}' for all)"
            if self.narrowed and self.mission.value != _ALL
            else ""
        )
        return ("filtered: " + ", ".join(chosen) if chosen else "no filter") + large


class MissionGraph:
    """A Mission's WorkItem DAG, coloured by state. ``refresh()`` redraws it from the log;
    with ``stepper=`` it follows the step the Stepper shows. Click a WorkItem to inspect it."""

    def __init__(self, sandbox: Any, mission_id: str | None = None, *, stepper: Any = None) -> None:
        self.sandbox = sandbox
        self.replay = LogReplay(sandbox)
        self.position: int | None = None  # None: the current state
        self.filters = _Filters(self._draw)
        if mission_id is not None:
            self.filters.quiet = True
            self.filters.mission.options = [_ALL, mission_id]
            self.filters.mission.value = mission_id
            self.filters.quiet = False
        self.graph = ClickableSvg()
        self.graph.add_class("mwp-mission-graph")
        self.caption = w.HTML()
        self.inspector = w.HTML()
        self.inspector.add_class("mwp-inspector")
        self.graph.observe(lambda change: self.inspect(change["new"]), names="selected")
        self.widget = w.VBox([self.filters.box, self.caption, self.graph, self.inspector])
        self.widget.add_class("mwp-mission-dag")
        self.static = StaticCopy("mission-graph", self.static_html)
        self.items: list[Any] = []
        if stepper is not None:
            stepper.follow(self.show_at)
        else:
            self.refresh()

    @property
    def view(self) -> ClickableSvg:
        """The drawing (its ``svg`` is what is shown)."""
        return self.graph

    def _state(self) -> Any:
        # The replay's copy, never the live Authority's state: ``items`` hands its records out.
        if self.position is None:
            return self.replay.state_at(self.sandbox.log.store.event_count())
        return self.replay.state_at(self.position)

    def refresh(self) -> None:
        """Redraw from the current state."""
        self.position = None
        self._draw()

    def show_at(self, report: Any, position: int) -> None:
        """Redraw the log as it was after ``position`` Events (what a Stepper calls)."""
        self.position = position
        self._draw(report)

    def _draw(self, report: Any = None) -> None:
        state = self._state()
        everything = list(state.work_items.values())
        self.filters.offer(item_choices(everything), len(everything))
        self.items = filter_items(everything, **self.filters.values())
        selected = self.graph.selected or None
        self.graph.svg = mission_dag_svg(self.items, selected=selected)
        where = (
            "now"
            if self.position is None
            else f"after step {report.number}"
            if report is not None
            else "before the first step"
        )
        self.caption.value = (
            f'{STYLE}<div class="mwp"><small>{len(self.items)} of {len(everything)} WorkItems, '
            f"{where}; {self.filters.text()}</small></div>"
        )
        if selected:
            self.inspect(selected)
        self.static.update()

    def inspect(self, node_id: str) -> str:
        """Show the WorkItem ``node_id`` (what a click does)."""
        item = next((i for i in self.items if i.work_item_id == node_id), None)
        if item is None:
            return ""
        if self.graph.selected != node_id:
            self.graph.selected = node_id
            return str(self.inspector.value)
        self.graph.svg = mission_dag_svg(self.items, selected=node_id)
        self.inspector.value = work_item_html(item)
        self.static.update()
        return str(self.inspector.value)

    def static_html(self) -> str:
        """What the graph shows now, as HTML (its static copy)."""
        return f"{self.caption.value}{figure_html(self.graph.svg)}{self.inspector.value}"

    def _ipython_display_(self) -> None:
        self.static.display(self.widget)


class ProvenanceGraph:
    """Missions, WorkItems and Artifacts; click a node to inspect it. Filters select a Mission,
    a Group or a WorkItem state; with ``stepper=`` it follows the step the Stepper shows."""

    def __init__(
        self, sandbox: Any, blobs_dir: Path | str | None = None, *, stepper: Any = None
    ) -> None:
        self.sandbox = sandbox
        self.blobs_dir = blobs_dir if blobs_dir is not None else sandbox.directory / "blobs"
        self.replay = LogReplay(sandbox)
        self.position: int | None = None
        self.filters = _Filters(self._draw)
        self.graph = ClickableSvg()
        self.caption = w.HTML()
        self.inspector = w.HTML(f'{STYLE}<div class="mwp"><i>Click a node to inspect it.</i></div>')
        self.inspector.add_class("mwp-inspector")
        self.graph.observe(lambda change: self.inspect(change["new"]), names="selected")
        self.widget = w.VBox([self.filters.box, self.caption, self.graph, self.inspector])
        self.widget.add_class("mwp-provenance")
        self.static = StaticCopy("provenance", self.static_html)
        self.full: ProvenanceModel
        self.model: ProvenanceModel
        if stepper is not None:
            stepper.follow(self.show_at)
        else:
            self.refresh()

    def refresh(self) -> None:
        """Rebuild the graph from the log as it is now."""
        self.position = None
        self._draw()

    def show_at(self, _report: Any, position: int) -> None:
        """Rebuild the graph from the first ``position`` Events (what a Stepper calls)."""
        self.position = position
        self._draw()

    def _draw(self) -> None:
        documents = self.replay.documents()
        if self.position is None:
            state = self.sandbox.log.state
        else:
            documents = documents[: self.position]
            state = self.replay.state_at(self.position)
        states = {k: str(v.state) for k, v in state.work_items.items()}
        states.update({k: str(v.state) for k, v in state.missions.items()})
        self.full = ProvenanceModel.from_events(documents, states)
        self.filters.offer(self.full.choices(), len(self.full.nodes))
        self.model = self.full.filtered(**self.filters.values())
        if self.graph.selected and not any(
            n.node_id == self.graph.selected for n in self.model.nodes
        ):
            self.graph.selected = ""
        self.graph.svg = self.model.svg(self.graph.selected or None)
        self.caption.value = (
            f'{STYLE}<div class="mwp"><small>{len(self.model.nodes)} of {len(self.full.nodes)} '
            f"nodes; {self.filters.text()}</small></div>"
        )
        self.static.update()

    def inspect(self, node_id: str) -> str:
        """Show ``node_id`` in the inspector (what a click does) and outline it."""
        if not node_id:
            return ""
        if self.graph.selected != node_id:
            self.graph.selected = node_id  # observed: comes back here
            return str(self.inspector.value)
        self.graph.svg = self.model.svg(node_id)
        self.inspector.value = inspect_html(self.model, node_id, self.blobs_dir)
        self.static.update()
        return str(self.inspector.value)

    def static_html(self) -> str:
        """What the graph shows now, as HTML (its static copy)."""
        return f"{self.caption.value}{figure_html(self.graph.svg)}{self.inspector.value}"

    def _ipython_display_(self) -> None:
        self.static.display(self.widget)
