"""Isolated execution slots (MWP-WRK-011): each slot holds its own Mission context, capability
token, checkpoint, tool budget and side-effect keys; one slot cannot reach another's token or
checkpoint, and a token of one slot is refused for another slot's WorkItem by the Authorization
Service. The Agent Card's maximum concurrency bounds the slots; Presence reports capacity."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.agents.worker.slots import attempt_key
from mwp_local.authority.tokens import AuthorizationService
from mwp_local.drivers.external import ExternalSystem, token_check_for

from ..official_schemas import problems
from .worker_world import GROUP, World, act, started_world, worker

G2 = "urn:missionweaveprotocol:group:beta"
M2 = "urn:missionweaveprotocol:mission:beta"
WID = "urn:mwp-local:work:alpha-item"
WID2 = "urn:mwp-local:work:beta-item"
REPO = [{"resource": "urn:mwp-local:repo:app", "operations": ["read", "write"]}]
SERVICE = AuthorizationService(b"s" * 32)


def _two_slots() -> tuple[World, AgentRuntime, WorkerPolicy]:
    """worker-a runs one item of each of two Missions, one per slot."""
    world = started_world()
    world.create_mission(group=G2, mission=M2)
    for wid, group in ((WID, GROUP), (WID2, G2)):
        world.ok(
            "coordinator",
            "work.authorize",
            {"workItemId": wid, "contract": world.contract(allowedResources=REPO)},
            group=group,
        )
        world.ok(
            "coordinator",
            "work.offer",
            {
                "workItemId": wid,
                "agentId": world.org.get("worker-a").id,
                "expiresAt": world.at(300),
                "selectionBasis": world.basis(),
            },
            group=group,
        )
    runtime = worker(world)
    act(world, runtime)
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    assert {s.work_item_id for s in policy.slots.values()} == {WID, WID2}
    return world, runtime, policy


def _serve(world: World, runtime: AgentRuntime, external: ExternalSystem | None = None) -> None:
    """What the driver does between actions: tokens from the service, external operations."""
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    for request in policy.token_requests(world.now_us):
        token = SERVICE.issue(
            world.state,
            agent_id=runtime.member.id,
            lease_id=request.lease_id,
            now_us=world.now_us,
            operations=request.operations,
        )
        policy.grant_token(request.slot_id, token)
    if external is not None:
        for call in policy.external_calls(world.now_us):
            record = external.perform(runtime.member.id, call, world.now_us)
            policy.on_external(call, ok=record.ok, refused=record.outcome == "refused")


def _external(world: World) -> ExternalSystem:
    def check(token, operation, now_us):  # type: ignore[no-untyped-def]
        SERVICE.check(world.state, token, now_us=now_us, operation=operation)

    return ExternalSystem(check=token_check_for(check))


def _finish_soon(policy: WorkerPolicy) -> None:
    """Both slots reach their deliverable operation after 200 s (no checkpoint before)."""
    for slot in policy.slots.values():
        slot.remaining_us = 200_000_000
        slot.checkpoint_at_us = None


def _slot_of(policy: WorkerPolicy, wid: str) -> str:
    return policy.slots[wid].slot_id


@pytest.mark.req("MWP-WRK-011")
def test_each_slot_holds_only_its_own_mission_context_token_budget_and_keys() -> None:
    world, runtime, policy = _two_slots()
    _serve(world, runtime)
    _finish_soon(policy)
    world.advance(200)
    external = _external(world)
    _serve(world, runtime, external)
    views = {wid: policy.slot_view(_slot_of(policy, wid)) for wid in (WID, WID2)}
    for wid, mission, group in ((WID, "mission:alpha", GROUP), (WID2, "mission:beta", G2)):
        view = views[wid]
        assert view is not None
        assert view.work_item_id == wid and view.group_id == group
        assert view.mission_id.endswith(mission)
        item = world.state.work_items[wid]
        assert view.lease_id == item.execution_lease_id
        assert view.token is not None
        assert (view.token.work_item_id, view.token.lease_id) == (wid, view.lease_id)
        assert view.side_effect_keys == (
            attempt_key(f"{item.mission_id}|{wid}|{item.ownership_epoch}", "deliverable"),
        )
        assert view.tool_budget["toolCalls"] == 4.0  # 5 in the contract, 1 used by this slot
    first, second = views[WID], views[WID2]
    assert first is not None and second is not None
    assert first.token != second.token and first.side_effect_keys != second.side_effect_keys
    # each slot performed its own call once; the order follows the offer IDs, which are derived
    assert sorted(c.work_item_id for c in external.performed()) == sorted([WID, WID2])


@pytest.mark.req("MWP-WRK-011")
def test_a_slot_refuses_a_token_bound_to_another_slots_work_item() -> None:
    world, runtime, policy = _two_slots()
    _serve(world, runtime)
    mine, other = _slot_of(policy, WID), _slot_of(policy, WID2)
    other_view = policy.slot_view(other)
    assert other_view is not None and other_view.token is not None
    with pytest.raises(ValueError, match="not to this slot"):
        policy.grant_token(mine, other_view.token)
    view = policy.slot_view(mine)
    assert view is not None and view.token is not None and view.token.work_item_id == WID


@pytest.mark.req("MWP-WRK-011")
def test_the_authorization_service_refuses_one_slots_token_for_another_slots_work_item() -> None:
    world, runtime, policy = _two_slots()
    _serve(world, runtime)
    _finish_soon(policy)
    world.advance(200)
    [own, theirs] = sorted(policy.external_calls(world.now_us), key=lambda c: c.work_item_id)
    assert own.work_item_id == WID and theirs.work_item_id == WID2
    borrowed = type(own)(**{**_fields(own), "work_item_id": WID2, "token": own.token})
    external = _external(world)
    refused = external.perform(runtime.member.id, borrowed, world.now_us)
    assert refused.outcome == "refused" and refused.code == "AUTH_FORBIDDEN"
    performed = external.perform(runtime.member.id, theirs, world.now_us)
    assert performed.outcome == "performed" and performed.ok


def _fields(call: object) -> dict[str, object]:
    return {name: getattr(call, name) for name in call.__dataclass_fields__}  # type: ignore[attr-defined]


@pytest.mark.req("MWP-WRK-011")
def test_a_slot_sees_only_its_own_checkpoint_as_a_frozen_copy() -> None:
    world, runtime, policy = _two_slots()
    policy.slots[WID].checkpoint_at_us = world.now_us + 120_000_000
    world.advance(120)
    sent = act(world, runtime, ("work.checkpoint",))
    assert [i.payload["workItemId"] for i in sent] == [WID]
    act(world, runtime, ("work.start",))  # WID resumes, from its own checkpoint
    resumed = policy.slot_view(_slot_of(policy, WID))
    untouched = policy.slot_view(_slot_of(policy, WID2))
    assert resumed is not None and untouched is not None
    assert resumed.checkpoint is not None and untouched.checkpoint is None
    assert resumed.checkpoint["completedUs"] == 120_000_000
    assert resumed.checkpoint == world.state.work_items[WID].last_checkpoint
    with pytest.raises(TypeError):
        resumed.checkpoint["completedUs"] = 0  # type: ignore[index]
    with pytest.raises(FrozenInstanceError):
        resumed.token = untouched.token  # type: ignore[misc]
    assert policy.slots[WID].checkpoint is not resumed.checkpoint


@pytest.mark.req("MWP-WRK-011")
def test_the_slots_are_bounded_by_the_declared_maximum_concurrency() -> None:
    world = started_world()
    for n in range(3):
        world.authorize(f"{WID}-{n}")
        world.offer(f"{WID}-{n}")
    runtime = worker(world, max_concurrency=2, queue_capacity=5)
    act(world, runtime)
    policy = unwrap(runtime.policy)
    assert isinstance(policy, WorkerPolicy)
    assert len(policy.slots) == 2 and {s.slot_id for s in policy.slots.values()} == {
        "slot-0",
        "slot-1",
    }
    presence = policy.presence(runtime.view, world.now_us)
    assert problems("presence-record", presence) == []
    assert presence["capacity"] == {
        "maxSlots": 2,
        "activeSlots": 2,
        "availableSlots": 0,
        "queuedItems": 1,
    }
    assert presence["status"] == "busy"
    assert "urn:mwp-local:work" not in str(presence) and GROUP not in str(presence)
