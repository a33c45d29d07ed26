"""mwp_local: a local sandbox for MissionWeaveProtocol 0.1.

The public API for prototyping Missions and agents in Python (``docs/prototyping.md``)::

    from mwp_local import Sandbox, Scenario, Mission, WorkItem, Agent, WorkRequest
    from mwp_local import Client, Workbench  # hand-signed Commands, as any Principal

Each name is imported on first use (``import mwp_local`` itself loads nothing else), so a
command line tool or a notebook pays only for what it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name → the module defining it (relative to this package).
_PUBLIC = {
    # running a mission file or a Scenario
    "Sandbox": ".drivers.sandbox",
    "RunSummary": ".drivers.reports",
    "MissionFileError": ".drivers.mission_file",
    # Missions written in Python (every key of a mission file is a field)
    "Scenario": ".drivers.scenario",
    "Mission": ".drivers.scenario",
    "WorkItem": ".drivers.scenario",
    "ChildMission": ".drivers.scenario",
    "Agent": ".drivers.scenario",
    "Fault": ".drivers.scenario",
    "Behaviour": ".drivers.scenario",
    # work functions: what real work sees and returns
    "WorkRequest": ".agents.worker.work",
    "InputArtifact": ".agents.worker.work",
    "Deliverable": ".agents.worker.work",
    "Evidence": ".agents.worker.work",
    "Result": ".agents.worker.work",
    "Block": ".agents.worker.work",
    "Fail": ".agents.worker.work",
    # your own agents: subclass a built-in policy, override its hooks
    "WorkerPolicy": ".agents.worker.core",
    "CoordinatorPolicy": ".agents.coordinator.core",
    "MissionOwnerPolicy": ".agents.owner",
    "ReviewerPolicy": ".agents.reviewer",
    "assessment_evidence": ".agents.reviewer",
    # the hooks of each part, as documented Protocols
    "WorkerHooks": ".agents.hooks",
    "CoordinatorHooks": ".agents.hooks",
    "MissionOwnerHooks": ".agents.hooks",
    "ReviewerHooks": ".agents.hooks",
    "Admission": ".agents.worker.admission",
    "Intent": ".agents.base",
    "View": ".agents.base",
    "WorkSpec": ".agents.specs",
    # hand-signed Commands: any Command as any Principal, drawn answers
    "Client": ".client.signing",
    "Workbench": ".client.workbench",
    "Reply": ".client.replies",
}

__all__ = [
    "Admission",
    "Agent",
    "Behaviour",
    "Block",
    "ChildMission",
    "Client",
    "CoordinatorHooks",
    "CoordinatorPolicy",
    "Deliverable",
    "Evidence",
    "Fail",
    "Fault",
    "InputArtifact",
    "Intent",
    "Mission",
    "MissionFileError",
    "MissionOwnerHooks",
    "MissionOwnerPolicy",
    "Reply",
    "Result",
    "ReviewerHooks",
    "ReviewerPolicy",
    "RunSummary",
    "Sandbox",
    "Scenario",
    "View",
    "WorkItem",
    "WorkRequest",
    "WorkSpec",
    "Workbench",
    "WorkerHooks",
    "WorkerPolicy",
    "assessment_evidence",
]

if TYPE_CHECKING:  # the names as type checkers and editors see them
    from .agents.base import Intent, View
    from .agents.coordinator.core import CoordinatorPolicy
    from .agents.hooks import CoordinatorHooks, MissionOwnerHooks, ReviewerHooks, WorkerHooks
    from .agents.owner import MissionOwnerPolicy
    from .agents.reviewer import ReviewerPolicy, assessment_evidence
    from .agents.specs import WorkSpec
    from .agents.worker.admission import Admission
    from .agents.worker.core import WorkerPolicy
    from .agents.worker.work import (
        Block,
        Deliverable,
        Evidence,
        Fail,
        InputArtifact,
        Result,
        WorkRequest,
    )
    from .client.replies import Reply
    from .client.signing import Client
    from .client.workbench import Workbench
    from .drivers.mission_file import MissionFileError
    from .drivers.reports import RunSummary
    from .drivers.sandbox import Sandbox
    from .drivers.scenario import (
        Agent,
        Behaviour,
        ChildMission,
        Fault,
        Mission,
        Scenario,
        WorkItem,
    )


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mwp_local' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next access skips this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
