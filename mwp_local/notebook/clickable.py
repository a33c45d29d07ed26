"""A clickable SVG for notebooks: a tiny anywidget (imported here and only here).

The SVG is computed in Python (so it renders in saved notebooks and static exports as well);
the front end only draws it and reports which ``<g data-id=…>`` was clicked by setting
``selected``. Python observes ``selected`` and does the rest, so tests set ``selected`` directly
instead of clicking.
"""

from __future__ import annotations

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  const draw = () => {
    el.innerHTML = model.get("svg");
    el.classList.add("mwp-clickable");
    for (const node of el.querySelectorAll("g[data-id]")) {
      node.style.cursor = "pointer";
      node.addEventListener("click", () => {
        model.set("selected", node.dataset.id);
        model.save_changes();
      });
    }
  };
  draw();
  model.on("change:svg", draw);
}
export default { render };
"""


class ClickableSvg(anywidget.AnyWidget):
    """Draws ``svg``; clicking a node sets ``selected`` to its ``data-id``."""

    _esm = _ESM
    svg = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
