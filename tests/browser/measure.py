"""What the browser tests measure in the page, as JavaScript run by Playwright: the contrast of
every visible piece of text against what is behind it, and the geometry of a drawn graph.

Contrast follows WCAG 2.1: relative luminance of sRGB colours, ``(L1 + 0.05) / (L2 + 0.05)``.
The background of a piece of HTML text is found by compositing every (possibly translucent)
background from the page down to the element; SVG text sits on the fill of the shape drawn
before it in its group, or on the HTML background of its ``<svg>``.
"""

from __future__ import annotations

#: ``(root selectors) => [{text, fg, bg, ratio}]`` for every visible text inside them.
CONTRAST_JS = """
(selectors) => {
  const parse = (c) => {
    const m = c && c.match(/rgba?\\(([^)]+)\\)/);
    if (!m) return null;
    const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const [r, g, b] = c.slice(0, 3).map(v => {
      v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const background = (el) => {
    const chain = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) chain.push(e);
    let colour = [255, 255, 255, 1];
    for (const e of chain.reverse()) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) colour = over(c, colour);
    }
    return colour;
  };
  const visible = (el) => {
    if (!el.getClientRects().length) return false;
    const s = getComputedStyle(el);
    return s.visibility !== "hidden" && s.display !== "none" && Number(s.opacity) > 0;
  };
  const found = [];
  const seen = new Set();
  for (const selector of selectors) {
    for (const root of document.querySelectorAll(selector)) {
      for (const el of [root, ...root.querySelectorAll("*")]) {
        if (seen.has(el)) continue;
        seen.add(el);
        const own = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join("").trim();
        if (!own || !visible(el)) continue;
        let fg, bg;
        if (el instanceof SVGElement) {
          const svg = el.ownerSVGElement;
          fg = parse(getComputedStyle(el).fill);
          bg = background(svg.parentElement);
          const shape = el.parentElement && el.parentElement.querySelector("rect");
          if (shape && shape !== el) {
            const f = parse(getComputedStyle(shape).fill);
            if (f && f[3] > 0) bg = over(f, bg);
          }
        } else {
          bg = background(el);
          fg = parse(getComputedStyle(el).color);
        }
        if (!fg) continue;
        fg = over(fg, bg);
        found.push({ text: own.slice(0, 40), tag: el.tagName, fg, bg,
                     ratio: Math.round(ratio(fg, bg) * 100) / 100 });
      }
    }
  }
  return found;
}
"""

#: ``(graph root element) => {boxes: {id: [x, y, w, h]}, edges: [{from, to, samples, head}]}``:
#: boxes from each node's ``<rect>`` bounding box, each edge sampled every 2 units along its
#: path as the browser draws it, and its arrowhead's bounding box (SVG user units).
GRAPH_JS = """
(root) => {
  const svg = root.querySelector("svg");
  const shift = (el) => {
    const m = el.closest("g.graph").transform.baseVal.consolidate();
    return m ? [m.matrix.e, m.matrix.f] : [0, 0];
  };
  const boxes = {};
  for (const node of svg.querySelectorAll("g.node")) {
    const b = node.querySelector("rect").getBBox();
    const [dx, dy] = shift(node);
    boxes[node.dataset.id] = [b.x + dx, b.y + dy, b.width, b.height];
  }
  const edges = [];
  for (const edge of svg.querySelectorAll("g.edge")) {
    const line = edge.querySelector("path.edge-line");
    const head = edge.querySelector("path.arrowhead");
    const [dx, dy] = shift(edge);
    const length = line.getTotalLength();
    const samples = [];
    for (let at = 0; at <= length; at += 2) {
      const p = line.getPointAtLength(at);
      samples.push([p.x + dx, p.y + dy]);
    }
    const h = head ? head.getBBox() : null;
    edges.push({ from: edge.dataset.from, to: edge.dataset.to, samples,
                 head: h ? [h.x + dx, h.y + dy, h.width, h.height] : null,
                 headFill: head ? getComputedStyle(head).fill : null });
  }
  return { boxes, edges };
}
"""
