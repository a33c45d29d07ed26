"""One row, every consumer: a changed state table changes the Authority's live decisions and the
replay of a log alike, with no other code changed (issue 20).

The changed rule set is the specification's with one source state removed from one row: a
blocked WorkItem can no longer be cancelled. It is given to the Authority (and to a GroupLog and
to ``fold``) as a value; nothing is patched.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from mwp_local.authority import Accepted
from mwp_local.authority.evolve import ReplayError
from mwp_local.protocol.tables import (
    PROTOCOL_TABLES,
    UNFINISHED_STATES,
    StateTables,
    WorkItemState,
    WorkTransition,
)
from mwp_local.store.group_log import fold
from mwp_local.store.memory import MemoryLogStore

from .world import LoggedWorld, World

W = WorkItemState
T = WorkTransition
WID = "urn:mwp-local:work:table-driven"

#: §10.2 with ``blocked`` removed from the sources of ``work.cancel``.
NO_CANCEL_WHILE_BLOCKED = replace(
    PROTOCOL_TABLES,
    work_item=PROTOCOL_TABLES.work_item.replace_row(
        T.CANCEL, sources=UNFINISHED_STATES - {W.BLOCKED}
    ),
)


def _blocked(w: World) -> None:
    """Bootstrap, create the Mission, and drive one WorkItem to ``blocked``."""
    w.bootstrap()
    w.create_mission()
    worker = w.org.get("worker-a").actor
    w.ok(
        "coordinator", "membership.change", {"member": worker, "role": "worker", "state": "active"}
    )
    w.authorize(WID)
    w.offer(WID)
    w.accept(WID)
    w.start(WID)
    w.ok(
        "worker-a",
        "work.block",
        {
            **w.lease(WID),
            "requiredResolution": "need access",
            "checkpoint": {"progress": w.progress()},
        },
    )
    assert w.state.work_items[WID].state is W.BLOCKED


def _cancel() -> tuple[str, str, dict[str, str]]:
    return "coordinator", "work.cancel", {"workItemId": WID}


def test_the_changed_table_is_the_official_one_but_for_the_removed_source() -> None:
    changed, official = NO_CANCEL_WHILE_BLOCKED.work_item, PROTOCOL_TABLES.work_item
    assert not changed.is_allowed(W.BLOCKED, T.CANCEL)
    assert official.is_allowed(W.BLOCKED, T.CANCEL)
    differing = {
        (s, t) for s in W for t in T if changed.is_allowed(s, t) != official.is_allowed(s, t)
    }
    assert differing == {(W.BLOCKED, T.CANCEL)}


@pytest.mark.req("MWP-WRK-003")
def test_the_authority_cancels_a_blocked_item_under_the_official_table() -> None:
    w = World()
    _blocked(w)
    w.ok(*_cancel())
    assert w.state.work_items[WID].state is W.CANCELLED


@pytest.mark.req("MWP-WRK-003")
def test_the_authority_refuses_to_cancel_a_blocked_item_under_a_table_without_that_source() -> None:
    w = World(tables=NO_CANCEL_WHILE_BLOCKED)
    _blocked(w)
    rejected = w.refuse("INVALID_STATE_TRANSITION", *_cancel())
    assert "'work.cancel' is not a transition" in rejected.error.explanation
    assert "blocked" in rejected.error.explanation
    assert w.state.work_items[WID].state is W.BLOCKED


def test_the_changed_table_still_allows_cancelling_an_open_item() -> None:
    w = World(tables=NO_CANCEL_WHILE_BLOCKED)
    w.bootstrap()
    w.create_mission()
    w.authorize(WID)
    assert isinstance(w.send(*_cancel()), Accepted)
    assert w.state.work_items[WID].state is W.CANCELLED


@pytest.mark.req("MWP-WRK-003")
def test_replay_under_the_changed_table_refuses_a_log_that_cancelled_a_blocked_item() -> None:
    w = World()
    _blocked(w)
    w.ok(*_cancel())
    official = fold(w.org, w.events, ())
    assert official.work_items[WID].state is W.CANCELLED
    with pytest.raises(ReplayError, match=r"work\.cancelled.*'blocked'.*'work\.cancel'"):
        fold(w.org, w.events, (), tables=NO_CANCEL_WHILE_BLOCKED)


def test_a_group_log_opened_under_the_changed_table_refuses_the_same_log() -> None:
    store = MemoryLogStore()
    w = LoggedWorld(store)
    _blocked(w)
    w.ok(*_cancel())
    reopened = LoggedWorld(store, tables=PROTOCOL_TABLES)
    assert reopened.state.work_items[WID].state is W.CANCELLED
    with pytest.raises(ReplayError):
        LoggedWorld(store, tables=NO_CANCEL_WHILE_BLOCKED)


def test_a_rule_set_is_a_value_the_authority_keeps() -> None:
    w = World(tables=NO_CANCEL_WHILE_BLOCKED)
    assert w.authority.tables is NO_CANCEL_WHILE_BLOCKED
    assert isinstance(NO_CANCEL_WHILE_BLOCKED, StateTables)
    assert World().authority.tables is PROTOCOL_TABLES
