"""Seeded fault schedules, as data.

A ``Schedule`` is everything one trial does besides running its mission: which mission file,
which seed, whether Workers keep their local state in files, and a tuple of ``Fault``s, each
with a kind, the step (or simulated second) it happens at, and its parameters. The same seed
always gives the same schedule. Each kind says how it is applied (``FAULT_KINDS``); kinds whose
mechanism does not exist yet are still scheduled, so that the schedule of a seed does not change
when they arrive, and the runner reports them as not applied.

A quarter of the trials also end in a crash of the whole process (``crash_at_step``, drawn from
its own seeded stream so that the faults of a seed stay what they were): the runner records
every acknowledgement, then stops the Sandbox as ``kill -9`` would and checks what the files
kept (``runner``).
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any

from ..agents.specs import MissionFile


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One kind of fault: its name, how it is applied, and whether the sandbox can yet."""

    name: str
    how: str
    applied: bool = True


def bus_available() -> bool:
    """Whether mission files can turn on the delivery bus (a ``delivery`` field)."""
    return "delivery" in {f.name for f in dataclasses.fields(MissionFile)}


_BUS = bus_available()
FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind("worker_crash", "Sandbox.restart_agent: a new runtime from its file or replay"),
        FaultKind("worker_pause", "a mission-file pause: the Worker goes silent, its leases lapse"),
        FaultKind("clock_jump", "the virtual clock jumps forward; timers expire leases"),
        FaultKind(
            "coordinator_loss", "the Coordinator stops (and may return); a standby takes over"
        ),
        FaultKind("forged_command", "a Command with a broken signature or another Agent's key"),
        FaultKind("stale_command", "a Command with a stale epoch, Lease ID, issuedAt or Action ID"),
        FaultKind("duplicate_command", "an accepted Command sent again, byte for byte"),
        FaultKind("duplicate_delivery", "committed Events delivered again to every agent"),
        FaultKind("reordered_delivery", "the delivery bus reorders, delays, duplicates", _BUS),
        FaultKind("disconnect", "an agent's bus connection drops for a while, then resumes", _BUS),
        FaultKind("group_outage", "the Group service is unreachable for a while (bus)", _BUS),
    )
}
#: The share of trials that end in a crash of the process (``Schedule.crash_at_step``).
CRASH_SHARE = 0.25
#: Kinds applied between steps, at a step number.
STEP_KINDS = (
    "worker_crash",
    "clock_jump",
    "forged_command",
    "stale_command",
    "duplicate_command",
    "duplicate_delivery",
)
#: Kinds applied through the mission file (its faults, Missions or ``[delivery]`` table).
FILE_KINDS = (
    "worker_pause",
    "coordinator_loss",
    "reordered_delivery",
    "disconnect",
    "group_outage",
)


@dataclass(frozen=True, slots=True)
class Fault:
    """One scheduled fault: ``kind`` at step ``at_step`` (or, for mission-file faults, at
    ``params['at_s']`` simulated seconds) with its parameters."""

    kind: str
    at_step: int
    params: dict[str, Any] = field(default_factory=dict)

    def label(self) -> str:
        """A short description for reports."""
        detail = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.kind}@{self.at_step}" + (f"({detail})" if detail else "")


@dataclass(frozen=True, slots=True)
class Schedule:
    """One trial: a mission file, a seed, where Workers keep state, and the faults."""

    seed: int
    mission: str
    worker_files: bool
    faults: tuple[Fault, ...]
    #: The step after which the process crashes (or at the end, if the run finishes first);
    #: None for a trial that closes normally.
    crash_at_step: int | None = None

    def step_faults(self) -> list[Fault]:
        """The faults applied between steps, in order."""
        return sorted((f for f in self.faults if f.kind in STEP_KINDS), key=lambda f: f.at_step)


def workers_of(spec: MissionFile) -> list[str]:
    """The Agents that coordinate nothing: the Workers."""
    coordinators = spec.coordinator_names()
    return [a.name for a in spec.agents if a.name not in coordinators]


def has_standby(spec: MissionFile) -> bool:
    """Whether some root Mission names a standby Coordinator (so losing one can be survived)."""
    return any(m.standby_coordinator for m in spec.roots)


def make_schedule(
    seed: int, mission: str, spec: MissionFile, *, horizon: int = 60, max_faults: int = 6
) -> Schedule:
    """The fault schedule of trial ``seed`` over ``spec`` (loaded from ``mission``)."""
    rng = random.Random(f"mwp-campaign:{seed}")
    workers = workers_of(spec)
    kinds = sorted(FAULT_KINDS)
    if not has_standby(spec):
        kinds.remove("coordinator_loss")
    faults: list[Fault] = []
    for _ in range(rng.randint(2, max_faults)):
        kind = rng.choice(kinds)
        step = rng.randint(1, horizon)
        if kind == "coordinator_loss" and any(f.kind == kind for f in faults):
            continue  # a Mission loses its Coordinator once per trial
        params: dict[str, Any] = {}
        if kind in ("worker_crash", "worker_pause", "disconnect"):
            params["agent"] = rng.choice(workers)
        if kind == "worker_crash":
            params["delete_local_file"] = rng.random() < 0.5
        elif kind == "worker_pause":
            params.update(at_s=rng.randint(0, 3600), for_s=rng.randint(300, 2400))
        elif kind == "clock_jump":
            params["seconds"] = rng.choice((30, 120, 600, 1800, 7200))
        elif kind == "coordinator_loss":
            fails = rng.randint(300, 2400)
            params["fails_after_s"] = fails
            if rng.random() < 0.5:
                params["returns_after_s"] = fails + rng.randint(600, 3600)
        elif kind in ("forged_command", "stale_command"):
            params["variant_seed"] = rng.randrange(1 << 30)
        elif kind in ("duplicate_command", "duplicate_delivery"):
            params["window"] = rng.randint(1, 20)
        elif kind == "reordered_delivery":
            params.update(reorder=rng.choice((0.2, 0.5)), delay=0.2, duplicate=0.2)
        elif kind == "disconnect":
            params.update(at_s=rng.randint(0, 3600), for_s=rng.randint(60, 1800))
        elif kind == "group_outage":
            params.update(
                at_s=rng.randint(0, 3600), for_s=rng.randint(30, 900), grace_s=rng.randint(0, 600)
            )
        faults.append(Fault(kind, step, params))
    crash = random.Random(f"mwp-campaign-crash:{seed}")
    return Schedule(
        seed=seed,
        mission=mission,
        worker_files=rng.random() < 0.25,
        faults=tuple(sorted(faults, key=lambda f: (f.at_step, f.kind))),
        crash_at_step=crash.randint(10, horizon) if crash.random() < CRASH_SHARE else None,
    )
