"""The state diagrams are drawn from the tables the Authority decides with: every state is a
box, every edge a row, and a changed row changes the drawing (issue 20)."""

from __future__ import annotations

from mwp_local.agents.worker.lifecycle import SLOT_TABLE, SlotState, SlotTransition
from mwp_local.protocol.tables import (
    MISSION_TABLE,
    UNFINISHED_STATES,
    WORK_ITEM_TABLE,
    MissionState,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)
from mwp_local.render.svg import (
    allowed_transitions_html,
    mission_machine_svg,
    slot_machine_svg,
    state_machine_svg,
)


def test_the_worker_slot_lifecycle_is_drawn_from_its_table() -> None:
    svg = slot_machine_svg("running")
    for state in SlotState:
        assert f'data-state="{state}"' in svg
    for row in SLOT_TABLE.rows:
        assert str(row.transition) in svg
    without = SLOT_TABLE.replace_row(SlotTransition.LOSE, sources=frozenset({SlotState.RUNNING}))
    assert svg.count("lose") > slot_machine_svg("running", table=without).count("lose")


def test_the_mission_lifecycle_is_drawn_from_its_table_with_the_current_state_outlined() -> None:
    svg = mission_machine_svg("awaiting_approval")
    for state in MissionState:
        assert f'data-state="{state}"' in svg
    assert 'stroke="#d62728" stroke-width="3"' in svg
    for row in MISSION_TABLE.rows:
        assert str(row.transition) in svg  # each row titles an edge


def test_an_approved_mission_is_drawn_as_terminal() -> None:
    html = allowed_transitions_html("approved", MISSION_TABLE)
    assert "nothing: terminal" in html


def test_the_transitions_listed_name_each_rows_events_and_guards() -> None:
    html = allowed_transitions_html("queued")
    start = WORK_ITEM_TABLE.row(WorkTransition.START)
    assert "work.started" in html
    for name in start.checks:
        assert name in html
    assert "approval.grant_execution" in allowed_transitions_html("queued")


def test_a_changed_row_changes_the_drawing_and_the_list() -> None:
    changed = WORK_ITEM_TABLE.replace_row(
        WorkTransition.CANCEL, sources=UNFINISHED_STATES - {WorkItemState.BLOCKED}
    )
    assert "<code>work.cancel</code>" in allowed_transitions_html("blocked")
    assert "<code>work.cancel</code>" not in allowed_transitions_html("blocked", changed)
    assert state_machine_svg(table=changed) != state_machine_svg()


def test_a_mission_row_removed_from_the_table_is_gone_from_the_drawing() -> None:
    rows = tuple(r for r in MISSION_TABLE.rows if r.transition is not MissionTransition.APPROVE)
    without = type(MISSION_TABLE)(MISSION_TABLE.aggregate, rows, terminal=MISSION_TABLE.terminal)
    assert "mission.approve" in mission_machine_svg()
    assert "mission.approve" not in mission_machine_svg(table=without)
