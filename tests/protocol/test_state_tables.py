"""The §10.2 and §7.1 tables, checked pair by pair against an independent transcription.

Every (state, transition) pair of each machine is its own test: allowed pairs must lead to the
specification's next states, every other pair must raise INVALID_STATE_TRANSITION.
"""

from __future__ import annotations

import itertools

import pytest

from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.tables import (
    MISSION_TABLE,
    WORK_ITEM_TABLE,
    MissionState,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)

W = WorkItemState
T = WorkTransition
UNFINISHED = {W.OPEN, W.OFFERED, W.QUEUED, W.ACTIVE, W.BLOCKED, W.SUBMITTED}

# Written out again from the specification text, independently of the module under test.
EXPECTED_WORK: dict[tuple[WorkItemState, WorkTransition], set[WorkItemState]] = {
    (W.NONE, T.PROPOSE): {W.PROPOSAL},
    (W.NONE, T.AUTHORIZE): {W.OPEN},
    (W.PROPOSAL, T.AUTHORIZE): {W.OPEN},
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
