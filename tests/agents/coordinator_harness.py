"""Helpers for the Coordinator and MissionOwner tests.

A ``Sandbox`` (step mode, deterministic) whose agents run the policies ``agents.cast`` assigns,
with the sandbox's own verified blob store as the Coordinator's content source (or, with
``cast=False``, Coordinators without one); small mission files built
in code; and ways to send an agent's Intent, or a hand-made Command as that agent would sign it
(with the epochs its own replica knows), through the real Group log.
"""

from __future__ import annotations

import copy
import inspect
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mwp_local.agents.base import Intent, unwrap
from mwp_local.agents.coordinator.core import CoordinatorPolicy
from mwp_local.agents.naming import mission_id, work_item_id
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.specs import MissionFile
from mwp_local.authority import Accepted
from mwp_local.authority.model import WorkItemRecord
from mwp_local.authority.pipeline import Outcome
from mwp_local.drivers.clock import timestamp
from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.timestamps import format_utc
from mwp_local.store.blobs import BlobStore

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
START = "2026-07-15T09:00:00Z"


#: Workers keep their local projections in memory when the Sandbox allows it (faster tests).
_FAST = {"worker_files": False} if "worker_files" in inspect.signature(Sandbox).parameters else {}


def without_content(sandbox: Sandbox) -> Sandbox:
    """Give every Coordinator a policy with no content source (its reviews cannot re-hash)."""
    for runtime in sandbox.runtimes:
        if isinstance(unwrap(runtime.policy), CoordinatorPolicy):
            missions = sandbox.spec.coordinated_by(runtime.name)
            runtime.policy = CoordinatorPolicy(missions, sandbox.spec.start_us, content=None)
    return sandbox


def base_file(**mission: Any) -> dict[str, Any]:
    """A small mission file: a Coordinator, two Workers, a reviewer, one Mission."""
    raw: dict[str, Any] = {
        "name": "test",
        "sandbox": {"seed": 3, "start": START},
        "agents": [
            {"name": "coord", "capabilities": ["mwp.coordination@1.0.0"], "max_concurrency": 4},
            {"name": "w1", "capabilities": ["mwp.build@1.2.0"], "max_concurrency": 2},
            {"name": "w2", "capabilities": ["mwp.build@1.0.0"], "max_concurrency": 2},
            {"name": "rev", "capabilities": ["mwp.review@1.0.0"], "max_concurrency": 2},
        ],
        "missions": [
            {
                "id": "m",
                "objective": "Build a small thing",
                "owner": "olga",
                "coordinator": "coord",
                "deadline": "3d",
                "budget": {"financial": 500, "tool_calls": 500, "compute_seconds": 500000},
                "work": [
                    {
                        "id": "a",
                        "goal": "Build part A",
                        "capability": "mwp.build@1.0.0",
                        "duration": "20m",
                        "budget": {"financial": 20},
                    }
                ],
            }
        ],
    }
    raw["missions"][0].update(mission)
    return raw


def make(
    tmp_path: Path,
    raw: dict[str, Any] | MissionFile | Path,
    *,
    seed: int | None = None,
    cast: bool = True,
    name: str = "s",
) -> Sandbox:
    """A step-mode Sandbox on ``raw`` (a dict, a parsed file or a path)."""
    spec = parse(copy.deepcopy(raw), name="test") if isinstance(raw, dict) else raw
    sandbox = Sandbox(tmp_path / name, spec, seed=seed, **_FAST)
    return sandbox if cast else without_content(sandbox)


def run_until(sandbox: Sandbox, done: Callable[[Sandbox], bool], max_steps: int = 5000) -> None:
    """Step until ``done`` holds (asserting it does before the run ends)."""
    for _ in range(max_steps):
        if done(sandbox):
            return
        if sandbox.step() is None:
            break
    assert done(sandbox), "the condition never held"


def item(sandbox: Sandbox, work: str, mission: str = "m") -> WorkItemRecord:
    """The authoritative record of WorkItem ``work`` of mission ``mission``."""
    return sandbox.log.state.work_items[work_item_id(mission, work)]


def has_item(sandbox: Sandbox, work: str, mission: str = "m") -> bool:
    """Whether that WorkItem exists yet."""
    return work_item_id(mission, work) in sandbox.log.state.work_items


def mission_state(sandbox: Sandbox, mission: str = "m") -> str:
    """The Mission's current state (``none`` before it exists)."""
    record = sandbox.log.state.missions.get(mission_id(mission))
    return "none" if record is None else str(record.state)


def events(sandbox: Sandbox, kind: str | None = None) -> list[dict[str, Any]]:
    """Every Event in log order (of ``kind``, if given)."""
    docs = [json.loads(e.document) for e in sandbox.log.store.events()]
    return [d for d in docs if kind is None or d["kind"] == kind]


def rejections(sandbox: Sandbox) -> list[dict[str, Any]]:
    """Every refused Command, from the ``rejections`` view."""
    rows: list[dict[str, Any]] = sandbox.sql(
        "SELECT code, kind, actor_id, work_item_id, command_text FROM rejections ORDER BY position"
    ).to_pylist()
    return rows


def send(sandbox: Sandbox, who: str, intent: Intent) -> Outcome:
    """Sign ``intent`` as agent/human ``who`` (epochs from its replica), submit it, deliver."""
    runtime = runtime_of(sandbox, who)
    now = sandbox.clock.now_us()
    if intent.blobs:
        store = BlobStore(sandbox.directory / "blobs")
        for content in intent.blobs.values():
            store.put(content)
    outcome = sandbox.log.submit(runtime.command(intent, format_utc(now)), timestamp(now))
    if isinstance(outcome, Accepted):
        sandbox.deliver(list(outcome.event_documents))
    runtime.outcome(intent, outcome, now)
    return outcome


def hand(
    sandbox: Sandbox, who: str, kind: str, payload: dict[str, Any], **overrides: Any
) -> Outcome:
    """A hand-made Command from ``who`` in Mission ``m``'s Group (unless ``group`` is given)."""
    group = overrides.pop("group", "urn:mwp-local:group:m")
    return send(sandbox, who, Intent(kind=kind, payload=payload, group=group, overrides=overrides))


def blobs(sandbox: Sandbox) -> BlobStore:
    """The sandbox's Artifact blob store (verified on every read)."""
    return BlobStore(sandbox.directory / "blobs")


def runtime_of(sandbox: Sandbox, name: str) -> AgentRuntime:
    """The runtime of agent or human ``name``."""
    return next(r for r in sandbox.runtimes if r.name == name)
