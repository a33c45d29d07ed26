"""The Sandbox: one Organization, its Group log, and the agents of a mission file, run either
one action at a time on a virtual clock (``mode="step"``) or in real threads (``"threads"``).

Step mode is deterministic: time is virtual, keys derive from the seed, Ed25519 signatures are
deterministic, and a seeded generator picks which agent acts when several want to; the same seed
gives a byte-identical log. Each step performs one agent action and reports the Command, its
Events or its rejection (code, explanation, rule), and how the affected WorkItem or Mission
changed.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agents.base import Intent
from .agents.coordinator import CoordinatorPolicy
from .agents.naming import mission_id
from .agents.owner import MissionOwnerPolicy
from .agents.runtime import AgentRuntime
from .agents.worker import WorkerPolicy
from .authority import Accepted, AuthorityConfig
from .authority.pipeline import Outcome
from .group_log import GroupLog
from .protocol.jsontext import parse_strict
from .protocol.tables import MissionState
from .protocol.timestamps import format_utc
from .sandbox_dir import init_directory
from .sim.clock import VirtualClock, timestamp
from .sim.mission_file import MissionFile
from .sim.mission_file import load as load_mission_file
from .store.views import sql as run_sql

_TERMINAL = (MissionState.APPROVED, MissionState.CANCELLED, MissionState.FAILED)


@dataclass(frozen=True, slots=True, kw_only=True)
class StepReport:
    """What one step did: who acted, why, the Command, and its Events or its rejection."""

    number: int
    at: str
    agent: str
    kind: str
    why: str
    command: dict[str, Any]
    accepted: bool
    events: tuple[dict[str, Any], ...] = ()
    code: str | None = None
    explanation: str | None = None
    rule: str | None = None
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> str:
        """One line for a person."""
        if self.accepted:
            kinds = ", ".join(e["kind"] for e in self.events) or "(idempotent retry)"
            return f"#{self.number} {self.at} {self.agent}: {self.kind} → {kinds}"
        return (
            f"#{self.number} {self.at} {self.agent}: {self.kind} ✘ {self.code}: {self.explanation}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSummary:
    """The end of a run: Missions and their states, WorkItems by state, counts and times."""

    steps: int
    finished: bool
    missions: dict[str, str]
    work_items: dict[str, int]
    events: int
    rejections: dict[str, int]
    simulated_seconds: float
    wall_seconds: float

    def lines(self) -> list[str]:
        """A printable summary."""
        out = [
            f"{'Finished' if self.finished else 'Stopped'} after {self.steps} steps "
            f"({self.simulated_seconds:.0f} s simulated, {self.wall_seconds:.2f} s wall)"
        ]
        out += [f"  Mission {m.rsplit(':', 1)[-1]}: {s}" for m, s in sorted(self.missions.items())]
        out.append(
            "  WorkItems: " + ", ".join(f"{k} {v}" for k, v in sorted(self.work_items.items()))
        )
        out.append(
            f"  Events: {self.events}; rejections: "
            + (", ".join(f"{k} {v}" for k, v in sorted(self.rejections.items())) or "none")
        )
        return out


class Sandbox:
    """A mission file running against a real Group log in ``directory``."""

    def __init__(
        self,
        directory: Path | str,
        mission: MissionFile | Path | str,
        *,
        seed: int | None = None,
        mode: str = "step",
        config: AuthorityConfig | None = None,
    ) -> None:
        if mode not in ("step", "threads"):
            raise ValueError("mode is 'step' or 'threads'")
        self.directory = Path(directory)
        self.spec = mission if isinstance(mission, MissionFile) else load_mission_file(mission)
        self.seed = self.spec.seed if seed is None else seed
        self.mode = mode
        self.clock = VirtualClock(self.spec.start_us)
        self.rng = random.Random(self.seed)
        agents = {
            a.name: {"capabilities": list(a.capabilities), "max_concurrency": a.max_concurrency}
            for a in self.spec.agents
        }
        self.log: GroupLog = init_directory(
            self.directory,
            seed=self.seed,
            now=timestamp(self.spec.start_us),
            agents=agents,
            humans=self.spec.humans,
        )
        if config is not None:
            self.log.authority.config = config
        self.runtimes: list[AgentRuntime] = self._runtimes()
        self.deliver([parse_strict(e.document) for e in self.log.store.events()])
        self.steps = 0
        self.history: list[StepReport] = []
        self._wall = 0.0

    # ------------------------------------------------------------------ set-up

    def _runtimes(self) -> list[AgentRuntime]:
        org = self.log.org
        coordinators = {m.coordinator for m in self.spec.missions}
        runtimes = []
        for human in self.spec.humans:
            owned = [m for m in self.spec.missions if m.owner == human]
            runtimes.append(
                AgentRuntime(org, org.get(human), MissionOwnerPolicy(owned, self.spec.start_us))
            )
        durations = {
            f"urn:mwp-local:work:{m.id}:{w.id}": w.duration_s
            for m in self.spec.missions
            for w in m.work
        }
        for agent in self.spec.agents:
            member = org.get(agent.name)
            if agent.name in coordinators:
                led = [m for m in self.spec.missions if m.coordinator == agent.name]
                policy: Any = CoordinatorPolicy(led, self.spec.start_us)
            else:
                policy = WorkerPolicy(
                    capabilities=dict(agent.capabilities),
                    max_concurrency=agent.max_concurrency,
                    behaviour=agent.behaviour,
                    rng=random.Random(f"{self.seed}:{agent.name}"),
                    durations=durations,
                )
            runtimes.append(AgentRuntime(org, member, policy))
        return sorted(runtimes, key=lambda r: r.member.id)

    # ------------------------------------------------------------------ delivery

    def deliver(self, events: list[dict[str, Any]]) -> None:
        """Deliver committed Events to every agent (in order; faults come with the bus)."""
        for runtime in self.runtimes:
            runtime.deliver(events)

    def _store_blobs(self, blobs: dict[str, bytes]) -> None:
        from .artifacts.blobs import BlobStore

        store = BlobStore(self.directory / "blobs")
        for expected, content in blobs.items():
            ref = store.put(content)
            if ref.sha256 != expected:  # a Worker bug, never silently accepted
                raise RuntimeError(f"blob hash mismatch: {expected} != {ref.sha256}")

    # ------------------------------------------------------------------ step mode

    def finished(self) -> bool:
        """Whether every Mission of the mission file has reached a terminal state."""
        state = self.log.state
        return all(
            (m := state.missions.get(mission_id(spec.id))) is not None and m.state in _TERMINAL
            for spec in self.spec.missions
        )

    def _tick(self) -> None:
        for outcome in self.log.tick(timestamp(self.clock.now_us())):
            self.deliver(list(outcome.event_documents))

    def step(self) -> StepReport | None:
        """Perform one agent action (advancing virtual time as needed); None when done."""
        started = time.perf_counter()
        try:
            while not self.finished():
                now = self.clock.now_us()
                self._tick()
                ready = [(r, i) for r in self.runtimes if (i := r.intents(now))]
                if ready:
                    runtime, intents = ready[self.rng.randrange(len(ready))]
                    return self._perform(runtime, intents[0], now)
                wakeups = [w for r in self.runtimes if (w := r.next_wakeup(now)) is not None]
                wakeups += [e for e in self.log.state.active_leases.values() if e > now]
                future = [w for w in wakeups if w > now]
                if not future:
                    return None
                self.clock.advance_to(min(future))
            return None
        finally:
            self._wall += time.perf_counter() - started

    def _perform(self, runtime: AgentRuntime, intent: Intent, now: int) -> StepReport:
        at = format_utc(now)
        before = self._aggregate_of(intent)
        if intent.blobs:
            self._store_blobs(intent.blobs)
        data = runtime.command(intent, at)
        outcome = self.log.submit(data, timestamp(now))
        if isinstance(outcome, Accepted):
            self.deliver(list(outcome.event_documents))
        runtime.outcome(intent, outcome, now)
        self.steps += 1
        report = self._report(runtime, intent, data, outcome, at, before)
        self.history.append(report)
        return report

    def _aggregate_of(self, intent: Intent) -> dict[str, Any]:
        state = self.log.state
        wid = intent.payload.get("workItemId")
        if isinstance(wid, str) and wid in state.work_items:
            item = state.work_items[wid]
            return {
                "workItem": wid,
                "state": str(item.state),
                "revision": item.revision,
                "owner": item.owner["agentId"] if item.owner else None,
                "ownershipEpoch": item.ownership_epoch,
                "executionLease": item.execution_lease_id,
            }
        if intent.group in state.groups:
            mission = state.missions[state.groups[intent.group].mission_id]
            return {
                "mission": mission.mission_id,
                "state": str(mission.state),
                "revision": mission.revision,
            }
        return {}

    def _report(
        self,
        runtime: AgentRuntime,
        intent: Intent,
        data: bytes,
        outcome: Outcome,
        at: str,
        before: dict[str, Any],
    ) -> StepReport:
        common = {
            "number": self.steps,
            "at": at,
            "agent": runtime.name,
            "kind": intent.kind,
            "why": intent.why,
            "command": parse_strict(data),
            "before": before,
            "after": self._aggregate_of(intent),
        }
        if isinstance(outcome, Accepted):
            return StepReport(accepted=True, events=tuple(outcome.event_documents), **common)
        return StepReport(
            accepted=False,
            code=outcome.error.code.value,
            explanation=outcome.error.explanation,
            rule=outcome.error.rule,
            **common,
        )

    def run(
        self,
        *,
        max_steps: int = 100_000,
        until: Callable[[Sandbox], bool] | None = None,
        progress: Callable[[int, StepReport], None] | None = None,
        timeout_s: float = 300.0,
        scale: float = 600.0,
    ) -> RunSummary:
        """Run until every Mission is terminal, ``until`` holds, or ``max_steps`` (step mode) /
        ``timeout_s`` real seconds (threads mode, where ``scale`` simulated seconds pass per
        real second)."""
        if self.mode == "threads":
            return self._run_threads(timeout_s, scale)
        while self.steps < max_steps:
            if until is not None and until(self):
                break
            report = self.step()
            if report is None:
                break
            if progress is not None:
                progress(self.steps, report)
        return self.summary()

    def _run_threads(self, timeout_s: float, scale: float) -> RunSummary:
        from .sim.clock import ScaledClock
        from .sim.threads import ThreadedRun

        started = time.perf_counter()
        clock = ScaledClock(start_us=self.clock.now_us(), scale=scale)
        runner = ThreadedRun(self.log, self.runtimes, clock, self.finished, self._store_blobs)
        try:
            runner.run(timeout_s)
        finally:
            self.steps += runner.actions
            self.clock.advance_to(clock.now_us())
            self._wall += time.perf_counter() - started
        return self.summary()

    # ------------------------------------------------------------------ reading

    def summary(self) -> RunSummary:
        """Where the run stands."""
        state = self.log.state
        items: dict[str, int] = {}
        for item in state.work_items.values():
            items[str(item.state)] = items.get(str(item.state), 0) + 1
        rejections: dict[str, int] = {}
        for r in self.log.store.rejections():
            rejections[r.code] = rejections.get(r.code, 0) + 1
        return RunSummary(
            steps=self.steps,
            finished=self.finished(),
            missions={m.mission_id: str(m.state) for m in state.missions.values()},
            work_items=items,
            events=self.log.store.event_count(),
            rejections=rejections,
            simulated_seconds=(self.clock.now_us() - self.spec.start_us) / 1e6,
            wall_seconds=self._wall,
        )

    def sql(self, query: str, params: dict[str, Any] | None = None) -> Any:
        """Query the log's views (read-only); returns a pyarrow Table."""
        return run_sql(self.log.store, query, params)  # type: ignore[arg-type]

    def close(self) -> None:
        """Close the log."""
        self.log.store.close()
