"""Notebook views of the sandbox: HTML and SVG renderings, widgets and a SQL cell magic.

The renderings (``html``, ``svg``) are plain functions of frozen values and import nothing from
Jupyter; the widgets (``widgets``) import ipywidgets lazily, when first used, so that
``import mwp_local`` stays light. ``%load_ext mwp_local.notebook`` loads the ``%%mwp_sql`` cell
magic and the rich HTML renderings of ``reprs``.
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%mwp_sql`` and the rich HTML renderings (``%load_ext mwp_local.notebook``)."""
    from ..render import reprs
    from .magic import register

    register(ipython)
    reprs.register(ipython)
