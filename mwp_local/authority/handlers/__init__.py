"""Command handlers, one module per area; importing this package registers them all.

Each handler is a generator: it reads the state through a ``Context``, checks what the pipeline's
generic fences do not (ownership, leases, table rows, role, budget, policy), and yields ``Draft``
Events; the pipeline signs and folds each one before the handler continues.
"""

from ..registry import HANDLERS, CommandSpec
from . import execution, knowledge, membership, messages, mission, offers, organization, work

__all__ = [
    "HANDLERS",
    "CommandSpec",
    "execution",
    "knowledge",
    "membership",
    "messages",
    "mission",
    "offers",
    "organization",
    "work",
]
