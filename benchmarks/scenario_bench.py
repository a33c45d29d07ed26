"""Figure 6: scenario wall times — the §22 proof of concept in step mode, and a large mission
(8 Groups, 16 Workers, thousands of WorkItems) in step and threads modes.

The large mission is generated here (``large_mission``), not kept as a sample file: eight
Missions, each its own Group, each a design WorkItem, four lanes of implement/test stages and an
integration; sixteen Workers with overlapping capabilities shared by all Groups, and two
Coordinators. ``work_per_mission`` sets the size: the full run uses 250 (2,000 WorkItems) in
step mode, which costs a few milliseconds per agent action, and 125 (1,000) in threads mode,
which runs on a scaled clock and is bound by the two cores (see ``FULL``).

Figures 6b and 6c are agent actions per CPU-second of the process (``time.process_time``,
every thread's, not wall time, which on this shared machine says more about the hour than the
code), with their sizes (WorkItems, agent actions, Events) in the notes. Issue 25 sets them at
3 × the figure before it (``BEFORE_ACTIONS_PER_CPU_S``). 6d is the growth: the CPU cost of an
action in step mode at the full size against the same mission at a tenth of it (2,000 against
200 WorkItems), at most 1.2 times. 6a keeps its former absolute target, retired (see README).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import Entry, Measure, Target

from mwp_local.agents.specs import MissionFile
from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox

START = "2026-07-15T09:00:00Z"
GROUPS = 8
WORKERS = 16
#: Parallel lanes of work per Mission (see ``large_mission``).
LANES = 4


@dataclass(frozen=True, slots=True)
class Sizes:
    """How big the large mission is and how often each scenario runs."""

    #: WorkItems per Mission in step mode ...
    work_per_mission: int
    #: ... and in threads mode.
    threads_work_per_mission: int
    groups: int
    workers: int
    poc_reps: int
    large_reps: int
    threads_timeout_s: float
    #: Simulated seconds per real second in threads mode.
    threads_scale: float
    #: WorkItems per Mission of the small run figure 6d compares the step-mode cost with.
    growth_work_per_mission: int


#: The full run's size: 8 × 250 = 2,000 WorkItems in step mode and in threads mode. Threads
#: mode runs at 200 simulated seconds per real second: the Missions' critical path (design, 62
#: stages of a lane, integration) is ~7 simulated hours, so ~2 minutes is the least it can take;
#: the 18 agent threads on two cores (~100 actions/s) need a little more than that.
FULL = Sizes(
    work_per_mission=250,
    threads_work_per_mission=250,
    groups=GROUPS,
    workers=WORKERS,
    poc_reps=3,
    large_reps=1,
    threads_timeout_s=900.0,
    threads_scale=200.0,
    growth_work_per_mission=25,
)
#: The smoke run only checks that the scenarios execute: two Groups, four Workers.
QUICK = Sizes(
    work_per_mission=4,
    threads_work_per_mission=4,
    groups=2,
    workers=4,
    poc_reps=1,
    large_reps=1,
    threads_timeout_s=120.0,
    threads_scale=600.0,
    growth_work_per_mission=2,
)

_CAPABILITIES = (
    "mwp.software.analyse@1.0.0",
    "mwp.software.implement@1.2.0",
    "mwp.software.test@1.0.0",
    "mwp.software.integrate@1.0.0",
)


def large_mission(
    work_per_mission: int, groups: int = GROUPS, workers: int = WORKERS
) -> MissionFile:
    """``groups`` Missions of about ``work_per_mission`` WorkItems each, ``workers`` shared
    Workers (eight Groups and sixteen Workers unless told otherwise).

    Each Mission is a design WorkItem, then ``LANES`` parallel lanes of stages (implement, then
    test, then implement, ...: stage ``k`` of a lane depends on stage ``k - 1`` of the same
    lane) and one integration depending on the last stage of every lane. So the work ready at
    any moment stays near what the Workers can hold (32 lanes for 48 slots), as a Coordinator
    pacing its offers would keep it; offering a thousand ready WorkItems at once mostly
    measures declines and re-offers.
    """
    lanes = max(1, min(LANES, work_per_mission - 2))
    stages = max(1, (work_per_mission - 2) // lanes)
    agents: list[dict[str, Any]] = [
        {"name": f"coord-{c}", "capabilities": ["mwp.coordination@1.0.0"], "max_concurrency": 8}
        for c in ("a", "b")
    ]
    for n in range(workers):
        # each Worker has two neighbouring capabilities, so every capability has eight Workers
        caps = [_CAPABILITIES[n % 4], _CAPABILITIES[(n + 1) % 4]]
        agents.append({"name": f"worker-{n + 1}", "capabilities": caps, "max_concurrency": 3})
    small = {"financial": 40, "tool_calls": 40, "compute_seconds": 30_000}
    work: list[dict[str, Any]] = [
        {
            "id": "design",
            "goal": "Design the product line",
            "capability": _CAPABILITIES[0],
            "duration": "20m",
            "budget": small,
        }
    ]
    for stage in range(1, stages + 1):
        testing = stage % 2 == 0
        work.append(
            {
                "id": f"s{stage}",
                "count": lanes,
                "goal": f"{'Test' if testing else 'Implement'} step {stage} of lane {{n}}",
                "capability": _CAPABILITIES[2] if testing else "mwp.software.implement@1.0.0",
                "depends_on": ["design"] if stage == 1 else [f"s{stage - 1}-{{n}}"],
                "duration": "5m",
                "budget": small,
            }
        )
    work.append(
        {
            "id": "integrate",
            "goal": "Integrate every lane",
            "capability": _CAPABILITIES[3],
            "depends_on": [f"s{stages}-*"],
            "duration": "30m",
            "budget": small,
        }
    )
    missions = []
    for g in range(groups):
        budget = {"financial": 100 * work_per_mission, "tool_calls": 100 * work_per_mission}
        budget["compute_seconds"] = 60_000 * work_per_mission
        missions.append(
            {
                "id": f"m{g + 1}",
                "objective": f"Deliver product line {g + 1}",
                "owner": "erin" if g % 2 == 0 else "frank",
                "coordinator": "coord-a" if g < groups // 2 else "coord-b",
                "deadline": "30d",
                "starts_after": f"{5 * g}m",
                "budget": budget,
                "work": work,
            }
        )
    raw = {
        "name": "large",
        "sandbox": {"seed": 11, "start": START},
        "agents": agents,
        "missions": missions,
    }
    return parse(raw, name="large")


#: Figures 6b and 6c before issue 25 (``make bench`` at de70e48: ~100-140 agent actions per
#: CPU-second at 2,000 WorkItems in either mode); its target is three times this.
BEFORE_ACTIONS_PER_CPU_S = 120.0


@dataclass(frozen=True, slots=True)
class LargeRun:
    """What one run of the large mission did and cost."""

    actions: int
    #: WorkItems the mission plans.
    work_items: int
    #: CPU seconds of the process (every thread) inside ``Sandbox.run``.
    cpu_s: float
    wall_s: float
    notes: str

    @property
    def actions_per_cpu_s(self) -> float:
        """Agent actions per CPU-second."""
        return self.actions / self.cpu_s

    @property
    def cpu_ms_per_action(self) -> float:
        """CPU milliseconds per agent action."""
        return 1000 * self.cpu_s / self.actions


def _run_large(sizes: Sizes, mode: str, per_mission: int | None = None) -> LargeRun:
    """One run of the large mission: its CPU and wall time, and what it did (for the notes)."""
    if per_mission is None:
        per_mission = sizes.work_per_mission if mode == "step" else sizes.threads_work_per_mission
    spec = large_mission(per_mission, sizes.groups, sizes.workers)
    with tempfile.TemporaryDirectory(prefix=f"mwp-bench-large-{mode}-") as tmp:
        sandbox = Sandbox(Path(tmp) / "sbx", spec, mode=mode, worker_files=True)
        began, cpu = time.perf_counter(), time.process_time()
        summary = sandbox.run(
            max_steps=10_000_000, timeout_s=sizes.threads_timeout_s, scale=sizes.threads_scale
        )
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - began
        items = len(sandbox.log.state.work_items)
        sandbox.close()
    states: dict[str, int] = {}
    for state in summary.missions.values():
        states[state] = states.get(state, 0) + 1
    missions = ", ".join(f"{n} {state}" for state, n in sorted(states.items()))
    planned = sum(len(m.work) for m in spec.missions)
    notes = (
        f"{sizes.groups} Groups, {sizes.workers} Workers, {planned} WorkItems planned, {items} "
        f"authorized, {summary.steps} agent actions in {cpu:.1f} CPU-s and {wall:.1f} s of wall "
        f"time, {summary.events} Events, {summary.simulated_seconds:.0f} simulated seconds; "
        f"Missions: {missions}{'' if summary.finished else '; NOT finished within the limit'}"
    )
    return LargeRun(
        actions=max(1, summary.steps), work_items=planned, cpu_s=cpu, wall_s=wall, notes=notes
    )


def _poc_once(work: Path) -> tuple[float | None, str]:
    """Wall time of ``mwp-local poc`` in step mode in a fresh interpreter and what it said:
    (None, why) if the command does not exist (yet) or broke; a run whose report has failing
    checks (exit status 1) is still timed, and the note says so."""
    target = work / "poc"
    shutil.rmtree(target, ignore_errors=True)
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mwp_local.cli", "poc", "--dir", str(target), "--mode", "step"],
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - began
    if done.returncode == 0:
        return wall, "every check passed"
    if done.returncode == 1 and "check" in done.stdout.lower():
        return wall, "the report has FAILING checks (exit status 1)"
    tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
    return None, f"exit status {done.returncode}: {tail[0][:200]}"


def figure_6(sizes: Sizes) -> list[Entry]:
    """6a: the POC in step mode; 6b/6c: the large mission in step and threads modes."""
    entries: list[Entry] = []
    with tempfile.TemporaryDirectory(prefix="mwp-bench-poc-") as tmp:
        runs = [_poc_once(Path(tmp)) for _ in range(sizes.poc_reps)]
    broken = [why for wall, why in runs if wall is None]
    if broken:
        entries.append(
            Entry(
                figure="6a",
                name="POC wall time, step mode",
                unit="s",
                pending=f"pending: `mwp-local poc --mode step` did not run ({broken[0]})",
            )
        )
    else:
        entries.append(
            Entry(
                figure="6a",
                name="POC wall time, step mode",
                unit="s",
                values=[wall for wall, _ in runs if wall is not None],
                # its former absolute target (≤ 2 s) is retired: a wall time on this shared
                # machine says more about the hour than the code (issue 25)
                notes="`python -m mwp_local.cli poc --mode step` in a fresh interpreter, "
                f"start-up and import included; {runs[-1][1]}.",
            )
        )
    target = Target(
        text=f"≥ 3 × {BEFORE_ACTIONS_PER_CPU_S:g}/CPU-s (the figure before issue 25)",
        at_least=3 * BEFORE_ACTIONS_PER_CPU_S,
    )
    step_runs: list[LargeRun] = []
    for figure, mode in (("6b", "step"), ("6c", "threads")):
        runs = [_run_large(sizes, mode) for _ in range(sizes.large_reps)]
        if mode == "step":
            step_runs = runs
        notes = runs[-1].notes
        if mode == "threads":
            notes += (
                f"; threads mode runs on a scaled clock ({sizes.threads_scale:g} simulated "
                "seconds per second): its "
                "wall time follows the simulated time, and under CPU starvation Coordinator "
                "leases can lapse (then the MissionOwner re-appoints, or cancels)"
            )
        entries.append(
            Entry(
                figure=figure,
                name=f"large mission, {mode} mode: agent actions per CPU-second",
                unit="actions/CPU-s",
                values=[r.actions_per_cpu_s for r in runs],
                target=target,
                parameters={
                    "work_items": runs[-1].work_items,
                    "wall_s": [round(r.wall_s, 1) for r in runs],
                },
                notes=notes,
            )
        )
    small = [
        _run_large(sizes, "step", sizes.growth_work_per_mission) for _ in range(sizes.large_reps)
    ]
    small_items, large_items = small[-1].work_items, step_runs[-1].work_items
    entries.append(
        Entry(
            figure="6d",
            name=f"CPU per agent action, step mode, {large_items:,} WorkItems",
            unit="ms/action",
            values=[r.cpu_ms_per_action for r in step_runs],
            ceiling=Measure(
                f"CPU per agent action at {small_items:,} WorkItems",
                "ms/action",
                tuple(r.cpu_ms_per_action for r in small),
            ),
            ratio_meaning=f"cost at {large_items:,} WorkItems / cost at {small_items:,}",
            target=Target(text=f"≤ 1.2 × the cost at {small_items:,}", ratio_at_most=1.2),
            parameters={"work_items": large_items, "reference_work_items": small_items},
            notes=f"The large mission of 6b against the same mission at {small_items:,} "
            f"WorkItems ({small[-1].notes}).",
        )
    )
    return entries
