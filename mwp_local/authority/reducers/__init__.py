"""Reducers: how each Event kind changes the Authority's state, one module per area.

Each reducer reads only the Event and the state before it. WorkItem and Mission moves go through
the state tables again (``common.move``), so replaying a log also audits it: an Event that the
tables would not allow makes replay fail with ``ReplayError`` instead of folding an impossible
state. Importing this package registers every reducer with ``evolve``.
"""

from . import knowledge, missions, organization, work
from .common import ReplayError

__all__ = ["ReplayError", "knowledge", "missions", "organization", "work"]
