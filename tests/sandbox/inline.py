"""Small mission files written inline for Worker tests, and readers of the log they produce."""

from __future__ import annotations

from typing import Any

from mwp_local.agents.specs import MissionFile
from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import Agent, Mission, Scenario, WorkItem
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.timestamps import parse_timestamp

CAP = "mwp.test.build@1.0.0"
COORDINATION = ["mwp.coordination@1.0.0", "mwp.review@1.0.0"]


def mission_file(
    workers: list[dict[str, Any]],
    missions: list[dict[str, Any]],
    *,
    seed: int = 5,
    coordinator_per_mission: bool = False,
) -> MissionFile:
    """A mission file with one Coordinator (``coord``, or ``coord-<mission>`` for each Mission),
    the given Workers and Missions.

    A Mission needs only ``id`` and ``work``; a WorkItem only ``id`` (capability ``CAP``).
    """
    coordinators = [f"coord-{m['id']}" for m in missions] if coordinator_per_mission else ["coord"]
    full = []
    for m in missions:
        work = [
            {"goal": f"Do {w['id']}", "capability": CAP, "duration": "10m", **w} for w in m["work"]
        ]
        full.append(
            {
                "objective": f"Mission {m['id']}",
                "coordinator": f"coord-{m['id']}" if coordinator_per_mission else "coord",
                "budget": {"financial": 1000, "tool_calls": 1000, "compute_seconds": 1_000_000},
                **m,
                "work": work,
            }
        )
    return parse(
        {
            "sandbox": {"seed": seed},
            "agents": [
                *(
                    {"name": c, "capabilities": COORDINATION, "max_concurrency": 4}
                    for c in coordinators
                ),
                *workers,
            ],
            "missions": full,
        }
    )


def events(sandbox: Sandbox) -> list[dict[str, Any]]:
    """Every Event of the log, parsed, in log order."""
    return [parse_strict(e.document) for e in sandbox.log.store.events()]


def of_item(sandbox: Sandbox, work_item_id: str, kind: str) -> list[dict[str, Any]]:
    """The Events of ``kind`` about one WorkItem, in log order."""
    return [e for e in events(sandbox) if e["kind"] == kind and e.get("workItemId") == work_item_id]


def at_us(event: dict[str, Any]) -> int:
    """When an Event occurred."""
    return parse_timestamp(event["occurredAt"]).epoch_micros


def totals(workers: dict[str, list[str]], work: list[WorkItem], *, seed: int = 5) -> Scenario:
    """A Python Scenario: Mission ``totals`` (owner ``alice``) coordinated by ``coordinator``,
    with ``workers`` (name → capabilities) and ``work``."""
    return Scenario(
        seed=seed,
        agents=[
            Agent(name="coordinator", capabilities=COORDINATION),
            *(Agent(name=name, capabilities=caps) for name, caps in workers.items()),
        ],
        missions=[
            Mission(
                id="totals",
                objective="Total the orders",
                owner="alice",
                coordinator="coordinator",
                deadline="1d",
                budget={"financial": 100, "tool_calls": 100, "compute_seconds": 100_000},
                work=work,
            )
        ],
    )
