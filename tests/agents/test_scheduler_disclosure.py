"""Scheduling disclosure (MWP-WRK-012): the WorkItem ``scheduleEstimate`` object, checked against
the official schema, and checked for leakage of any other Group's names, WorkItems,
assignments or exact global queue position."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mwp_local.agents.scheduler.core import (
    QueuedWork,
    RequestedUrgency,
    Scheduler,
    SchedulerConfig,
    Slot,
)
from mwp_local.protocol.timestamps import format_utc, parse_timestamp

from ..conftest import PROTOCOL_ROOT
from ..official_schemas import _registry
from .scheduler_sim import TICK

NOW = 1_700_000_000 * 1_000_000  # a realistic instant (2023-11-14)
FIELDS = {"estimatedStart", "estimatedCompletion", "confidence", "capacityStatus"}


def schedule_estimate_problems(doc: object) -> list[str]:
    """Violations of ``work-item.schema.json#/properties/scheduleEstimate``."""
    work_item = json.loads((PROTOCOL_ROOT / "schemas" / "work-item.schema.json").read_text())
    validator = Draft202012Validator(
        {"$ref": f"{work_item['$id']}#/properties/scheduleEstimate"},
        registry=_registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )
    return [e.message for e in validator.iter_errors(doc)]


def item(wid: str, group: str, **fields: Any) -> QueuedWork:
    """A queued item of ten minutes, enqueued an hour before NOW unless told otherwise."""
    values = {"enqueued_us": NOW - 3600 * TICK, "estimated_duration_us": 600 * TICK, **fields}
    return QueuedWork(work_item_id=wid, group_id=group, **values)


def running(slot_id: str, work: QueuedWork, started_us: int) -> Slot:
    """A slot running ``work``."""
    return Slot(
        slot_id=slot_id,
        work_item_id=work.work_item_id,
        group_id=work.group_id,
        started_us=started_us,
    )


def start(s: Scheduler, works: list[QueuedWork], slot_ids: list[str], at: int) -> list[Slot]:
    """Enqueue ``works`` and let the Scheduler dispatch them into ``slot_ids``; the busy slots."""
    for w in works:
        s.enqueue(w)
    decisions = s.decide(at, [Slot(slot_id=x) for x in slot_ids])
    by_id = {w.work_item_id: w for w in works}
    return [running(d.slot_id, by_id[d.work_item_id], at) for d in decisions]


def _status_case(name: str) -> tuple[dict[str, object], str]:
    config = SchedulerConfig(quotas={"g-mine": 1} if name == "quota" else {})
    s = Scheduler(config)
    if name == "available":
        s.enqueue(item("mine-0", "g-mine"))
        return s.disclose("mine-0", NOW, [Slot(slot_id="s0")]), "available"
    if name == "running":
        slots = start(s, [item("mine-0", "g-mine")], ["s0"], NOW - 60 * TICK)
        return s.disclose("mine-0", NOW, slots), "available"
    if name == "queued":
        slots = start(s, [item("other-0", "g-other")], ["s0"], NOW - 60 * TICK)
        s.enqueue(item("mine-0", "g-mine"))
        return s.disclose("mine-0", NOW, slots), "queued"
    if name == "quota":
        slots = start(s, [item("mine-0", "g-mine")], ["s0"], NOW - 60 * TICK)
        s.enqueue(item("mine-1", "g-mine"))
        return s.disclose("mine-1", NOW, [*slots, Slot(slot_id="s1")]), "constrained"
    if name == "resources":
        s.enqueue(item("mine-0", "g-mine", resources_available=False))
        return s.disclose("mine-0", NOW, [Slot(slot_id="s0")]), "constrained"
    assert name == "gate"
    s.enqueue(item("mine-0", "g-mine", risk_gate_open=False))
    return s.disclose("mine-0", NOW, [Slot(slot_id="s0")]), "blocked"


@pytest.mark.req("MWP-WRK-012")
@pytest.mark.parametrize("case", ["available", "running", "queued", "quota", "resources", "gate"])
def test_disclosure_is_a_valid_schedule_estimate_with_the_right_capacity_status(
    case: str,
) -> None:
    doc, status = _status_case(case)
    assert schedule_estimate_problems(doc) == []
    assert set(doc) == {*FIELDS, "lastCalculatedAt"}
    assert doc["capacityStatus"] == status
    assert doc["lastCalculatedAt"] == format_utc(NOW)
    start_at = parse_timestamp(doc["estimatedStart"])
    end_at = parse_timestamp(doc["estimatedCompletion"])
    assert start_at <= end_at
    if case == "running":
        assert start_at.epoch_micros == NOW - 60 * TICK
    elif case == "available":
        assert start_at.epoch_micros == NOW
    else:
        assert start_at.epoch_micros > NOW


def _crowded(
    other_items: int, *, prefix: str, urgency: RequestedUrgency
) -> tuple[Scheduler, list[Slot]]:
    """Own Group g-mine with two running and three queued items; three other Groups, two of them
    running one item each, and ``other_items`` more queued in each (the same instants and
    durations in every variant, only names, counts and urgencies differ)."""
    s = Scheduler()
    first = [
        item(f"{prefix}-wi-0-run", f"{prefix}-group-0"),
        item(f"{prefix}-wi-1-run", f"{prefix}-group-1"),
        item("busy-0", "g-mine"),
        item("busy-1", "g-mine"),
    ]
    slots = start(s, first, ["s0", "s1", "s2", "s3"], NOW - 60 * TICK)
    assert len(slots) == 4
    for k in range(3):
        for i in range(other_items):
            group = f"{prefix}-group-{k}"
            s.enqueue(item(f"{prefix}-wi-{k}-{i}", group, urgency=urgency, enqueued_us=NOW - i))
    for i in range(3):
        s.enqueue(item(f"mine-{i}", "g-mine", enqueued_us=NOW - 10 + i))
    return s, slots


def _leaves(value: object) -> list[object]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)] + list(value)
    if isinstance(value, list | tuple):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


@pytest.mark.req("MWP-WRK-012")
def test_disclosure_contains_no_other_groups_names_work_items_or_positions() -> None:
    s, slots = _crowded(5, prefix="secret", urgency=RequestedUrgency.CRITICAL)
    forbidden = {"secret"}  # every other Group ID and WorkItem ID contains it
    for wid in ("mine-0", "mine-1", "mine-2", "busy-0"):
        doc = s.disclose(wid, NOW, slots)
        assert schedule_estimate_problems(doc) == []
        for leaf in _leaves(doc):
            if isinstance(leaf, str):
                assert not any(word in leaf for word in forbidden), leaf
                if leaf not in FIELDS | {"lastCalculatedAt"}:
                    assert leaf in {"available", "queued", "constrained", "blocked"} or (
                        parse_timestamp(leaf)
                    )
            else:
                # The only number is a coarse confidence: no count, rank or position.
                assert isinstance(leaf, float) and not isinstance(leaf, bool), leaf
                assert 0 <= leaf <= 1 and round(leaf * 20) == leaf * 20, leaf


@pytest.mark.req("MWP-WRK-012")
def test_disclosure_is_the_same_whatever_other_groups_queue_or_are_called() -> None:
    # Three other Groups with one routine item each, or with twenty critical items each under
    # other names: the own item's exact global position differs, its disclosure does not.
    small, small_slots = _crowded(2, prefix="alpha", urgency=RequestedUrgency.ROUTINE)
    large, large_slots = _crowded(20, prefix="omega", urgency=RequestedUrgency.CRITICAL)
    for wid in ("mine-0", "mine-1", "mine-2", "busy-1"):
        assert small.disclose(wid, NOW, small_slots) == large.disclose(wid, NOW, large_slots)


@pytest.mark.req("MWP-WRK-012")
def test_more_own_work_ahead_means_a_later_disclosed_start() -> None:
    s, slots = _crowded(2, prefix="x", urgency=RequestedUrgency.NORMAL)
    starts = [
        parse_timestamp(s.disclose(f"mine-{i}", NOW, slots)["estimatedStart"]) for i in range(3)
    ]
    assert starts[0] < starts[1] < starts[2]
    confidences = [float(str(s.disclose(f"mine-{i}", NOW, slots)["confidence"])) for i in range(3)]
    assert confidences == sorted(confidences, reverse=True)


@pytest.mark.req("MWP-WRK-012")
def test_disclosing_changes_nothing_in_the_scheduler() -> None:
    s, slots = _crowded(3, prefix="x", urgency=RequestedUrgency.NORMAL)
    twin, twin_slots = _crowded(3, prefix="x", urgency=RequestedUrgency.NORMAL)
    before = s.snapshot(NOW)
    for i in range(3):
        s.disclose(f"mine-{i}", NOW, slots)
    assert s.snapshot(NOW) == before
    freed = [*slots[:3], Slot(slot_id="s3")]
    assert s.decide(NOW, freed) == twin.decide(NOW, [*twin_slots[:3], Slot(slot_id="s3")])


def test_disclosing_an_unknown_item_is_refused() -> None:
    with pytest.raises(KeyError):
        Scheduler().disclose("nobody", NOW, [])
