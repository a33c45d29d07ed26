"""Command handlers, one module per area; importing this package registers them all.

Each handler is a generator: it reads the state through a ``Context``, decides the row its
Command drives in the state tables (``decide``: the row's fences, source states and guards,
which cover ownership, leases, role and policy), checks its own payload, and yields ``Draft``
Events whose kind and recorded states come from the row; the pipeline signs and folds each one
before the handler continues.
"""

from ..registry import HANDLERS, CommandSpec
from . import (
    execution,
    group,
    knowledge,
    membership,
    messages,
    mission,
    offers,
    organization,
    work,
)

__all__ = [
    "HANDLERS",
    "CommandSpec",
    "execution",
    "group",
    "knowledge",
    "membership",
    "messages",
    "mission",
    "offers",
    "organization",
    "work",
]
