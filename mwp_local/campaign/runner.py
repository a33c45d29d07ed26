"""Run fault campaigns: one trial per seed, each a mission file run step by step with its fault
schedule applied, then the invariant checker over the directory it left.

Besides the log invariants, each trial checks what only the driver knows ("trial checks"):
every forged or stale Command was refused with its section-19 code and changed nothing in the
log, every duplicate Command was answered from its receipt and changed nothing, and every
restarted Worker rebuilt the queues its stored state held.

A crash trial (``Schedule.crash_at_step``) records every acknowledgement in ``acks.jsonl`` as it
is made (under write-behind, with its bound), then, after its crash step or at the end of the
run, stops the Sandbox as ``kill -9`` would (``Sandbox.crash``: the staged tail and the Workers'
uncommitted state are dropped) and checks the directory from its files, so that
``acknowledged_present`` has acknowledgements to check. It writes no external-service record
(that record lives in the process and dies with it), and the faults still pending never happen.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TextIO

from ..agents.specs import FaultSpec, MissionFile
from ..authority import Accepted, Rejected
from ..drivers.clock import timestamp
from ..drivers.mission_file import load as load_mission_file
from ..drivers.sandbox import Sandbox
from ..protocol.jsontext import parse_strict
from ..store.duckdb_log import DuckDBLogStore
from ..store.sandbox_dir import LOG_FILE, open_directory
from .acks import PREFIX, record_acknowledgements
from .checker import check_directory
from .delivery_faults import delivery_config
from .forgery import FORGED, STALE, Forger
from .logdir import ACKS_FILE, EXTERNAL_FILE
from .registry import INVARIANTS, Tally
from .schedule import FAULT_KINDS, FILE_KINDS, Fault, Schedule, make_schedule

TRIAL_CHECKS = {
    "faults_refused": "every forged or stale Command was refused with the section-19 code of "
    "the one thing that was wrong, and the log did not change",
    "duplicates_idempotent": "every duplicate Command was answered from its original receipt "
    "and appended nothing",
    "restarts_rebuild": "every restarted Worker kept its stored queues equal to the ones its "
    "Events rebuild",
}


@dataclass
class TrialResult:
    """What one trial did and found (plain data, so it crosses process boundaries)."""

    seed: int
    mission: str
    directory: str
    finished: bool
    steps: int
    events: int
    wall_s: float
    #: kind → [scheduled, applied]
    faults: dict[str, list[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: What the delivery bus did (frames duplicated, reordered, delayed, disconnects, outages …).
    bus: dict[str, int] = field(default_factory=dict)
    #: invariant → (checks, violations, examples)
    tallies: dict[str, tuple[int, int, list[str]]] = field(default_factory=dict)
    #: A crash trial's ``at_step``, ``acknowledged`` and ``lost`` (acknowledged Commands still
    #: staged when it crashed); empty for a trial that closed normally.
    crash: dict[str, int] = field(default_factory=dict)

    @property
    def violations(self) -> int:
        """Violations of every invariant and trial check."""
        return sum(v for _, v, _ in self.tallies.values())


def prepare(schedule: Schedule, spec: MissionFile) -> MissionFile:
    """The mission file with the schedule's mission-file faults: pauses, Coordinator loss, and
    the delivery bus's faults (replacing the file's own ``[delivery]`` table when there are
    any)."""
    pauses = [
        FaultSpec(
            agent=f.params["agent"], kind="pause", at_s=f.params["at_s"], for_s=f.params["for_s"]
        )
        for f in schedule.faults
        if f.kind == "worker_pause"
    ]
    missions = list(spec.missions)
    for f in schedule.faults:
        if f.kind != "coordinator_loss":
            continue
        index = next(
            i for i, m in enumerate(missions) if m.parent is None and m.standby_coordinator
        )
        missions[index] = dataclasses.replace(
            missions[index],
            coordinator_fails_after_s=f.params["fails_after_s"],
            coordinator_returns_after_s=f.params.get("returns_after_s"),
        )
    changes: dict[str, Any] = {"faults": (*spec.faults, *pauses), "missions": tuple(missions)}
    delivery = delivery_config(schedule, spec.start_us)
    if delivery is not None:
        changes["delivery"] = delivery
    return dataclasses.replace(spec, **changes)


class Trial:
    """One seed's run: the Sandbox, its schedule, and the trial checks' tallies."""

    def __init__(self, schedule: Schedule, directory: Path, spec: MissionFile) -> None:
        self.schedule = schedule
        self.directory = directory
        self.sandbox = Sandbox(
            directory,
            prepare(schedule, spec),
            seed=schedule.seed,
            worker_files=schedule.worker_files,
        )
        self.checks = {name: Tally() for name in TRIAL_CHECKS}
        self.applied: dict[str, list[int]] = {}
        self.notes: list[str] = []
        self.crash: dict[str, int] = {}
        self._finished = False
        self._acks: TextIO | None = None
        if schedule.crash_at_step is not None:
            self._acks = (directory / ACKS_FILE).open("w", encoding="utf-8")
            record_acknowledgements(self.sandbox.log, self._acknowledge, write_behind=True)

    def _acknowledge(self, line: str) -> None:
        """Keep one acknowledgement where a crash of this process cannot take it back."""
        assert self._acks is not None
        self._acks.write(line.removeprefix(PREFIX))
        self._acks.flush()
        self.crash["acknowledged"] = self.crash.get("acknowledged", 0) + 1

    def run(self, max_steps: int) -> None:
        """Run the mission, applying each step fault when its step comes (the rest at the end)."""
        for fault in self.schedule.faults:
            counts = self.applied.setdefault(fault.kind, [0, 0])
            counts[0] += 1
            if fault.kind in FILE_KINDS and FAULT_KINDS[fault.kind].applied:
                counts[1] += 1  # applied through the mission file
        pending = self.schedule.step_faults()
        sb = self.sandbox
        crash_at = self.schedule.crash_at_step
        with sb.write_behind():
            while sb.steps < max_steps and (crash_at is None or sb.steps < crash_at):
                while pending and pending[0].at_step <= sb.steps:
                    self.apply(pending.pop(0))
                if sb.step() is None:
                    break
            if crash_at is not None:
                self._crash()  # inside the block: nothing staged is written on the way out
                return
        for fault in pending:
            self.apply(fault)

    def _crash(self) -> None:
        sb = self.sandbox
        self._finished = sb.finished() and not sb.stuck_agents()  # in memory: reads no file
        self.crash.update(at_step=sb.steps, lost=sb.crash())
        self.crash.setdefault("acknowledged", 0)
        assert self._acks is not None
        self._acks.close()

    def apply(self, fault: Fault) -> None:
        """Apply one step fault, if the sandbox can apply its kind yet."""
        if not FAULT_KINDS[fault.kind].applied:
            return
        applier: Callable[[Fault], bool] = getattr(self, f"_{fault.kind}")
        if applier(fault):
            self.applied[fault.kind][1] += 1

    # ------------------------------------------------------------------ appliers

    def _worker_crash(self, fault: Fault) -> bool:
        report = self.sandbox.restart_agent(
            fault.params["agent"], delete_local_file=fault.params["delete_local_file"]
        )
        self.checks["restarts_rebuild"].check(
            report.stored_queues_matched,
            f"seed {self.schedule.seed}: {report.agent}'s stored queues differ from the rebuilt",
        )
        return True

    def _clock_jump(self, fault: Fault) -> bool:
        clock = self.sandbox.clock
        clock.advance_to(clock.now_us() + fault.params["seconds"] * 1_000_000)
        return True

    def _duplicate_delivery(self, fault: Fault) -> bool:
        texts = [e.document for e in self.sandbox.log.store.events()]
        window = texts[-fault.params["window"] :]
        self.sandbox.deliver(window)
        return bool(window)

    def _log_mark(self) -> tuple[int, bytes, int]:
        store = self.sandbox.log.store
        position, head = store.chain_head()
        return position, head, sum(1 for _ in store.receipts())

    def _duplicate_command(self, fault: Fault) -> bool:
        receipts = list(self.sandbox.log.store.receipts())[-fault.params["window"] :]
        if not receipts:
            return False
        receipt = random.Random(self.schedule.seed).choice(receipts)
        before = self._log_mark()
        outcome = self.sandbox.log.submit(receipt.command_document, self._now())
        self.checks["duplicates_idempotent"].check(
            isinstance(outcome, Accepted) and outcome.duplicate and self._log_mark() == before,
            f"seed {self.schedule.seed}: resending {receipt.kind} {receipt.action_id} gave "
            f"{outcome!r:.200}",
        )
        return True

    def _forged_command(self, fault: Fault) -> bool:
        return self._forge(fault, FORGED)

    def _stale_command(self, fault: Fault) -> bool:
        return self._forge(fault, STALE)

    def _forge(self, fault: Fault, variants: tuple[str, ...]) -> bool:
        sb = self.sandbox
        templates = [parse_strict(r.command_document) for r in sb.log.store.receipts()]
        rng = random.Random(fault.params["variant_seed"])
        forger = Forger(sb.log.org, sb.log.state, templates, sb.clock.now_us(), rng)
        forgery = forger.make(variants)
        if forgery is None:
            self.notes.append(f"{fault.label()}: no Command to forge from yet")
            return False
        before = self._log_mark()
        outcome = sb.log.submit(forgery.data, self._now())
        code = outcome.error.code if isinstance(outcome, Rejected) else None
        self.checks["faults_refused"].check(
            code is forgery.expected and self._log_mark()[:2] == before[:2],
            f"seed {self.schedule.seed}: {forgery.variant} by {forgery.actor} was "
            f"{'refused with ' + code.value if code else 'ACCEPTED'}, expected "
            f"{forgery.expected.value}"
            + ("" if self._log_mark()[:2] == before[:2] else "; the log changed"),
        )
        self.applied.setdefault(f"{fault.kind}/{forgery.variant}", [0, 0])[1] += 1
        return True

    def _now(self) -> Any:
        return timestamp(self.sandbox.clock.now_us())

    # ------------------------------------------------------------------ end

    def finish(self) -> TrialResult:
        """Persist the external service's record, close, check the directory."""
        sb = self.sandbox
        bus = bus_stats(sb)
        if self.schedule.crash_at_step is not None:
            finished, steps = self._finished, sb.steps
            with DuckDBLogStore(self.directory / LOG_FILE, read_only=True) as kept:
                events = kept.event_count()
                behind = kept.projections_behind
            if behind:
                # The crash left projection rows unwritten (the store's marker): the next open
                # of the directory re-renders them, as a user's reopening would, before the
                # invariants read the tables (docs/durability.md).
                open_directory(self.directory).close()
        else:
            with (self.directory / EXTERNAL_FILE).open("w", encoding="utf-8") as out:
                for call in sb.external.calls:
                    out.write(json.dumps(dataclasses.asdict(call), sort_keys=True) + "\n")
            summary = sb.summary()
            finished, steps, events = summary.finished, summary.steps, summary.events
            sb.close()
        report = check_directory(self.directory)
        tallies = {n: (t.checks, t.violations, t.examples) for n, t in report.tallies.items()}
        tallies.update({n: (t.checks, t.violations, t.examples) for n, t in self.checks.items()})
        return TrialResult(
            seed=self.schedule.seed,
            mission=self.schedule.mission,
            directory=str(self.directory),
            finished=finished,
            steps=steps,
            events=events,
            wall_s=0.0,
            faults=self.applied,
            notes=self.notes,
            bus=bus,
            tallies=tallies,
            crash=self.crash,
        )


def bus_stats(sandbox: Sandbox) -> dict[str, int]:
    """The delivery bus's counters (empty when the trial ran without the bus)."""
    driver = getattr(sandbox, "delivery", None)
    stats = getattr(getattr(driver, "bus", None), "stats", None)
    if stats is None:
        return {}
    counters = vars(stats) if hasattr(stats, "__dict__") else {}
    out = {k: v for k, v in counters.items() if isinstance(v, int)}
    outages = getattr(driver, "outages", [])
    out["outages"] = len(outages)
    out["offline_buffered"] = sum(len(getattr(o, "buffered", ())) for o in outages)
    return out


def run_trial(seed: int, mission: str, directory: Path, *, max_steps: int = 600) -> TrialResult:
    """Run the trial of ``seed`` over ``mission`` in the new directory ``directory``."""
    started = time.perf_counter()
    spec = load_mission_file(mission)
    trial = Trial(make_schedule(seed, mission, spec), directory, spec)
    trial.run(max_steps)
    result = trial.finish()
    result.wall_s = time.perf_counter() - started
    return result


def _trial_job(args: tuple[int, str, str, bool]) -> TrialResult:
    seed, mission, root, keep = args
    directory = Path(root) / f"seed-{seed}"
    result = run_trial(seed, mission, directory)
    if result.violations == 0 and not keep:
        shutil.rmtree(directory, ignore_errors=True)
    return result


def run_campaign(
    seeds: Iterable[int],
    missions: list[str],
    *,
    jobs: int = 1,
    keep: Path | None = None,
    progress: Callable[[TrialResult], None] | None = None,
) -> list[TrialResult]:
    """Run one trial per seed (mission ``missions[seed % len]``), ``jobs`` at a time. Trial
    directories are kept under ``keep`` (all of them) or, in a temporary directory, only those
    with violations."""
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="mwp-campaign-"))
    root.mkdir(parents=True, exist_ok=True)
    work = [(s, missions[s % len(missions)], str(root), keep is not None) for s in seeds]
    results: list[TrialResult] = []
    if jobs <= 1:
        for job in work:
            results.append(_trial_job(job))
            if progress:
                progress(results[-1])
    else:
        with ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
            for result in pool.map(_trial_job, work):
                results.append(result)
                if progress:
                    progress(result)
    if keep is None and not any(r.violations for r in results):
        shutil.rmtree(root, ignore_errors=True)
    return results


def meanings() -> dict[str, str]:
    """Every invariant and trial check, with what it means."""
    from . import work_invariants  # noqa: F401

    opens = {"log_opens": "the directory's log opens read-only (whole rows, no position gap)"}
    return {**opens, **{n: i.meaning for n, i in INVARIANTS.items()}, **TRIAL_CHECKS}
