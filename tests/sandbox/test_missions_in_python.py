"""A Mission written in Python is a mission file (issue 22.1): every key of the mission-file
table is a field of a Python class, a Scenario converts to TOML and back, and the Sandbox runs it
as it runs the TOML."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from mwp_local.drivers.mission_file import load, parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import (
    Agent,
    Behaviour,
    ChildMission,
    Fault,
    Mission,
    Scenario,
    WorkItem,
    dumps_toml,
)

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_missions").glob("*.toml"))


def _hello() -> Scenario:
    return Scenario(
        seed=4,
        agents=[
            Agent(name="coordinator", capabilities=["mwp.coordination@1.0.0", "mwp.review@1.0.0"]),
            Agent(
                name="dev",
                capabilities=["mwp.software.analyse@1.0.0"],
                max_concurrency=2,
                behaviour=Behaviour(speed=2.0),
            ),
        ],
        missions=[
            Mission(
                id="hello",
                objective="Say hello",
                owner="alice",
                coordinator="coordinator",
                deadline="1d",
                budget={"financial": 100, "tool_calls": 100, "compute_seconds": 100_000},
                work=[
                    WorkItem(
                        id="fetch",
                        goal="Fetch the names",
                        capability="mwp.software.analyse@1.0.0",
                        duration="5m",
                    ),
                    WorkItem(
                        id="greet",
                        goal="Greet everyone",
                        capability="mwp.software.analyse@1.0.0",
                        depends_on=["fetch"],
                    ),
                ],
            )
        ],
    )


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_sample_survives_toml_to_python_to_toml(path: Path) -> None:
    scenario = Scenario.load(path)
    text = scenario.to_toml()
    assert Scenario.from_toml(text) == scenario
    # the same Missions, checked the same way, as the original file, with the same content hash
    # (it hashes the checked specification: the rewritten file leaves out the defaults the
    # sample spells out), so the same Organization ID
    again = parse(tomllib.loads(text), source=str(path))
    assert again == load(path)
    assert scenario.check() == replace(load(path), source="python")


def test_a_scenario_in_python_runs_to_approval_like_its_toml(tmp_path: Path) -> None:
    scenario = _hello()
    toml = scenario.save(tmp_path / "hello.toml")
    from_python = Sandbox(tmp_path / "py", scenario, worker_files=False).run()
    from_toml = Sandbox(tmp_path / "toml", toml, worker_files=False).run()
    assert from_python.finished and set(from_python.missions.values()) == {"approved"}
    assert (from_python.events, from_python.steps) == (from_toml.events, from_toml.steps)


def _log_bytes(sandbox: Sandbox) -> list[str]:
    store = sandbox.log.store
    return [e.document for e in store.events()] + [r.command_text for r in store.rejections()]


@pytest.mark.parametrize("named", [True, False], ids=["named", "unnamed"])
def test_a_scenario_and_its_toml_write_the_same_log_bytes(tmp_path: Path, named: bool) -> None:
    scenario = _hello()
    scenario.name = "hello" if named else None
    from_toml = parse(tomllib.loads(scenario.to_toml()))
    python = Sandbox(tmp_path / "py", scenario, worker_files=False)
    toml = Sandbox(tmp_path / "toml", from_toml, worker_files=False)
    saved = Sandbox(tmp_path / "file", scenario.save(tmp_path / "other.toml"), worker_files=False)
    assert python.organization_id == toml.organization_id == saved.organization_id
    for sandbox in (python, toml, saved):
        assert sandbox.run().finished
    assert _log_bytes(python) == _log_bytes(toml) == _log_bytes(saved)
    assert len(_log_bytes(python)) > 20 and python.organization_id in _log_bytes(python)[0]


def test_spelling_out_a_default_does_not_change_the_organization(tmp_path: Path) -> None:
    raw = _hello().to_dict()
    spelt = tomllib.loads(_hello().to_toml())
    spelt["agents"][0]["max_concurrency"] = 1  # the default, written out
    spelt["missions"][0]["approval"] = "approve"
    assert raw != spelt and parse(raw).content_hash == parse(spelt).content_hash
    spelt["missions"][0]["approval"] = "cancel"  # a different Mission is a different hash
    assert parse(raw).content_hash != parse(spelt).content_hash


def test_defaults_are_left_out_of_the_toml() -> None:
    text = _hello().to_toml()
    assert "urgency" not in text and "max_attempts" not in text
    assert "behaviour = { speed = 2.0 }" in text
    assert "[[missions.work]]" in text


def test_every_table_kind_round_trips() -> None:
    scenario = Scenario(
        name="all",
        agents=[
            Agent(name="c", capabilities=["mwp.coordination@1.0.0"]),
            Agent(name="c2", capabilities=["mwp.coordination@1.0.0"]),
            Agent(name="w", capabilities=["x@1.0.0", "mwp.review@1.0.0"]),
            Agent(
                name="r", capabilities=["mwp.review@1.0.0"], behaviour=Behaviour(reject_rate=0.5)
            ),
        ],
        missions=[
            Mission(
                id="m",
                objective="All of it",
                coordinator="c",
                standby_coordinator="c2",
                coordinator_fails_after="1h",
                approval="request_changes_once",
                work=[
                    WorkItem(id="fam", goal="Part {n}", capability="x@1.0.0", count=3),
                    WorkItem(
                        id="join",
                        goal="Join",
                        capability="x@1.0.0",
                        depends_on=["fam-*"],
                        urgency="high",
                        reviewed_by="r",
                        ambiguous="Which format?",
                        clarification="CSV",
                    ),
                    WorkItem(
                        id="sub",
                        goal="A child",
                        budget={"financial": 50},
                        child=ChildMission(
                            id="child",
                            objective="Child work",
                            coordinator="c2",
                            budget={"financial": 20},
                            child_failure_policy="fail",
                            work=[WorkItem(id="inner", goal="Inner", capability="x@1.0.0")],
                        ),
                    ),
                ],
            )
        ],
        faults=[Fault(agent="w", kind="pause", at="10m", for_="5m")],
        delivery={"duplicate": 0.1, "outages": [{"at": "1h", "for": "1m"}]},
    )
    text = scenario.to_toml()
    assert 'for = "5m"' in text and "[[delivery.outages]]" in text
    assert "[missions.work.child]" in text and "[[missions.work.child.work]]" in text
    again = Scenario.from_toml(text)
    assert again == scenario
    spec = again.check()
    assert [m.id for m in spec.missions] == ["m", "child"]
    assert [w.id for w in spec.missions[0].work][:3] == ["fam-1", "fam-2", "fam-3"]


def test_text_with_quotes_and_newlines_survives() -> None:
    data = {"name": 'say "hi"\nand \\ bye', "sandbox": {"seed": 1}}
    assert tomllib.loads(dumps_toml(data)) == data
