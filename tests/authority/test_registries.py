"""The registries the tables lean on are complete: every Command kind has exactly one handler,
every Event kind exactly one reducer, every guard a row names exists and every registered guard
is named by some row (issue 20)."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.authority.decision import GUARDS, guard
from mwp_local.authority.evolve import REDUCERS, reducer
from mwp_local.authority.handlers import HANDLERS
from mwp_local.authority.registry import command
from mwp_local.protocol.documents.kinds import (
    CommandKind,
    EventKind,
    ExtensionCommandKind,
    ExtensionEventKind,
)
from mwp_local.protocol.tables import PROTOCOL_TABLES, Row

#: Core Command kinds this sandbox does not implement (refused as unknown, INVALID_COMMAND).
NOT_HANDLED = {CommandKind.POLICY_GRANT_COOPERATION_OVERRIDE}
#: Core Event kinds this sandbox never appends (a follow-up Mission is recorded as
#: mission.created with followUpToMissionId; there is no cooperation override).
NOT_APPENDED = {
    EventKind.MISSION_FOLLOW_UP_CREATED,
    EventKind.POLICY_COOPERATION_OVERRIDE_GRANTED,
}
COMMAND_KINDS = [*CommandKind, *ExtensionCommandKind]
EVENT_KINDS = [*EventKind, *ExtensionEventKind]
ROWS = [(table.aggregate, row) for table in PROTOCOL_TABLES.all() for row in table.rows]
ROW_IDS = [f"{aggregate}-{row.transition}" for aggregate, row in ROWS]


@pytest.mark.parametrize("kind", COMMAND_KINDS, ids=str)
def test_every_command_kind_has_one_handler_unless_unimplemented(kind: str) -> None:
    assert (kind in HANDLERS) is (kind not in NOT_HANDLED)


@pytest.mark.parametrize("kind", sorted(HANDLERS), ids=str)
def test_every_handler_is_for_a_known_command_kind(kind: str) -> None:
    assert kind in {str(k) for k in COMMAND_KINDS}


@pytest.mark.parametrize("kind", EVENT_KINDS, ids=str)
def test_every_event_kind_has_one_reducer_unless_never_appended(kind: str) -> None:
    assert (kind in REDUCERS) is (kind not in NOT_APPENDED)


@pytest.mark.parametrize("kind", sorted(REDUCERS), ids=str)
def test_every_reducer_is_for_a_known_event_kind(kind: str) -> None:
    assert kind in {str(k) for k in EVENT_KINDS}


def test_a_second_handler_reducer_or_guard_for_the_same_name_is_refused() -> None:
    with pytest.raises(ValueError, match="two handlers"):
        command(CommandKind.WORK_START)(lambda ctx, cmd: iter(()))
    with pytest.raises(ValueError, match="two reducers"):
        reducer(EventKind.WORK_STARTED)(lambda state, event, fold: None)
    with pytest.raises(ValueError, match="two guards"):
        guard("current_owner")(lambda decision: None)


@pytest.mark.parametrize(("aggregate", "row"), ROWS, ids=ROW_IDS)
def test_every_guard_a_row_names_is_registered(aggregate: str, row: Row[Any, Any]) -> None:
    missing = [name for name in row.checks if name not in GUARDS]
    assert missing == []


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_every_registered_guard_is_named_by_a_row(name: str) -> None:
    assert any(name in table.guard_names() for table in PROTOCOL_TABLES.all())


@pytest.mark.parametrize(("aggregate", "row"), ROWS, ids=ROW_IDS)
def test_every_row_is_driven_by_a_handled_command_or_names_its_cause(
    aggregate: str, row: Row[Any, Any]
) -> None:
    command_kind = row.command
    if command_kind is not None:
        assert command_kind in HANDLERS
    else:
        assert row.cause


@pytest.mark.parametrize(("aggregate", "row"), ROWS, ids=ROW_IDS)
def test_every_event_kind_a_row_names_has_a_reducer(aggregate: str, row: Row[Any, Any]) -> None:
    assert [kind for kind in row.events if kind not in REDUCERS] == []
