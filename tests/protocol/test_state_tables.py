"""The state tables, checked pair by pair against an independent transcription.

Every (state, transition) pair of each machine (§10.2, §7.1, and the lease, offer and
Membership lifecycles) is its own test: allowed pairs must lead to the specification's next
states, every other pair must raise INVALID_STATE_TRANSITION. Every Event kind a row names is
recognised as that row, with the target it carries.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mwp_local.protocol.documents.mission import MISSION_WIRE_STATES
from mwp_local.protocol.documents.work import WORK_ITEM_WIRE_STATES
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.tables import (
    LEASE_TABLE,
    MEMBERSHIP_TABLE,
    MISSION_TABLE,
    OFFER_TABLE,
    WORK_ITEM_TABLE,
    LeaseState,
    LeaseTransition,
    MembershipState,
    MembershipTransition,
    MissionState,
    MissionTransition,
    OfferStatus,
    OfferTransition,
    Row,
    TransitionTable,
    WorkItemState,
    WorkTransition,
)

W = WorkItemState
T = WorkTransition
UNFINISHED = {W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.SUBMITTED}

# Written out again from the specification text, independently of the module under test.
EXPECTED_WORK: dict[tuple[WorkItemState, WorkTransition], set[WorkItemState]] = {
    (W.NONE, T.PROPOSE): {W.OPEN_WORK_PROPOSAL},
    (W.NONE, T.AUTHORIZE): {W.OPEN},
    (W.OPEN_WORK_PROPOSAL, T.AUTHORIZE): {W.OPEN},
    **{
        (s, T.OFFER): {W.OFFERED}
        for s in (W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.FAILED)
    },
    (W.OFFERED, T.ACCEPT_OFFER): {W.QUEUED},
    (W.OFFERED, T.OFFER_EXPIRY): {W.OFFERED},
    (W.QUEUED, T.GRANT_EXECUTION): {W.QUEUED},
    (W.QUEUED, T.START): {W.ACTIVE},
    (W.ACTIVE, T.CHECKPOINT): {W.QUEUED},
    (W.ACTIVE, T.BLOCK): {W.BLOCKED},
    (W.BLOCKED, T.UNBLOCK): {W.QUEUED, W.OPEN},
    (W.ACTIVE, T.SUBMIT): {W.SUBMITTED},
    (W.SUBMITTED, T.ACCEPT_RESULT): {W.VERIFIED},
    **{(s, T.FAIL): {W.FAILED} for s in UNFINISHED},
    **{(s, T.CANCEL): {W.CANCELLED} for s in UNFINISHED},
    **{
        (s, T.CREATE_CHILD): {W.BLOCKED} for s in (W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED)
    },
    (W.BLOCKED, T.CHILD_APPROVED): {W.VERIFIED},
    (W.BLOCKED, T.CHILD_FAILED): {W.BLOCKED, W.FAILED},
    **{(s, T.PARENT_TERMINAL): {W.FAILED, W.CANCELLED} for s in UNFINISHED},
    # §11.3, not §10.2: a replacement Session returns the old runtime's active items to queued.
    (W.ACTIVE, T.SESSION_REPLACED): {W.QUEUED},
}

M = MissionState
MT = MissionTransition
EXPECTED_MISSION: dict[tuple[MissionState, MissionTransition], set[MissionState]] = {
    (M.NONE, MT.CREATE): {M.ACTIVE},
    (M.NONE, MT.CREATE_FOLLOW_UP): {M.ACTIVE},
    (M.NONE, MT.CREATE_CHILD): {M.ACTIVE},
    (M.ACTIVE, MT.SUBMIT_FOR_APPROVAL): {M.AWAITING_APPROVAL},
    (M.AWAITING_APPROVAL, MT.REQUEST_CHANGES): {M.ACTIVE},
    (M.AWAITING_APPROVAL, MT.APPROVE): {M.APPROVED},
    **{(s, MT.CANCEL): {M.CANCELLED} for s in (M.ACTIVE, M.AWAITING_APPROVAL)},
    **{(s, MT.PARENT_CANCELLED): {M.CANCELLED} for s in (M.ACTIVE, M.AWAITING_APPROVAL)},
    **{(s, MT.TERMINATE): {M.FAILED} for s in (M.ACTIVE, M.AWAITING_APPROVAL)},
    **{(s, MT.CHILD_FAILURE_PROPAGATION): {M.FAILED} for s in (M.ACTIVE, M.AWAITING_APPROVAL)},
}

WORK_PAIRS = list(itertools.product(WorkItemState, WorkTransition))
MISSION_PAIRS = list(itertools.product(MissionState, MissionTransition))


@pytest.mark.req("MWP-WRK-003")
@pytest.mark.parametrize(
    ("state", "transition"), WORK_PAIRS, ids=[f"{s}-{t}" for s, t in WORK_PAIRS]
)
def test_work_item_table_matches_section_10_2(
    state: WorkItemState, transition: WorkTransition
) -> None:
    expected = EXPECTED_WORK.get((state, transition))
    if expected is None:
        with pytest.raises(ProtocolError) as info:
            WORK_ITEM_TABLE.lookup(state, transition)
        assert info.value.code is ErrorCode.INVALID_STATE_TRANSITION
        assert str(state) in info.value.explanation
    else:
        row = WORK_ITEM_TABLE.lookup(state, transition)
        assert set(row.targets) == expected


@pytest.mark.parametrize(
    ("state", "transition"), MISSION_PAIRS, ids=[f"{s}-{t}" for s, t in MISSION_PAIRS]
)
def test_mission_table_matches_section_7_1(
    state: MissionState, transition: MissionTransition
) -> None:
    expected = EXPECTED_MISSION.get((state, transition))
    if expected is None:
        with pytest.raises(ProtocolError) as info:
            MISSION_TABLE.lookup(state, transition)
        assert info.value.code is ErrorCode.INVALID_STATE_TRANSITION
    else:
        assert set(MISSION_TABLE.lookup(state, transition).targets) == expected


@pytest.mark.req("MWP-WRK-003")
def test_verified_and_cancelled_are_terminal_and_failed_leaves_only_through_an_offer() -> None:
    assert WORK_ITEM_TABLE.allowed(W.VERIFIED) == ()
    assert WORK_ITEM_TABLE.allowed(W.CANCELLED) == ()
    assert WORK_ITEM_TABLE.allowed(W.FAILED) == (T.OFFER,)


def test_offer_expiry_is_the_only_row_that_appends_nothing() -> None:
    silent = [row.transition for row in WORK_ITEM_TABLE.rows if not row.appends_event]
    assert silent == [T.OFFER_EXPIRY]


def test_a_guard_may_only_choose_among_the_rows_next_states() -> None:
    assert WORK_ITEM_TABLE.target(W.BLOCKED, T.UNBLOCK, W.OPEN) is W.OPEN
    with pytest.raises(ProtocolError) as info:
        WORK_ITEM_TABLE.target(W.BLOCKED, T.UNBLOCK, W.ACTIVE)
    assert info.value.code is ErrorCode.INVALID_STATE_TRANSITION


def test_approved_missions_are_never_reopened() -> None:
    assert MISSION_TABLE.allowed(M.APPROVED) == ()
    with pytest.raises(ProtocolError):
        MISSION_TABLE.lookup(M.APPROVED, MT.REQUEST_CHANGES)


# --------------------------------------------------------------------------- Events and rows


def _event_of(row: Row[Any, Any], kind: str, target: Any) -> dict[str, Any]:
    """The smallest Event a row's Events look like: its kind, its cause, its mark, its choice."""
    event: dict[str, Any] = {
        "eventId": "urn:uuid:00000000-0000-4000-8000-000000000001",
        "kind": kind,
        "cause": {"type": "command" if row.command else "event", "id": "x"},
        "payload": {"mission": {}},
    }
    if row.mark is not None:
        node = event
        for name in row.mark.path[:-1]:
            node = node.setdefault(name, {})
        node[row.mark.path[-1]] = row.mark.value or "present"
    if row.choice is not None:
        event[row.choice[0]][row.choice[1]] = str(target)
    return event


RECORDED = [
    (table, row, kind, target)
    for table in (WORK_ITEM_TABLE, MISSION_TABLE)
    for row in table.rows
    for target in row.targets
    if row.events
    for kind in [row.event_for(target)]
]


@pytest.mark.parametrize(
    ("table", "row", "kind", "target"),
    RECORDED,
    ids=[f"{t.aggregate}-{r.transition}-{k}-{g}" for t, r, k, g in RECORDED],
)
def test_each_rows_event_is_recognised_as_that_row_with_its_target(
    table: TransitionTable[Any, Any], row: Row[Any, Any], kind: str, target: Any
) -> None:
    event = _event_of(row, kind, target)
    assert table.recorded_by(event) is row
    assert row.target_of(event) == target


def test_an_event_kind_no_row_records_is_no_row() -> None:
    event = {"kind": "message.posted", "cause": {"type": "command"}, "payload": {}}
    assert WORK_ITEM_TABLE.recorded_by(event) is None
    assert MISSION_TABLE.recorded_by(event) is None


def test_a_lease_revocation_for_another_reason_records_no_row() -> None:
    row = WORK_ITEM_TABLE.row(T.SESSION_REPLACED)
    event = _event_of(row, str(row.events[0]), W.QUEUED)
    event["payload"]["reason"] = "reassigned"
    assert WORK_ITEM_TABLE.recorded_by(event) is None


def test_a_failure_propagated_from_a_child_mission_is_not_the_parents_end() -> None:
    child = _event_of(WORK_ITEM_TABLE.row(T.CHILD_FAILED), "work.failed", W.FAILED)
    parent = _event_of(WORK_ITEM_TABLE.row(T.PARENT_TERMINAL), "work.failed", W.FAILED)
    command = _event_of(WORK_ITEM_TABLE.row(T.FAIL), "work.failed", W.FAILED)
    assert WORK_ITEM_TABLE.recorded_by(child) is WORK_ITEM_TABLE.row(T.CHILD_FAILED)
    assert WORK_ITEM_TABLE.recorded_by(parent) is WORK_ITEM_TABLE.row(T.PARENT_TERMINAL)
    assert WORK_ITEM_TABLE.recorded_by(command) is WORK_ITEM_TABLE.row(T.FAIL)


def test_a_row_whose_events_could_not_name_its_target_is_refused() -> None:
    with pytest.raises(ValueError, match="choice"):
        WORK_ITEM_TABLE.replace_row(T.UNBLOCK, choice=None)


def test_two_unmarked_rows_recorded_by_one_event_kind_are_refused() -> None:
    with pytest.raises(ValueError, match="needs a mark"):
        WORK_ITEM_TABLE.replace_row(T.CHILD_FAILED, mark=None)


@pytest.mark.parametrize("transition", list(WorkTransition), ids=str)
def test_each_work_item_row_names_its_command_or_its_cause(transition: WorkTransition) -> None:
    row = WORK_ITEM_TABLE.row(transition)
    causes = {T.OFFER_EXPIRY, T.CHILD_APPROVED, T.CHILD_FAILED, T.PARENT_TERMINAL}
    causes |= {T.SESSION_REPLACED}
    assert (row.command is None) is (transition in causes)
    assert (row.cause == str(transition)) is (transition in causes)


# --------------------------------------------------------------------------- lifecycles

L, LT = LeaseState, LeaseTransition
EXPECTED_LEASE = {
    (L.NONE, LT.ISSUE): {L.ACTIVE},
    (L.ACTIVE, LT.RENEW): {L.ACTIVE},
    (L.ACTIVE, LT.RELEASE): {L.RELEASED},
    (L.ACTIVE, LT.REVOKE): {L.REVOKED},
    (L.ACTIVE, LT.EXPIRE): {L.EXPIRED},
}
OS, OT = OfferStatus, OfferTransition
EXPECTED_OFFER = {
    (OS.NONE, OT.CREATE): {OS.PENDING},
    (OS.PENDING, OT.ACCEPT): {OS.ACCEPTED},
    (OS.PENDING, OT.LOSE_RACE): {OS.LOST_RACE},
    (OS.PENDING, OT.WITHDRAW): {OS.WITHDRAWN},
}
MS, MST = MembershipState, MembershipTransition
EXPECTED_MEMBERSHIP = {
    (MS.NONE, MST.GRANT): {MS.PROVISIONAL, MS.ACTIVE},
    (MS.ENDED, MST.GRANT): {MS.PROVISIONAL, MS.ACTIVE},
    (MS.PROVISIONAL, MST.ACTIVATE): {MS.ACTIVE},
    (MS.PROVISIONAL, MST.CHANGE): {MS.PROVISIONAL, MS.ACTIVE},
    (MS.ACTIVE, MST.CHANGE): {MS.PROVISIONAL, MS.ACTIVE},
    (MS.PROVISIONAL, MST.END): {MS.ENDED},
    (MS.ACTIVE, MST.END): {MS.ENDED},
}
LIFECYCLES = [
    (table, expected, state, transition)
    for table, expected, states, transitions in (
        (LEASE_TABLE, EXPECTED_LEASE, LeaseState, LeaseTransition),
        (OFFER_TABLE, EXPECTED_OFFER, OfferStatus, OfferTransition),
        (MEMBERSHIP_TABLE, EXPECTED_MEMBERSHIP, MembershipState, MembershipTransition),
    )
    for state, transition in itertools.product(states, transitions)
]


@pytest.mark.parametrize(
    ("table", "expected", "state", "transition"),
    LIFECYCLES,
    ids=[f"{t.aggregate}-{s}-{x}" for t, _, s, x in LIFECYCLES],
)
def test_lifecycle_tables_allow_exactly_their_moves(
    table: TransitionTable[Any, Any], expected: dict[Any, Any], state: Any, transition: Any
) -> None:
    targets = expected.get((state, transition))
    if targets is None:
        with pytest.raises(ProtocolError) as info:
            table.lookup(state, transition)
        assert info.value.code is ErrorCode.INVALID_STATE_TRANSITION
    else:
        assert set(table.lookup(state, transition).targets) == targets


def test_a_closed_lease_is_never_reopened() -> None:
    for closed in (L.RELEASED, L.REVOKED, L.EXPIRED):
        assert LEASE_TABLE.allowed(closed) == ()
        assert LEASE_TABLE.between(closed, L.ACTIVE) is None
    assert LEASE_TABLE.between(L.ACTIVE, L.ACTIVE) is LEASE_TABLE.row(LT.RENEW)


def test_pre_states_are_never_wire_values() -> None:
    assert W.NONE not in WORK_ITEM_WIRE_STATES and W.OPEN_WORK_PROPOSAL not in WORK_ITEM_WIRE_STATES
    assert M.NONE not in MISSION_WIRE_STATES
    assert len(WORK_ITEM_WIRE_STATES) == len(WorkItemState) - 2
