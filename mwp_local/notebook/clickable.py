"""Clickable drawings for notebooks: two tiny anywidgets (imported here and only here).

The drawing is computed in Python (so the static copy beside it shows the same thing in saved
notebooks and exports); the front end only draws it and reports which element with a
``data-id`` was clicked by setting ``selected``. Python observes ``selected`` and does the rest,
so tests set ``selected`` directly instead of clicking.

``ClickableSvg`` draws a graph in a viewport that pans (drag) and zooms (the −/+/fit/1:1 buttons,
or Ctrl/⌘ and the wheel); its nodes are ``<g data-id=…>``. ``ClickableRows`` draws an HTML table
whose rows are ``<tr data-id=…>`` (the Stepper's history) and keeps the selected row in view.
"""

from __future__ import annotations

import anywidget
import traitlets

_SVG_ESM = """
function render({ model, el }) {
  el.classList.add("mwp-clickable");
  const bar = document.createElement("div");
  bar.className = "mwp-zoombar";
  bar.style.cssText = "display:flex;gap:4px;align-items:center;margin:2px 0;font-size:12px";
  const view = document.createElement("div");
  view.className = "mwp-viewport";
  view.style.cssText = "overflow:hidden;position:relative;cursor:grab;max-width:100%;" +
    "border:1px solid var(--jp-border-color2,#ddd);touch-action:none";
  const stage = document.createElement("div");
  stage.className = "mwp-stage";
  stage.style.cssText = "transform-origin:0 0;width:max-content";
  view.append(stage);
  el.append(bar, view);
  let scale = 1, tx = 0, ty = 0, fitted = false;
  const apply = () => {
    stage.style.transform = `translate(${tx}px,${ty}px) scale(${scale})`;
    el.dataset.zoom = scale.toFixed(3);
  };
  const size = () => {
    const svg = stage.querySelector("svg");
    return svg ? [svg.width.baseVal.value || 1, svg.height.baseVal.value || 1] : [1, 1];
  };
  const zoom = (factor, cx, cy) => {
    const next = Math.min(4, Math.max(0.05, scale * factor));
    const f = next / scale;
    tx = cx - (cx - tx) * f;
    ty = cy - (cy - ty) * f;
    scale = next;
    apply();
  };
  const fit = () => {
    const [w, h] = size();
    scale = Math.min(1, (view.clientWidth || w) / w, (view.clientHeight || h) / h);
    tx = 0; ty = 0; apply();
  };
  const button = (label, title, action) => {
    const b = document.createElement("button");
    b.textContent = label; b.title = title; b.className = "mwp-zoom jupyter-button";
    b.addEventListener("click", action);
    bar.append(b);
  };
  button("−", "zoom out", () => zoom(1 / 1.25, view.clientWidth / 2, view.clientHeight / 2));
  button("+", "zoom in", () => zoom(1.25, view.clientWidth / 2, view.clientHeight / 2));
  button("fit", "show the whole graph", fit);
  button("1:1", "actual size", () => { scale = 1; tx = 0; ty = 0; apply(); });
  const hint = document.createElement("span");
  hint.textContent = "drag to pan · Ctrl/⌘ + wheel to zoom · click a node";
  hint.style.opacity = "0.85";
  bar.append(hint);
  let drag = null, moved = false;
  view.addEventListener("pointerdown", (e) => {
    drag = [e.clientX, e.clientY, tx, ty]; moved = false; view.style.cursor = "grabbing";
  });
  view.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag[0], dy = e.clientY - drag[1];
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    if (moved) { tx = drag[2] + dx; ty = drag[3] + dy; apply(); }
  });
  const stop = () => { drag = null; view.style.cursor = "grab"; };
  view.addEventListener("pointerup", stop);
  view.addEventListener("pointerleave", stop);
  view.addEventListener("wheel", (e) => {
    if (!(e.ctrlKey || e.metaKey)) return;
    e.preventDefault();
    const box = view.getBoundingClientRect();
    zoom(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - box.left, e.clientY - box.top);
  }, { passive: false });
  const fitOnce = (tries) => {
    // the first time it is on screen: shrink a wide drawing to the width, not below half size
    if (fitted || tries > 120) return;
    if (!view.clientWidth) { requestAnimationFrame(() => fitOnce(tries + 1)); return; }
    const [w] = size();
    scale = Math.max(0.5, Math.min(1, view.clientWidth / w));
    fitted = true;
    apply();
  };
  const draw = () => {
    stage.innerHTML = model.get("svg");
    const [, h] = size();
    const drawing = stage.querySelector("svg") !== null;
    view.style.height = drawing ? Math.min(h + 4, model.get("max_height")) + "px" : "auto";
    bar.style.display = drawing ? "flex" : "none";
    if (drawing) fitOnce(0);
    for (const node of stage.querySelectorAll("g[data-id]")) {
      node.style.cursor = "pointer";
      node.addEventListener("click", () => {
        if (moved) return;
        model.set("selected", node.dataset.id);
        model.save_changes();
      });
    }
    apply();
  };
  draw();
  model.on("change:svg", draw);
}
export default { render };
"""

_ROWS_ESM = """
function render({ model, el }) {
  const draw = () => {
    el.innerHTML = model.get("html");
    for (const row of el.querySelectorAll("[data-id]")) {
      row.addEventListener("click", () => {
        model.set("selected", row.dataset.id);
        model.save_changes();
      });
    }
    const chosen = el.querySelector("tr.selected");
    const box = chosen && chosen.closest(".mwp-history");
    if (box) {
      box.scrollTop = Math.max(0, chosen.offsetTop - box.clientHeight / 2);
    }
  };
  draw();
  model.on("change:html", draw);
}
export default { render };
"""


class ClickableSvg(anywidget.AnyWidget):
    """Draws ``svg`` in a pan-and-zoom viewport; clicking a node sets ``selected`` to its
    ``data-id``."""

    _esm = _SVG_ESM
    svg = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
    #: The viewport's greatest height in pixels (a taller drawing pans).
    max_height = traitlets.Int(560).tag(sync=True)


class ClickableRows(anywidget.AnyWidget):
    """Draws ``html``; clicking an element with a ``data-id`` sets ``selected`` to it."""

    _esm = _ROWS_ESM
    html = traitlets.Unicode("").tag(sync=True)
    selected = traitlets.Unicode("").tag(sync=True)
