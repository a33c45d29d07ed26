"""Which revisions of a Work Contract are material (§10.1, MWP-WRK-002).

§10.1: a revised contract requires renewed acceptance when it changes the work materially. The
sandbox's decision, in one place: a member is *material* when it changes what the owner accepted
to do or under which limits it does it, which is every member but the scheduling hints and the
version counter. ``requestedUrgency`` and ``businessImpact`` reorder queues (§11.3) without
changing the work; ``contractVersion`` only numbers the revision. Everything else (goal,
deliverables, acceptance criteria, inputs, dependencies, allowed resources, capabilities,
deadline, retry policy, budget, side-effect risk, execution approval, extensions) is material:
a dependency added to an owned WorkItem changes its inputs and when it can start, so the owner's
acceptance, and the schedule estimate it gave, no longer hold.

A material revision of an owned WorkItem fences the owner: its leases are revoked in the same
Event (``renewedAcceptanceRequired: true``), so the old acceptance no longer counts (a start is
``WORK_LEASE_EXPIRED``) and the Coordinator offers the revised contract again. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NOT_MATERIAL", "material_changes"]

#: The contract members whose change is not material (scheduling hints, the version counter).
NOT_MATERIAL = frozenset({"contractVersion", "requestedUrgency", "businessImpact"})


def material_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The members whose change from ``old`` to ``new`` is material, sorted."""
    names = (set(old) | set(new)) - NOT_MATERIAL
    return sorted(n for n in names if old.get(n) != new.get(n))
