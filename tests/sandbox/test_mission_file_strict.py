"""Mistakes in a mission file never pass silently (issue 22.2): an unknown key or table, a
capability no Agent offers, a Mission without WorkItems, each an error naming its place with a
suggestion, raised before anything is written, whether the Missions come as TOML, as a dict or
as Python classes. The key table of ``docs/mission-files.md`` is the checker's own."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mwp_local.cli import main
from mwp_local.drivers.mission_file import MissionFileError, parse
from mwp_local.drivers.mission_keys import TABLES, render_markdown
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = sorted((ROOT / "sample_missions").glob("*.toml"))

HELLO = """
[[agents]]
name = "coordinator"
capabilities = ["mwp.coordination@1.0.0", "mwp.review@1.0.0"]

[[agents]]
name = "dev"
capabilities = ["mwp.software.analyse@1.0.0"]

[[missions]]
id = "hello"
objective = "Say hello"
owner = "alice"
coordinator = "coordinator"

  [[missions.work]]
  id = "fetch"
  goal = "Fetch the names"
  capability = "mwp.software.analyse@1.0.0"

  [[missions.work]]
  id = "analyse"
  goal = "Analyse them"
  capability = "mwp.software.analyse@1.0.0"
  depends_on = ["fetch"]
"""

#: Each mistake of the issue: the edit, and what the error must say (place and suggestion).
MISTAKES = {
    "unknown key": (
        ('  depends_on = ["fetch"]', '  depend_on = ["fetch"]'),
        "mission 'hello' work 'analyse': unknown key 'depend_on' (did you mean 'depends_on'?)",
    ),
    "unknown table": (
        ('  [[missions.work]]\n  id = "analyse"', '  [[mission.work]]\n  id = "analyse"'),
        "mission file: unknown table 'mission' (did you mean 'missions'?)",
    ),
    "unknown capability": (
        (
            '  capability = "mwp.software.analyse@1.0.0"\n  depends_on',
            '  capability = "mwp.software.analyze@1.0.0"\n  depends_on',
        ),
        "mission 'hello' work 'analyse': no Agent offers capability mwp.software.analyze@1.0.0 "
        "(did you mean mwp.software.analyse, which dev offers?)",
    ),
    "capability at another major version": (
        (
            '  capability = "mwp.software.analyse@1.0.0"\n  depends_on',
            '  capability = "mwp.software.analyse@2.0.0"\n  depends_on',
        ),
        "mission 'hello' work 'analyse': no Agent offers capability mwp.software.analyse@2.0.0 "
        "(dev offers mwp.software.analyse@1.0.0: an Agent must declare the same major version",
    ),
    "a Mission without WorkItems": (
        (HELLO[HELLO.index("  [[missions.work]]") :], ""),
        "mission 'hello': it has no WorkItems; add at least one [[missions.work]] table",
    ),
    "unknown budget dimension": (
        (
            'coordinator = "coordinator"\n',
            'coordinator = "coordinator"\nbudget = { financal = 10 }\n',
        ),
        "missions[0]: unknown budget dimensions ['financal'] (did you mean 'financial'?)",
    ),
    "WorkItems over the Mission's budget": (
        (
            'coordinator = "coordinator"\n',
            'coordinator = "coordinator"\nbudget = { financial = 15 }\n',
        ),
        "mission 'hello': its WorkItems ask for 20 financial in all (fetch 10, analyse 10), but "
        "the Mission's budget allows 15; each WorkItem's budget is allocated from its Mission's "
        "(§4.11, §12), so the last ones could never be authorized. Raise the Mission's "
        "budget.financial to at least 20",
    ),
    "unknown behaviour key": (
        ('name = "dev"\n', 'name = "dev"\nbehaviour = { sped = 2.0 }\n'),
        "agents[1] 'dev' behaviour: unknown key 'sped' (did you mean 'speed'?)",
    ),
    "unknown dependency": (
        ('depends_on = ["fetch"]', 'depends_on = ["fetsh"]'),
        "mission 'hello' work 'analyse': unknown WorkItem 'fetsh' (did you mean 'fetch'?)",
    ),
    "unknown coordinator": (
        ('coordinator = "coordinator"\n', 'coordinator = "cordinator"\n'),
        "missions[0]: coordinator 'cordinator' is not an Agent (did you mean 'coordinator'?)",
    ),
}


def _edited(name: str) -> str:
    (old, new), _ = MISTAKES[name]
    assert old in HELLO, name
    return HELLO.replace(old, new, 1)


def test_the_unedited_mission_is_fine() -> None:
    assert [w.id for w in parse(tomllib.loads(HELLO)).missions[0].work] == ["fetch", "analyse"]


@pytest.mark.parametrize("name", list(MISTAKES))
def test_a_mistake_in_a_toml_file_is_an_error_with_its_place_before_anything_is_written(
    name: str, tmp_path: Path
) -> None:
    _, said = MISTAKES[name]
    path = tmp_path / "hello.toml"
    path.write_text(_edited(name), encoding="utf-8")
    directory = tmp_path / "run"
    with pytest.raises(MissionFileError) as raised:
        Sandbox(directory, path)
    assert str(raised.value).startswith(f"{path}: ")
    assert said in str(raised.value)
    assert not directory.exists()


@pytest.mark.parametrize("name", list(MISTAKES))
def test_the_same_mistake_in_python_says_the_same(name: str, tmp_path: Path) -> None:
    _, said = MISTAKES[name]
    raw = tomllib.loads(_edited(name))
    with pytest.raises(MissionFileError) as from_dict:
        parse(raw)
    assert said in str(from_dict.value)
    # through the Python classes: refused as the table is read (unknown keys), or at check()
    directory = tmp_path / "run"
    with pytest.raises(MissionFileError) as from_classes:
        Sandbox(directory, Scenario.from_dict(raw))
    assert not directory.exists()
    message = str(from_classes.value)
    if "unknown key" in said or "unknown table" in said:
        key = re.search(r"unknown (?:key|table) '([^']+)'", said)
        assert key is not None and f"'{key.group(1)}'" in message and "did you mean" in message
    else:
        assert said in message


def test_an_unknown_keyword_to_a_python_class_is_refused_with_a_suggestion() -> None:
    from mwp_local.drivers.scenario import WorkItem

    with pytest.raises(
        MissionFileError,
        match=r"WorkItem\('analyse'\): unknown key 'depend_on' \(did you mean 'depends_on'\?\)",
    ):
        WorkItem(id="analyse", goal="Analyse", depend_on=["fetch"])  # type: ignore[call-arg]


def test_the_command_line_reports_the_mistake_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hello.toml"
    path.write_text(_edited("unknown key"), encoding="utf-8")
    directory = tmp_path / "run"
    assert main(["run", str(path), "--dir", str(directory)]) == 2
    _, err = capsys.readouterr()
    assert "did you mean 'depends_on'?" in err and "Traceback" not in err
    assert not directory.exists()


def test_a_budget_that_just_fits_runs_to_approval(tmp_path: Path) -> None:
    """The budget check is the Authority's own rule, not a stricter one: WorkItems asking for
    exactly the Mission's budget are all authorized and the Mission is approved."""
    text = HELLO.replace(
        'coordinator = "coordinator"\n',
        'coordinator = "coordinator"\nbudget = { financial = 20 }\n',
        1,
    )
    path = tmp_path / "hello.toml"
    path.write_text(text, encoding="utf-8")
    sandbox = Sandbox(tmp_path / "run", path)
    try:
        summary = sandbox.run()
        assert list(summary.missions.values()) == ["approved"]
        assert not [r for r in sandbox.log.store.rejections() if r.code == "BUDGET_EXCEEDED"]
    finally:
        sandbox.close()


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_sample_passes_the_strict_checker(path: Path) -> None:
    Scenario.load(path).check()


def test_the_key_table_of_the_docs_is_the_checkers() -> None:
    page = (ROOT / "docs" / "mission-files.md").read_text(encoding="utf-8")
    assert render_markdown() in page


def test_every_key_the_checker_knows_is_one_the_python_classes_have() -> None:
    from dataclasses import fields

    from mwp_local.drivers import scenario

    classes: dict[str, Any] = {
        "agents": scenario.Agent,
        "agents.behaviour": scenario.Behaviour,
        "missions": scenario.Mission,
        "missions.work": scenario.WorkItem,
        "missions.work.child": scenario.ChildMission,
        "faults": scenario.Fault,
    }
    for table in TABLES:
        cls = classes.get(table.path)
        if cls is None:
            continue
        names = {f.name.rstrip("_") for f in fields(cls)}
        assert names == set(table.keys), table.path
