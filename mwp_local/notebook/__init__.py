"""Notebook views of the sandbox: widgets and a SQL cell magic.

The drawings they show are ``mwp_local.render``'s plain functions of frozen values; the widgets
(``widgets``: the Stepper and TimeTravel; ``graphs``; ``sql_console``) import ipywidgets and
anywidget only when imported themselves, so that ``import mwp_local`` stays light. Each widget
leaves a static copy of its current state in the output (``static``), so saved notebooks and
HTML exports show it. ``%load_ext mwp_local.notebook`` loads the ``%%mwp_sql`` cell magic and
the rich HTML renderings of ``render.reprs`` (query results included).
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%mwp_sql`` and the rich HTML renderings (``%load_ext mwp_local.notebook``)."""
    from ..render import reprs
    from .magic import register

    register(ipython)
    reprs.register(ipython)
