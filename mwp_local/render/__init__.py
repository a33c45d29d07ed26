"""HTML and SVG renderings of sandbox values, as plain strings: no widgets, no kernel.

``html`` (steps, rejections, run summaries, tables), ``reprs`` (the rich reprs of the Sandbox,
Missions, WorkItems, Events, Artifacts), ``svg`` (state machines and DAGs drawn from data),
``timeline`` (the Timeline and the Scheduler panel) and ``provenance`` (the provenance graph's
nodes, edges and inspector). They render everywhere a notebook's output goes (JupyterLab, saved
notebooks, static exports); the widgets in ``mwp_local.notebook`` are built on them.
"""
