"""Reducers: how each Event kind changes the Authority's state, one module per area.

Each reducer reads only the Event and the state before it. ``evolve`` has found the row of the
state tables the Event records and checked it against the state (a ``Fold``'s ``step``), so a
reducer applies the row's target and never names a state; replaying a log thereby audits it: an
Event the tables would not allow makes replay fail with ``ReplayError`` instead of folding an
impossible state. Importing this package registers every reducer with ``evolve``.
"""

from . import knowledge, missions, organization, work
from .common import ReplayError

__all__ = ["ReplayError", "knowledge", "missions", "organization", "work"]
