"""A WorkItem's deliverable media type (the ``media_type`` key, default ``text/markdown``) is the
Work Contract's required deliverable type: review accepts a JSON deliverable of a WorkItem that
asks for JSON, and still refuses an Artifact of another type (§13.2 step 1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.worker.work import Deliverable, WorkRequest
from mwp_local.drivers.mission_file import MissionFileError, parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import Scenario, WorkItem
from mwp_local.protocol.jsontext import parse_strict

from ..official_schemas import problems
from .inline import totals

JSON = "application/json"


def _scenario(media_type: str | None) -> Scenario:
    extra = {} if media_type is None else {"media_type": media_type}
    return totals(
        {"ana": ["mwp.data.sum@1.0.0"]},
        [WorkItem(id="sum", goal="Sum", capability="mwp.data.sum@1.0.0", max_attempts=1, **extra)],
    )


def _total(request: WorkRequest) -> Deliverable:
    return Deliverable(json.dumps({"total": 50}), media_type=JSON)


def _events(sandbox: Sandbox, kind: str) -> list[dict[str, Any]]:
    events = (parse_strict(r.document) for r in sandbox.log.store.events())
    return [e for e in events if e["kind"] == kind]


def _run(tmp_path: Path, media_type: str | None) -> Sandbox:
    sandbox = Sandbox(
        tmp_path / "s",
        _scenario(media_type),
        worker_files=False,
        work_functions={"mwp.data.sum": _total},
    )
    sandbox.run()
    return sandbox


def test_a_work_item_asking_for_json_gets_its_json_deliverable_accepted(tmp_path: Path) -> None:
    sandbox = _run(tmp_path, JSON)
    (authorized,) = _events(sandbox, "work.authorized")
    contract = authorized["payload"]["workItem"]["contract"]
    assert problems("work-contract", contract) == []
    assert problems("event", authorized) == []
    assert [d["mediaType"] for d in contract["requiredDeliverables"]] == [JSON]
    assert set(sandbox.summary().missions.values()) == {"approved"}
    (published,) = _events(sandbox, "artifact.published")
    assert published["payload"]["artifact"]["mediaType"] == JSON
    assert _events(sandbox, "work.result.accepted")


def test_a_deliverable_of_another_media_type_is_still_refused(tmp_path: Path) -> None:
    sandbox = _run(tmp_path, None)  # the default: text/markdown
    (authorized,) = _events(sandbox, "work.authorized")
    required = authorized["payload"]["workItem"]["contract"]["requiredDeliverables"]
    assert [d["mediaType"] for d in required] == ["text/markdown"]
    assert not _events(sandbox, "work.result.accepted")
    assert "approved" not in sandbox.summary().missions.values()
    (failed,) = _events(sandbox, "work.failed")  # the review failed it (max_attempts 1)
    assert "no Artifact of the required media type" in json.dumps(failed["payload"])


def test_the_media_type_key_round_trips_and_a_bad_one_is_named(tmp_path: Path) -> None:
    scenario = _scenario(JSON)
    text = scenario.to_toml()
    assert 'media_type = "application/json"' in text
    assert Scenario.from_toml(text) == scenario
    assert "media_type" not in _scenario(None).to_toml()  # the default is not written
    raw = scenario.to_dict()
    raw["missions"][0]["work"][0]["media_type"] = "json"
    with pytest.raises(MissionFileError, match=r"work 'sum'.*media_type 'json'.*application/json"):
        parse(raw)
