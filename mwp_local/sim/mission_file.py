"""Mission files (TOML): the Organization's Agents, the Missions, their WorkItems and scripts.

A mission file is declarative: it says *what* the Missions are (objectives, budgets, WorkItems
with contracts and dependencies), *who* the Agents are (capabilities, concurrency, behaviour
models), and what the humans will do (approve, request changes once). The agents decide *how*;
the log records what happened. See ``sample_missions/*.toml`` for annotated examples.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..protocol.timestamps import format_utc, parse_timestamp

_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?")


class MissionFileError(ValueError):
    """A mission file that cannot be understood, with the place and the reason."""


def duration_seconds(value: Any, where: str) -> int:
    """``90``, ``"45s"``, ``"30m"``, ``"2h"``, ``"1d2h"`` → seconds."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    m = _DURATION.fullmatch(str(value)) if isinstance(value, str) and value else None
    if m is None or not any(m.groups()):
        raise MissionFileError(f"{where}: {value!r} is not a duration like 45s, 30m, 2h or 1d")
    d, h, mi, s = (int(x or 0) for x in m.groups())
    return ((d * 24 + h) * 60 + mi) * 60 + s


def capability(text: str, where: str) -> tuple[str, str]:
    """``"id@1.2.0"`` → ``("id", "1.2.0")``."""
    if "@" not in text:
        raise MissionFileError(f"{where}: capability {text!r} needs a version, like id@1.0.0")
    cap, version = text.split("@", 1)
    return cap, version


@dataclass(frozen=True, slots=True, kw_only=True)
class Behaviour:
    """How a simulated Worker performs: speed, chance of failing or blocking, checkpoints."""

    speed: float = 1.0
    failure_rate: float = 0.0
    block_rate: float = 0.0
    jitter: float = 0.2


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpec:
    """An Agent of the Organization."""

    name: str
    capabilities: tuple[tuple[str, str], ...]
    max_concurrency: int = 1
    behaviour: Behaviour = field(default_factory=Behaviour)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkSpec:
    """A WorkItem the Coordinator will plan, with its Work Contract's essentials."""

    id: str
    goal: str
    capability: tuple[str, str]
    depends_on: tuple[str, ...] = ()
    discovered_after: tuple[str, ...] = ()
    duration_s: int = 600
    urgency: str = "normal"
    budget: dict[str, float] = field(default_factory=dict)
    risk: str = "none"
    approval: str = "not_required"
    checkpoints: int = 1
    max_attempts: int = 2
    deadline_s: int | None = None
    reviewed_by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionSpec:
    """A root Mission: objective, owner, Coordinator, budget, deadline, WorkItems, script."""

    id: str
    objective: str
    owner: str
    coordinator: str
    deadline_s: int
    budget: dict[str, float]
    work: tuple[WorkSpec, ...]
    approval: str = "approve"
    starts_after_s: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class MissionFile:
    """A whole mission file."""

    name: str
    seed: int
    start_us: int
    humans: tuple[str, ...]
    agents: tuple[AgentSpec, ...]
    missions: tuple[MissionSpec, ...]
    source: str = ""

    @property
    def start(self) -> str:
        """The start instant as a timestamp."""
        return format_utc(self.start_us)


def _get(table: dict[str, Any], key: str, where: str, kind: type | tuple[type, ...] = str) -> Any:
    if key not in table:
        raise MissionFileError(f"{where}: '{key}' is required")
    value = table[key]
    if not isinstance(value, kind):
        raise MissionFileError(f"{where}: '{key}' has the wrong type ({type(value).__name__})")
    return value


def _work(raw: dict[str, Any], where: str) -> WorkSpec:
    wid = _get(raw, "id", where)
    w = f"{where} work '{wid}'"
    return WorkSpec(
        id=wid,
        goal=_get(raw, "goal", w),
        capability=capability(_get(raw, "capability", w), w),
        depends_on=tuple(raw.get("depends_on", ())),
        discovered_after=tuple(raw.get("discovered_after", ())),
        duration_s=duration_seconds(raw.get("duration", "10m"), w),
        urgency=raw.get("urgency", "normal"),
        budget={k: float(v) for k, v in raw.get("budget", {"financial": 10}).items()},
        risk=raw.get("risk", "none"),
        approval=raw.get("approval", "not_required"),
        checkpoints=int(raw.get("checkpoints", 1)),
        max_attempts=int(raw.get("max_attempts", 2)),
        deadline_s=duration_seconds(raw["deadline"], w) if "deadline" in raw else None,
        reviewed_by=raw.get("reviewed_by"),
    )


def load(path: Path | str) -> MissionFile:
    """Read and check a mission file."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MissionFileError(f"{path}: not valid TOML: {exc}") from None
    return parse(raw, name=path.stem, source=str(path))


def parse(raw: dict[str, Any], *, name: str = "mission", source: str = "") -> MissionFile:
    """Check a parsed mission file and build its specification."""
    sandbox = raw.get("sandbox", {})
    start = parse_timestamp(sandbox.get("start", "2026-07-15T09:00:00Z")).epoch_micros
    agents = []
    for i, a in enumerate(raw.get("agents", [])):
        where = f"agents[{i}]"
        agents.append(
            AgentSpec(
                name=_get(a, "name", where),
                capabilities=tuple(capability(c, where) for c in a.get("capabilities", ())),
                max_concurrency=int(a.get("max_concurrency", 1)),
                behaviour=Behaviour(**a.get("behaviour", {})),
            )
        )
    names = {a.name for a in agents}
    missions = []
    humans: set[str] = set()
    for i, m in enumerate(raw.get("missions", [])):
        where = f"missions[{i}]"
        mid = _get(m, "id", where)
        works = tuple(_work(w, f"mission '{mid}'") for w in m.get("work", []))
        ids = {w.id for w in works}
        for w in works:
            for dep in (*w.depends_on, *w.discovered_after):
                if dep not in ids:
                    raise MissionFileError(f"mission '{mid}' work '{w.id}': unknown '{dep}'")
        coordinator = _get(m, "coordinator", where)
        if coordinator not in names:
            raise MissionFileError(f"{where}: coordinator '{coordinator}' is not an Agent")
        owner = m.get("owner", "mission-owner")
        humans.add(owner)
        missions.append(
            MissionSpec(
                id=mid,
                objective=_get(m, "objective", where),
                owner=owner,
                coordinator=coordinator,
                deadline_s=duration_seconds(m.get("deadline", "7d"), where),
                budget={k: float(v) for k, v in m.get("budget", {"financial": 1000}).items()},
                work=works,
                approval=m.get("approval", "approve"),
                starts_after_s=duration_seconds(m.get("starts_after", 0), where),
            )
        )
    if not missions:
        raise MissionFileError("a mission file needs at least one [[missions]] table")
    return MissionFile(
        name=raw.get("name", name),
        seed=int(sandbox.get("seed", 0)),
        start_us=start,
        humans=tuple(sorted(humans)),
        agents=tuple(agents),
        missions=tuple(missions),
        source=source,
    )
