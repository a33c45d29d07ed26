"""The §22 proof-of-concept scenario: ``sample_missions/poc.toml`` in a Sandbox, plus probes.

``run_scenario(directory)`` runs the mission file (two concurrent software-development Missions,
a shared Worker, the failure suite of §22 in its ``[delivery]`` and ``[[faults]]`` tables),
restarts the shared Worker from nothing part-way through (its queues rebuilt by replay), and
submits the scripted probes of ``mwp_local.poc.probes`` through the real Group log. It records,
beside the log, what the log itself cannot hold: the frames the delivery bus handed each agent,
the signed Group Snapshots it served, the Commands Workers buffered offline (as they signed
them), the external service's record of calls, and each agent's final Cursors and replica. It
records no verdicts: ``mwp_local.poc.checks`` decides everything from the directory.

Modes: in step mode the whole run is deterministic (same seed, same log). In threads mode the
first ``STEP_PREFIX_S`` virtual seconds still run step by step (the restart, the preemption and
the offer probes happen at reproducible points), up to ``OUTAGE_LEAD_S`` before the first
Group-service outage, and the rest in real threads. Both modes deliver
every Event through the Sandbox's delivery bus, so the frames, snapshots, offline buffers and
replicas recorded are those of the live agents (in threads mode the Group-service outage falls in
the threaded part: the agent threads go offline, buffer and reconcile).

Files (``DIR/poc/``)::

    frames.jsonl         one line per frame a session received: agent, incarnation, time, type,
                         and the Event's Group, sequence and ID (or the ERROR document)
    snapshots.jsonl      every signed Group Snapshot the bus made, with its body
    offline.jsonl        each Command buffered offline (binding, original signed Command) and
                         each piece of work stopped at the outage
    replicas.jsonl       per agent at the end: Cursors, duplicates dropped, WorkItem states seen
    restart.jsonl        the restarted Worker: its queues before and after the rebuild
    probes.jsonl         each probe: name, the Command text submitted, and when
    external-calls.jsonl the simulated external service's record (campaign format, in DIR/)
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..agents.naming import agent_id
from ..agents.runtime import AgentRuntime
from ..agents.specs import MissionFile
from ..drivers.bus import BusDriver
from ..drivers.mission_file import load as load_mission_file
from ..drivers.sandbox import Sandbox
from .probes import run_probes, step_probes

SAMPLE = Path(__file__).resolve().parents[2] / "sample_missions" / "poc.toml"
POC_DIR = "poc"
#: Virtual seconds after the start at which the shared Worker is restarted from nothing.
RESTART_AFTER_S = 50 * 60
#: Virtual seconds that run step by step in both modes before ``mode`` takes over: the restart,
#: the shared Worker's preemption and the offer probes happen at reproducible points.
STEP_PREFIX_S = 85 * 60
#: Threads mode: the threads take over no earlier than this long before the first Group-service
#: outage, so the outage finds the work step mode has active there (reversible work to buffer,
#: an irreversible review to stop) however loaded the machine is; going offline, buffering and
#: reconciling are then done by the live agent threads.
OUTAGE_LEAD_S = 5 * 60
RESTARTED_WORKER = "dev-shared"
#: Threads mode: simulated seconds per real second after the step prefix, and the real seconds
#: the threaded part may take (generous: a loaded machine only makes it slower).
THREADS_SCALE = 600.0
THREADS_TIMEOUT_S = 600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioRun:
    """Where a run went and how long it took (wall time, for the benchmark)."""

    directory: Path
    mode: str
    seed: int
    steps: int
    finished: bool
    wall_seconds: float


class Recorder:
    """Appends JSON lines under ``DIR/poc/`` (kept in memory, written at the end)."""

    def __init__(self, directory: Path) -> None:
        self.root = directory / POC_DIR
        self.lines: dict[str, list[str]] = {}

    def add(self, name: str, record: dict[str, Any]) -> None:
        """Queue one record for ``name.jsonl``."""
        text = orjson.dumps(record, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
        lines = self.lines.get(name)
        if lines is None:
            lines = self.lines[name] = []
        lines.append(text.decode("utf-8"))

    def write(self) -> None:
        """Write every file (empty files for names without records are not created)."""
        self.root.mkdir(parents=True, exist_ok=True)
        for name, lines in sorted(self.lines.items()):
            (self.root / f"{name}.jsonl").write_text("".join(f"{x}\n" for x in lines))


#: A bus client's ``receive`` (``delivery.session.Receiver``).
Receive = Callable[[dict[str, Any], int, str | None], list[dict[str, Any]]]


def _record_frames(driver: BusDriver | None, rec: Recorder) -> None:
    """Wrap each bus client's ``receive`` so every frame it is handed is recorded first."""
    if driver is None:
        return
    for client in driver.clients.values():
        if getattr(client, "_poc_recorded", False):
            continue
        inner: Receive = client.receive
        agent = client.agent_id
        incarnation = client.runtime.incarnation

        def receive(
            frame: dict[str, Any],
            now_us: int,
            event_text: str | None = None,
            inner: Receive = inner,
            agent: str = agent,
            incarnation: int = incarnation,
        ) -> list[dict[str, Any]]:
            kind = frame["frameType"]
            row: dict[str, Any] = {
                "agent": agent,
                "incarnation": incarnation,
                "atUs": now_us,
                "frameType": kind,
            }
            if kind == "EVENT":
                event = frame["event"]
                row["eventId"] = event["eventId"]
                row["groupId"] = event.get("groupId")
                row["sequence"] = event.get("sequence")
            elif kind == "ERROR":
                row["error"] = frame["error"]
            rec.add("frames", row)
            return inner(frame, now_us, event_text)

        client.receive = receive  # type: ignore[method-assign]
        client._poc_recorded = True  # type: ignore[attr-defined]


def _dump_restart(sb: Sandbox, rec: Recorder, name: str) -> None:
    report = sb.restart_agent(name, delete_local_file=True)
    _record_frames(sb.delivery, rec)

    def rows(queues: dict[str, tuple[Any, ...]]) -> dict[str, list[Any]]:
        return {
            g: [
                dataclasses.asdict(r)
                if dataclasses.is_dataclass(r) and not isinstance(r, type)
                else r
                for r in q
            ]
            for g, q in sorted(queues.items())
        }

    rec.add(
        "restart",
        {
            "agent": agent_id(name),
            "atUs": sb.clock.now_us(),
            "sessionEpoch": report.session_epoch,
            "queuesBefore": rows(report.queues_before),
            "queuesRebuilt": rows(report.queues_rebuilt),
            "redeliveredEvents": report.redelivered_events,
        },
    )


def _dump_end(
    sb: Sandbox, rec: Recorder, driver: BusDriver | None, replicas: list[AgentRuntime]
) -> None:
    """The bus's snapshots and offline records, each agent's replica, the external calls."""
    if driver is not None:
        for snapshot_id, bundle in sorted(driver.bus.snapshots.items()):
            rec.add(
                "snapshots",
                {"snapshotId": snapshot_id, "snapshot": bundle.snapshot, "body": bundle.body},
            )
        for record in driver.outages:
            for b in record.buffered:
                rec.add(
                    "offline",
                    {
                        "type": "buffered",
                        "agent": agent_id(b.agent),
                        "workItemId": b.work_item_id,
                        "binding": b.binding,
                        "original": b.original,
                        "outageAtUs": record.outage.at_us,
                        "outageUntilUs": record.outage.until_us,
                    },
                )
            for s in record.stopped:
                rec.add(
                    "offline",
                    {
                        "type": "stopped",
                        "agent": agent_id(s.agent),
                        "workItemId": s.work_item_id,
                        "why": s.why,
                        "outageAtUs": record.outage.at_us,
                        "outageUntilUs": record.outage.until_us,
                    },
                )
    for runtime in replicas:
        state = runtime.replica
        rec.add(
            "replicas",
            {
                "agent": runtime.member.id,
                "incarnation": runtime.incarnation,
                "cursors": dict(sorted(runtime.inbox.cursors.items())),
                "gaps": runtime.inbox.gaps(),
                "duplicatesDropped": runtime.inbox.duplicates,
                # The Context Packages a late joiner started from (package ID, Events fetched
                # through the gate), and the ones the gate refused.
                "seeded": [list(s) for s in runtime.seeded],
                "seedRefused": [list(s) for s in runtime.seed_refused],
                "workItems": {
                    wid: {"state": str(item.state), "revision": item.revision}
                    for wid, item in sorted(state.work_items.items())
                },
            },
        )
    lines = [json.dumps(dataclasses.asdict(c), sort_keys=True) for c in sb.external.calls]
    (sb.directory / "external-calls.jsonl").write_text("".join(f"{x}\n" for x in lines))


def _prefix_end(spec: MissionFile) -> int:
    """When threads take over in threads mode: after ``STEP_PREFIX_S``, and no earlier than
    ``OUTAGE_LEAD_S`` before the first Group-service outage."""
    end = spec.start_us + STEP_PREFIX_S * 1_000_000
    outages = spec.delivery.outages if spec.delivery is not None else ()
    if outages:
        end = max(end, min(o.at_us for o in outages) - OUTAGE_LEAD_S * 1_000_000)
    return end


def run_scenario(
    directory: Path | str,
    *,
    mode: str = "step",
    seed: int | None = None,
    mission: Path | str = SAMPLE,
    max_steps: int = 20_000,
    probes: bool = True,
) -> ScenarioRun:
    """Run the proof of concept into a new ``directory`` and record its side files.

    In both modes the first ``STEP_PREFIX_S`` virtual seconds run step by step (the shared Worker
    is restarted ``RESTART_AFTER_S`` in); the rest runs in ``mode``.
    """
    started = time.perf_counter()
    directory = Path(directory)
    spec = load_mission_file(mission)
    sb = Sandbox(directory, spec, seed=seed, mode=mode, worker_files=False)
    rec = Recorder(directory)
    _record_frames(sb.delivery, rec)
    restart_at = spec.start_us + RESTART_AFTER_S * 1_000_000
    worker = RESTARTED_WORKER if any(a.name == RESTARTED_WORKER for a in spec.agents) else None
    fired: set[str] = set()
    with sb.write_behind():
        while worker is not None and sb.clock.now_us() < restart_at and sb.steps < max_steps:
            if sb.step() is None:
                break
            if probes:
                step_probes(sb, rec, fired)
    if worker is not None and not sb.finished():
        _dump_restart(sb, rec, worker)
    if probes:
        with sb.write_behind():  # one commit for the probes, not one per probe
            run_probes(sb, rec, phase="during")
    prefix_end = _prefix_end(spec)
    with sb.write_behind():
        while mode == "threads" and sb.clock.now_us() < prefix_end and sb.steps < max_steps:
            if sb.step() is None:
                break
            if probes:
                step_probes(sb, rec, fired)
    if mode == "threads":
        sb.run(timeout_s=THREADS_TIMEOUT_S, scale=THREADS_SCALE)
    else:
        with sb.write_behind():
            while sb.steps < max_steps and sb.step() is not None:
                if probes:
                    step_probes(sb, rec, fired)
    if probes:
        with sb.write_behind():
            run_probes(sb, rec, phase="after")
    sb.settle_delivery()  # what is still in flight (threads stop mid-round) reaches everyone
    _dump_end(sb, rec, sb.delivery, list(sb.runtimes))
    rec.write()
    summary = sb.summary()
    sb.close()
    return ScenarioRun(
        directory=directory,
        mode=mode,
        seed=sb.seed,
        steps=summary.steps,
        finished=summary.finished,
        wall_seconds=time.perf_counter() - started,
    )


__all__ = ["POC_DIR", "SAMPLE", "Recorder", "ScenarioRun", "run_scenario"]
