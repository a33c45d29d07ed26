"""Capability tokens (§12, MWP-WRK-014): bound to the Execution Lease, never in the log."""

from __future__ import annotations

import dataclasses

import pytest

from mwp_local.authority.tokens import AuthorizationService
from mwp_local.protocol.errors import ErrorCode, ProtocolError

from .world import World

WID = "urn:mwp-local:work:impl"
RESOURCES = [{"resource": "urn:mwp-local:repo:app", "operations": ["git.push", "git.read"]}]


@pytest.fixture
def world() -> World:
    w = World()
    w.bootstrap()
    w.create_mission()
    w.authorize(WID, allowedResources=RESOURCES)
    w.offer(WID)
    w.accept(WID)
    w.start(WID)
    return w


SERVICE = AuthorizationService(b"k" * 32)


def _issue(w: World, **kw: object):  # type: ignore[no-untyped-def]
    lease = w.state.work_items[WID].execution_lease_id
    return SERVICE.issue(
        w.state, agent_id=w.org.get("worker-a").id, lease_id=lease, now_us=w.now_us, **kw
    )


def _code(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(ProtocolError) as info:
        call()
    return info.value.code.value


@pytest.mark.req("MWP-WRK-014")
def test_a_token_is_bound_to_the_lease_and_expires_no_later_than_it(world: World) -> None:
    token = _issue(world)
    lease = world.state.leases[token.lease_id]
    assert token.expires_us <= lease.expires_us
    assert token.operations == ("git.push", "git.read")
    SERVICE.check(world.state, token, now_us=world.now_us, operation="git.push")
    assert (
        _code(
            lambda: SERVICE.check(world.state, token, now_us=lease.expires_us, operation="git.push")
        )
        == "WORK_LEASE_EXPIRED"
    )


@pytest.mark.req("MWP-WRK-014")
def test_releasing_the_lease_kills_its_tokens(world: World) -> None:
    token = _issue(world)
    world.ok(
        "worker-a",
        "work.checkpoint",
        {**world.lease(WID), "checkpoint": {"progress": world.progress()}},
    )
    assert (
        _code(lambda: SERVICE.check(world.state, token, now_us=world.now_us, operation="git.read"))
        == "WORK_LEASE_EXPIRED"
    )


@pytest.mark.req("MWP-WRK-014")
def test_a_replacement_session_kills_the_old_runtimes_tokens(world: World) -> None:
    token = _issue(world)
    world.ok(
        "control-plane",
        "ext.missionweaveprotocol.identity.session_open",
        {"agentId": world.org.get("worker-a").id},
        group=None,
    )
    assert (
        _code(lambda: SERVICE.check(world.state, token, now_us=world.now_us, operation="git.read"))
        == "WORK_LEASE_EXPIRED"
    )


@pytest.mark.req("MWP-WRK-014")
def test_tokens_can_be_narrowed_but_never_widened_or_forged(world: World) -> None:
    narrow = _issue(world, operations=["git.read"])
    SERVICE.check(world.state, narrow, now_us=world.now_us, operation="git.read")
    assert (
        _code(lambda: SERVICE.check(world.state, narrow, now_us=world.now_us, operation="git.push"))
        == "AUTH_FORBIDDEN"
    )
    assert _code(lambda: _issue(world, operations=["git.force-push"])) == "AUTH_FORBIDDEN"
    widened = dataclasses.replace(narrow, operations=("git.push", "git.read"))
    assert (
        _code(
            lambda: SERVICE.check(world.state, widened, now_us=world.now_us, operation="git.push")
        )
        == "AUTH_FORBIDDEN"
    )


@pytest.mark.req("MWP-WRK-014")
def test_only_the_lease_holder_gets_a_token(world: World) -> None:
    lease = world.state.work_items[WID].execution_lease_id
    assert (
        _code(
            lambda: SERVICE.issue(
                world.state,
                agent_id=world.org.get("coordinator").id,
                lease_id=lease,
                now_us=world.now_us,
            )
        )
        == ErrorCode.AUTH_FORBIDDEN.value
    )


@pytest.mark.req("MWP-WRK-014")
def test_token_values_never_appear_in_events_or_messages(world: World) -> None:
    token = _issue(world)
    assert token.value not in repr(token)
    world.ok(
        "worker-a",
        "work.checkpoint",
        {**world.lease(WID), "checkpoint": {"progress": world.progress()}},
    )
    text = "".join(str(e) for e in world.events)
    assert token.value not in text and token.token_id not in text
