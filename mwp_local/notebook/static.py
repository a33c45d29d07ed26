"""The static copy every widget leaves in the output, right after its live view.

A widget's output is only a reference to a model in the kernel: a saved notebook, a static
viewer or ``nbconvert --to html`` has no such model, and JupyterLab shows "model not found"
without falling back to the output's other formats. So each widget displays, after itself, an
HTML output (``render.html.static_html``) with a display ID, and replaces it whenever the widget
changes (``update``): the notebook file always holds a drawing of the widget's current state.
While the live widget is drawn, CSS hides the copy. Imports IPython only when displaying.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..render.html import static_html


class StaticCopy:
    """The static HTML copy of one widget: ``render()`` draws the widget's current state."""

    def __init__(self, view: str, render: Callable[[], str]) -> None:
        self.view = view
        self.render = render
        self.handles: list[Any] = []

    def html(self) -> str:
        """The copy as it would be displayed now."""
        return static_html(self.render(), self.view)

    def display(self, widget: Any) -> None:
        """Display ``widget`` (marked ``mwp-live``) and its static copy right after it."""
        from IPython.display import HTML, display

        widget.add_class("mwp-live")
        display(widget)  # type: ignore[no-untyped-call]
        self.handles.append(display(HTML(self.html()), display_id=True))  # type: ignore[no-untyped-call]

    def update(self) -> None:
        """Replace every displayed copy with the current state (a no-op before display)."""
        if not self.handles:
            return
        from IPython.display import HTML

        html = HTML(self.html())  # type: ignore[no-untyped-call]
        for handle in self.handles:
            if handle is not None:
                handle.update(html)
