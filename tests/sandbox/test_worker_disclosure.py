"""Scheduling disclosure in multi-Group runs (MWP-WRK-012): every ``scheduleEstimate`` a Worker
publishes on acceptance is inspected for leakage of other Groups' names, WorkItems, content or
exact global queue positions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.timestamps import parse_timestamp

from ..agents.test_scheduler_disclosure import schedule_estimate_problems
from .inline import CAP, events, mission_file

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
MEMBERS = {
    "estimatedStart",
    "estimatedCompletion",
    "confidence",
    "capacityStatus",
    "lastCalculatedAt",
}
GRAIN_US = 60_000_000


def _secrets(sandbox: Sandbox) -> set[str]:
    """Every name, identifier and piece of content a disclosure must not carry."""
    state = sandbox.log.state
    found: set[str] = set()
    for mission in state.missions.values():
        found |= {mission.mission_id, mission.group_id, mission.objective}
        found.add(mission.mission_id.rsplit(":", 1)[-1])
    for item in state.work_items.values():
        found |= {item.work_item_id, item.conversation_id, item.contract["goal"]}
        found.add(item.work_item_id.rsplit(":", 1)[-1])
    for agent in state.agents.values():
        found.add(agent.agent_id)
    return {s for s in found if s}


def leaks(estimate: dict[str, Any], secrets: set[str]) -> list[str]:
    """What in one published ``scheduleEstimate`` could reveal anything beyond the item's own
    schedule: unknown members, identifiers or content, numbers that could be positions, and
    instants finer than the disclosure grain while the item waits behind others."""
    found = []
    if set(estimate) != MEMBERS:
        found.append(f"members {sorted(set(estimate) ^ MEMBERS)}")
    for member, value in estimate.items():
        if member == "confidence":
            if not isinstance(value, float) or abs(value * 20 - round(value * 20)) > 1e-9:
                found.append(f"confidence {value!r} is not a coarse value")
            continue
        if not isinstance(value, str):
            found.append(f"{member} holds {value!r}, which could be a count or a position")
            continue
        found += [f"{member} names {s!r}" for s in secrets if s in value or value in s]
    if estimate.get("capacityStatus") in ("queued", "constrained", "blocked"):
        for member in ("estimatedStart", "estimatedCompletion"):
            instant = parse_timestamp(str(estimate.get(member))).epoch_micros
            if instant % GRAIN_US:
                found.append(f"{member} is finer than the disclosure grain")
    return found


def _disclosures(sandbox: Sandbox) -> list[tuple[str, dict[str, Any]]]:
    return [
        (e["groupId"], e["payload"]["scheduleEstimate"])
        for e in events(sandbox)
        if e["kind"] == "work.offer.accepted"
    ]


def _three_groups(tmp_path: Path) -> Sandbox:
    spec = mission_file(
        [
            {"name": w, "capabilities": [CAP], "max_concurrency": 2, "behaviour": {"jitter": 0.0}}
            for w in ("w1", "w2")
        ],
        [
            {
                "id": group,
                "objective": f"Confidential objective {group}",
                "work": [
                    {"id": f"{group}-item-{n}", "goal": f"Secret goal {group} {n}"}
                    for n in range(4)
                ],
            }
            for group in ("alpha", "beta", "gamma")
        ],
        coordinator_per_mission=True,
    )
    return Sandbox(
        tmp_path / "s", spec, worker_options={w: {"queue_capacity": 20} for w in ("w1", "w2")}
    )


@pytest.mark.req("MWP-WRK-012")
@pytest.mark.parametrize("run", ["flagship", "three-groups"])
def test_no_disclosure_in_a_multi_group_run_leaks_anything_of_another_group(
    tmp_path: Path, run: str
) -> None:
    if run == "flagship":
        sandbox = Sandbox(tmp_path / "s", SAMPLES / "flagship.toml")
    else:
        sandbox = _three_groups(tmp_path)
    assert sandbox.run().finished
    disclosures = _disclosures(sandbox)
    assert len({group for group, _ in disclosures}) >= 2
    secrets = _secrets(sandbox)
    statuses = set()
    for group, estimate in disclosures:
        assert schedule_estimate_problems(estimate) == []
        assert leaks(estimate, secrets) == [], (group, estimate)
        statuses.add(estimate["capacityStatus"])
    if run == "three-groups":
        assert "queued" in statuses  # items did wait behind other Groups' work
    sandbox.close()


def test_the_leak_check_catches_names_positions_and_fine_instants() -> None:
    good = {
        "estimatedStart": "2026-07-15T10:00:00Z",
        "estimatedCompletion": "2026-07-15T10:10:00Z",
        "confidence": 0.75,
        "capacityStatus": "queued",
        "lastCalculatedAt": "2026-07-15T09:41:07Z",
    }
    secrets = {"urn:mwp-local:group:billing", "hotfix"}
    assert leaks(good, secrets) == []
    assert leaks({**good, "queuePosition": 3}, secrets)
    assert leaks({**good, "capacityStatus": "queued behind hotfix"}, secrets)
    assert leaks({**good, "estimatedStart": "2026-07-15T10:00:07Z"}, secrets)
    assert leaks({**good, "confidence": 0.7331}, secrets)
