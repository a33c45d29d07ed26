"""The Capacity Slot lifecycle table (``agents/worker/lifecycle.py``): every row's target is
reachable from a free slot, every active state can still reach a release, a transition the table
does not allow raises naming the state and the transition (and changes nothing), and a Worker
driving a real attempt moves its slot only along the table's rows."""

from __future__ import annotations

from collections import deque

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.agents.worker.lifecycle import (
    ACTIVE_SLOT_STATES,
    SLOT_TABLE,
    SlotState,
    SlotTransition,
    SlotTransitionError,
)
from mwp_local.agents.worker.slots import Execution
from mwp_local.authority.tokens import AuthorizationService
from mwp_local.drivers.external import ExternalSystem, token_check_for

from .worker_world import act, started_world, worker

S = SlotState
ST = SlotTransition
WID = "urn:mwp-local:work:alpha-item"
REPO = [{"resource": "urn:mwp-local:repo:app", "operations": ["read", "write"]}]
SERVICE = AuthorizationService(b"s" * 32)


def _reachable(start: SlotState) -> set[SlotState]:
    """The states the table's rows lead to from ``start`` (an independent walk of the rows)."""
    seen = {start}
    todo = deque([start])
    while todo:
        state = todo.popleft()
        for row in SLOT_TABLE.rows:
            if state in row.sources:
                for target in row.targets:
                    if target not in seen:
                        seen.add(target)
                        todo.append(target)
    return seen


def _slot() -> Execution:
    return Execution(
        slot_id="slot-0",
        work_item_id=WID,
        group_id="g",
        mission_id="m",
        lease_id="lease",
        ownership_epoch=1,
        attempt=1,
        started_us=0,
        remaining_us=1_000_000,
        checkpoint_at_us=None,
        fail_at_us=None,
        block_at_us=None,
        idempotency_key="m|w|1",
    )


@pytest.mark.req("MWP-WRK-011")
def test_every_row_target_is_reachable_from_a_free_slot() -> None:
    reachable = _reachable(S.NONE)
    for row in SLOT_TABLE.rows:
        assert set(row.targets) <= reachable, row.transition
    assert reachable == set(SlotState)


@pytest.mark.req("MWP-WRK-011")
def test_every_active_state_can_still_release_its_slot_and_terminal_states_end() -> None:
    for state in ACTIVE_SLOT_STATES:
        assert _reachable(state) & SLOT_TABLE.terminal, state
    for state in SLOT_TABLE.terminal:
        assert SLOT_TABLE.allowed(state) == ()
    assert ACTIVE_SLOT_STATES | SLOT_TABLE.terminal | {S.NONE} == set(SlotState)


@pytest.mark.req("MWP-WRK-011")
def test_a_forbidden_transition_raises_naming_the_state_and_the_transition() -> None:
    slot = _slot()
    assert slot.state is S.NONE
    with pytest.raises(SlotTransitionError, match="'none': 'submit' is not a transition"):
        slot.move(ST.SUBMIT)
    slot.move(ST.START)
    assert slot.state is S.RUNNING
    with pytest.raises(SlotTransitionError, match=r"'running': 'submit'.*allowed: .*checkpoint"):
        slot.move(ST.SUBMIT)
    assert slot.state is S.RUNNING  # nothing changed
    with pytest.raises(SlotTransitionError, match="must name its target"):
        slot.move(ST.EXTERNAL_ANSWERED)
    with pytest.raises(SlotTransitionError, match="not 'submitted'"):
        slot.move(ST.EXTERNAL_ANSWERED, S.SUBMITTED)
    assert slot.state is S.RUNNING
    slot.move(ST.LOSE)
    with pytest.raises(SlotTransitionError, match=r"'lost': 'start'.*allowed: nothing"):
        slot.move(ST.START)


@pytest.mark.req("MWP-WRK-011")
def test_a_worker_moves_its_slot_only_along_the_rows_from_start_to_submission(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    moves: list[tuple[SlotState, SlotTransition, SlotState]] = []
    original = Execution.move

    def recording(self: Execution, transition: SlotTransition, target: SlotState | None = None):  # type: ignore[no-untyped-def]
        before = self.state
        original(self, transition, target)
        moves.append((before, transition, self.state))

    monkeypatch.setattr(Execution, "move", recording)
    world = started_world()
    world.ok(
        "coordinator",
        "work.authorize",
        {"workItemId": WID, "contract": world.contract(allowedResources=REPO)},
    )
    world.ok(
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "agentId": world.org.get("worker-a").id,
            "expiresAt": world.at(300),
            "selectionBasis": world.basis(),
        },
    )
    runtime = worker(world)
    act(world, runtime)
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    slot = policy.slots[WID]
    slot.remaining_us, slot.checkpoint_at_us = 200_000_000, None
    for token_request in policy.token_requests(world.now_us):
        token = SERVICE.issue(
            world.state,
            agent_id=runtime.member.id,
            lease_id=token_request.lease_id,
            now_us=world.now_us,
            operations=token_request.operations,
        )
        policy.grant_token(token_request.slot_id, token)
    world.advance(200)
    act(world, runtime)
    assert slot.state is S.AWAITING_EXTERNAL  # the driver has not performed the operation yet

    def check(token, operation, now_us):  # type: ignore[no-untyped-def]
        SERVICE.check(world.state, token, now_us=now_us, operation=operation)

    external = ExternalSystem(check=token_check_for(check))
    for call in policy.external_calls(world.now_us):
        record = external.perform(runtime.member.id, call, world.now_us)
        policy.on_external(call, ok=record.ok, refused=record.outcome == "refused")
    act(world, runtime)
    assert WID not in policy.slots
    assert world.state.work_items[WID].state == "submitted"
    assert [(a, t, b) for a, t, b in moves] == [
        (S.NONE, ST.START, S.RUNNING),
        (S.RUNNING, ST.AWAIT_EXTERNAL, S.AWAITING_EXTERNAL),
        (S.AWAITING_EXTERNAL, ST.EXTERNAL_ANSWERED, S.PRODUCING),
        (S.PRODUCING, ST.PRODUCE, S.PUBLISHING),
        (S.PUBLISHING, ST.SUBMIT, S.SUBMITTED),
    ]
    for before, transition, after in moves:
        assert after in SLOT_TABLE.lookup(before, transition).targets
