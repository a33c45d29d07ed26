"""What a Mission is made of, as plain values: Agents, Missions, WorkItems, faults, the whole
mission file.

These are the specs the agents' policies read (the Coordinator plans from its ``MissionSpec``,
the MissionOwner follows its script, a Worker behaves as its ``Behaviour`` says) and the drivers
run. They are built from a TOML mission file by ``drivers.mission_file`` (which checks them and
reports mistakes with their place); nothing here parses or decides protocol questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from ..delivery.config import DeliveryConfig
from ..protocol.timestamps import format_utc


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """How a simulated Worker performs: speed, chance of failing or blocking, checkpoints;
    as a reviewer, the chance that its assessment finds the deliverable lacking."""

    speed: float = 1.0
    failure_rate: float = 0.0
    block_rate: float = 0.0
    jitter: float = 0.2
    reject_rate: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpec:
    """An Agent of the Organization."""

    name: str
    capabilities: tuple[tuple[str, str], ...]
    max_concurrency: int = 1
    behaviour: Behaviour = field(default_factory=Behaviour)


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultSpec:
    """A scheduled fault: Agent ``agent`` stops acting at ``at_s`` seconds after the start, for
    ``for_s`` seconds (``pause``) or for good (``crash``). Events still reach it."""

    agent: str
    kind: str
    at_s: int
    for_s: int | None = None


#: A WorkItem's budget when none is given: a mission file's ``[[missions.work]]`` without
#: ``budget`` and a hand-built ``WorkSpec`` alike (§12: every Work Contract has a budget).
DEFAULT_WORK_BUDGET: Mapping[str, float] = MappingProxyType({"financial": 10.0})


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkSpec:
    """A WorkItem the Coordinator will plan, with its Work Contract's essentials.

    ``budget`` maps §12 dimensions to limits (default ``DEFAULT_WORK_BUDGET``, as in a mission
    file); an empty one is a ``ValueError`` here, not a refused contract later.
    """

    id: str
    goal: str
    capability: tuple[str, str]
    depends_on: tuple[str, ...] = ()
    discovered_after: tuple[str, ...] = ()
    duration_s: int = 600
    urgency: str = "normal"
    budget: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WORK_BUDGET))
    risk: str = "none"
    approval: str = "not_required"
    checkpoints: int = 1
    max_attempts: int = 2
    deadline_s: int | None = None
    #: An Agent whose reviewer assessment the Coordinator's review needs (§13.2 step 3).
    reviewed_by: str | None = None
    #: An essential ambiguity left in the first Work Contract (MWP-WRK-002) ...
    ambiguous: str | None = None
    #: ... and the answer the Coordinator gives in the corrected contract.
    clarification: str | None = None
    #: The child Mission this WorkItem is promoted to (§14), if any.
    child: MissionSpec | None = None
    #: The media type of the deliverable the Work Contract requires (review accepts only an
    #: Artifact of this type, §13.2 step 1).
    media_type: str = "text/markdown"

    def __post_init__(self) -> None:
        if not self.budget:
            raise ValueError(
                f"WorkSpec {self.id!r}: budget is empty, and a Work Contract without a budget "
                "is refused (WORK_CONTRACT_INCOMPLETE, §12); give one, e.g. "
                "budget={'financial': 10.0}, or leave budget out for the default "
                f"{dict(DEFAULT_WORK_BUDGET)}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionSpec:
    """A Mission: objective, owner, Coordinator, budget, deadline, WorkItems, script.

    A child Mission (``parent`` set) is owned by its parent's Coordinator (``owner`` names that
    Agent) and created by it when it promotes the parent WorkItem.
    """

    id: str
    objective: str
    owner: str
    coordinator: str
    deadline_s: int
    budget: dict[str, float]
    work: tuple[WorkSpec, ...]
    approval: str = "approve"
    starts_after_s: int = 0
    #: ``(parent Mission id, parent WorkItem id)`` of a child Mission.
    parent: tuple[str, str] | None = None
    child_failure_policy: str = "block"
    #: The Coordinator stops renewing its lease (and acting) this long after the start ...
    coordinator_fails_after_s: int | None = None
    #: ... and, if set, comes back this long after the start, acting once on what it knew.
    coordinator_returns_after_s: int | None = None
    #: The Agent the MissionOwner appoints when the Coordinator's lease lapses (§7.2).
    standby_coordinator: str | None = None
    #: The MissionOwner cancels the Mission this long after the start.
    cancel_after_s: int | None = None

    def work_spec(self, work_id: str) -> WorkSpec | None:
        """The WorkItem ``work_id`` of this Mission's file entry."""
        return next((w for w in self.work if w.id == work_id), None)


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionFile:
    """A whole mission file. ``missions`` lists root and child Missions, parents first."""

    #: The ``name`` key ("mission" without one; never the file's name, so the same Missions
    #: from a file or from Python get the same Organization ID).
    name: str
    seed: int
    start_us: int
    humans: tuple[str, ...]
    agents: tuple[AgentSpec, ...]
    missions: tuple[MissionSpec, ...]
    faults: tuple[FaultSpec, ...] = ()
    source: str = ""
    #: The ``[delivery]`` table: the delivery bus with its faults (None: direct delivery).
    delivery: DeliveryConfig | None = None
    #: SHA-256 of the file's content (``sha256:<hex>`` over the checked specification,
    #: ``mission_file.content_hash``), which with the seed and the name decides the sandbox's
    #: Organization ID.
    content_hash: str = ""
    #: ``[sandbox] organization``: an Organization ID the file names itself (None: derived).
    organization: str | None = None

    @property
    def start(self) -> str:
        """The start instant as a timestamp."""
        return format_utc(self.start_us)

    @property
    def roots(self) -> tuple[MissionSpec, ...]:
        """The root Missions (created by their human MissionOwners)."""
        return tuple(m for m in self.missions if m.parent is None)

    def coordinator_names(self) -> set[str]:
        """Every Agent that coordinates, or stands by to coordinate, some Mission."""
        return {m.coordinator for m in self.missions} | {
            m.standby_coordinator for m in self.missions if m.standby_coordinator
        }

    def coordinated_by(self, agent: str) -> list[MissionSpec]:
        """The Missions ``agent`` coordinates or stands by for, in file order."""
        return [m for m in self.missions if agent in (m.coordinator, m.standby_coordinator)]

    def faults_of(self, agent: str) -> list[FaultSpec]:
        """The faults scheduled for ``agent``."""
        return [f for f in self.faults if f.agent == agent]
