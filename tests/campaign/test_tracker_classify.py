"""The invariant checker classifies Events on its own (it must not trust the reducers it
checks), yet its reading of each Event must name the row the state table says that Event
records, with the same target: one row, every consumer, checked Event kind by Event kind."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.campaign.tracker import classify
from mwp_local.protocol.tables import WORK_ITEM_TABLE, Row, WorkItemState


def _event(row: Row[Any, Any], kind: str, target: WorkItemState) -> dict[str, Any]:
    payload: dict[str, Any] = {"workItemId": "urn:mwp-local:work:x"}
    if row.mark is not None:
        payload[row.mark.path[-1]] = row.mark.value or "urn:mwp-local:mission:child"
    if row.choice is not None:
        payload[row.choice[-1]] = str(target)
    return {
        "kind": kind,
        "cause": {"type": "command" if row.command else "event", "id": "x"},
        "payload": payload,
    }


CASES = [
    (row, row.event_for(target), target)
    for row in WORK_ITEM_TABLE.rows
    if row.events
    for target in row.targets
]


@pytest.mark.req("MWP-WRK-003")
@pytest.mark.parametrize(
    ("row", "kind", "target"), CASES, ids=[f"{r.transition}-{k}-{t}" for r, k, t in CASES]
)
def test_the_checkers_reading_of_an_event_is_the_row_the_table_says_it_records(
    row: Row[Any, Any], kind: str, target: WorkItemState
) -> None:
    event = _event(row, kind, target)
    assert WORK_ITEM_TABLE.recorded_by(event) is row
    if row.transition == "work.propose":  # a proposal is no WorkItem: the checker skips it
        assert classify(event) is None
        return
    assert classify(event) == (row.transition, target)
