"""Every section-19 code the sandbox declares is produced (§19, issue 21 point 7).

``PRODUCERS`` maps each ``ErrorCode`` to a scenario that makes the sandbox itself refuse with it:
a Command a careless or hostile client sends to the Group Authority (refused with that code and
changing nothing: ``World.refuse``), or a delivery-bus session that falls behind or is flooded.
The test is parametrized over the enumeration, not over the registry, so a code added to
``ErrorCode`` without a scenario fails, and a scenario whose component stops producing its code
fails too. The detailed tests of each rule live beside their rule; this is the catalogue.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

from mwp_local.agents.base import BasePolicy
from mwp_local.agents.bus_client import BusClient
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.authority import AuthorityConfig, RatePolicy
from mwp_local.authority import registry as handler_registry
from mwp_local.delivery.bus import DeliveryBus
from mwp_local.delivery.config import DeliveryConfig
from mwp_local.delivery.snapshots import SnapshotBundle, build_snapshot
from mwp_local.protocol.documents.kinds import ExtensionCommandKind as XC
from mwp_local.protocol.errors import ErrorCode
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.store.agent_store import MemoryLocalStore

from ..delivery.helpers import SlowReceiver
from .world import GROUP, World

WID = "urn:mwp-local:work:impl"
POST = "message.post"
T0 = 1_784_073_600_000_000  # 2026-07-15T00:00:00Z, the World's start


def _text(text: str = "hi") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


def _world(config: AuthorityConfig | None = None) -> World:
    w = World(config=config)
    w.bootstrap()
    w.create_mission()
    return w


def _refused_bytes(w: World, data: bytes) -> str:
    """Deliver hand-made bytes; the code they were refused with (nothing may change)."""
    before = w.snapshot()
    outcome = w.deliver(data)
    assert not outcome.ok, "accepted"
    assert w.snapshot() == before
    return outcome.error.code.value  # type: ignore[union-attr]


def _resigned(w: World, who: str, data: bytes, **changes: Any) -> bytes:
    """``data`` with members changed (``None`` removes one) and signed again by ``who``."""
    doc = parse_strict(data)
    doc.pop("signature")
    for name, value in changes.items():
        if value is None:
            doc.pop(name, None)
        else:
            doc[name] = value
    return canonicalize(w.org.sign("command", w.org.get(who), doc))


def _code(w: World, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any) -> str:
    return w.refuse(code, who, kind, payload, **over).error.code.value


def _queued(w: World, agent: str = "worker-a") -> None:
    w.authorize(WID)
    w.offer(WID, agent)
    w.accept(WID, agent)


# --------------------------------------------------------------------------- Command scenarios


def _unsupported_version() -> str:
    w = _world()
    return _code(
        w, "UNSUPPORTED_VERSION", "mission-owner", POST, _text(), extra={"protocolVersion": "0.2"}
    )


def _auth_required() -> str:
    w = World()
    for agent in w.org.agents():
        card = w.org.agent_card(agent, issued_at="2026-07-15T00:00:00Z")
        kind = "ext.missionweaveprotocol.registry.agent_card_register"
        w.ok("control-plane", kind, {"agentCard": card}, group=None)
        if agent.id != w.org.get("worker-b").id:  # worker-b never opens a Session
            kind = "ext.missionweaveprotocol.identity.session_open"
            w.ok("control-plane", kind, {"agentId": agent.id}, group=None)
    w.create_mission()
    return _code(w, "AUTH_REQUIRED", "worker-b", POST, _text(), session_epoch=1, membership_epoch=1)


def _auth_invalid_signature() -> str:
    w = _world()
    doc = parse_strict(w.command("mission-owner", POST, _text()))
    value = doc["signature"]["value"]
    doc["signature"]["value"] = ("A" if value[5] != "A" else "B").join((value[:5], value[6:]))
    return _refused_bytes(w, canonicalize(doc))


def _auth_stale_session() -> str:
    w = _world()
    _queued(w)
    w.start(WID)
    agent = w.org.get("worker-a").id
    old = w.state.agents[agent].session_epoch
    w.ok(
        "control-plane",
        "ext.missionweaveprotocol.identity.session_open",
        {"agentId": agent},
        group=None,
    )
    return _code(w, "AUTH_STALE_SESSION", "worker-a", POST, _text(), session_epoch=old)


def _auth_stale_coordinator() -> str:
    w = _world()
    w.ok(
        "mission-owner",
        "mission.assign_coordinator",
        {"coordinatorAgentId": w.org.get("reviewer").id},
    )
    payload = {"workItemId": WID, "contract": w.contract()}
    return _code(
        w, "AUTH_STALE_COORDINATOR", "coordinator", "work.authorize", payload, coordinator_epoch=1
    )


def _auth_forbidden() -> str:
    w = _world()
    _queued(w)
    payload = {"workItemId": "urn:mwp-local:work:other", "contract": w.contract()}
    return _code(w, "AUTH_FORBIDDEN", "worker-a", "work.authorize", payload)


def _group_not_found() -> str:
    w = _world()
    return _code(
        w,
        "GROUP_NOT_FOUND",
        "mission-owner",
        POST,
        _text(),
        group="urn:missionweaveprotocol:group:nowhere",
        membership_epoch=1,
    )


def _membership_required() -> str:
    w = _world()
    return _code(w, "MEMBERSHIP_REQUIRED", "reviewer", POST, _text(), membership_epoch=1)


def _membership_stale() -> str:
    w = _world()
    return _code(w, "MEMBERSHIP_STALE", "mission-owner", POST, _text(), membership_epoch=7)


def _schema_validation_failed() -> str:
    w = _world()
    data = w.command("mission-owner", POST, _text())
    return _refused_bytes(w, _resigned(w, "mission-owner", data, correlationId=None))


def _invalid_command() -> str:
    w = _world()
    return _code(w, "INVALID_COMMAND", "mission-owner", POST, {"mentions": []})


def _invalid_state_transition() -> str:
    w = _world()
    w.authorize(WID)
    w.offer(WID)
    payload = {"workItemId": WID, "ownershipEpoch": 1}
    return _code(w, "INVALID_STATE_TRANSITION", "worker-a", "work.start", payload)


def _revision_conflict() -> str:
    w = _world()
    w.authorize(WID)
    w.offer(WID)
    revision = w.state.work_items[WID].revision
    payload = {"workItemId": WID}
    return _code(
        w,
        "REVISION_CONFLICT",
        "worker-a",
        "work.accept_offer",
        payload,
        expected_revision=revision - 1,
    )


def _action_id_collision() -> str:
    w = _world()
    action = "urn:uuid:00000000-0000-4000-8000-0000000000aa"
    w.ok("mission-owner", POST, _text("first"), action_id=action)
    return _code(w, "ACTION_ID_COLLISION", "mission-owner", POST, _text("other"), action_id=action)


def _unknown_critical_extension() -> str:
    w = _world()
    entry = {"version": "1.0.0", "critical": True, "data": {}}
    return _code(
        w,
        "UNKNOWN_CRITICAL_EXTENSION",
        "mission-owner",
        POST,
        _text(),
        extra={"extensions": {"urn:example:extension:unknown": entry}},
    )


def _work_contract_incomplete() -> str:
    w = _world()
    contract = w.contract()
    del contract["goal"]
    payload = {"workItemId": WID, "contract": contract}
    return _code(w, "WORK_CONTRACT_INCOMPLETE", "coordinator", "work.authorize", payload)


def _work_offer_expired() -> str:
    w = _world()
    w.authorize(WID)
    w.offer(WID, seconds=10)
    w.advance(11)
    revision = w.state.work_items[WID].revision
    payload = {"workItemId": WID}
    return _code(
        w,
        "WORK_OFFER_EXPIRED",
        "worker-a",
        "work.accept_offer",
        payload,
        expected_revision=revision,
    )


def _work_already_owned() -> str:
    w = _world()
    w.authorize(WID, requestedUrgency="critical")
    offers = [{"agentId": w.org.get(a).id, "expiresAt": w.at(60)} for a in ("worker-a", "worker-b")]
    w.ok(
        "coordinator",
        "work.offer",
        {"workItemId": WID, "offers": offers, "selectionBasis": w.basis()},
    )
    revision = w.state.work_items[WID].revision
    w.ok("worker-b", "work.accept_offer", {"workItemId": WID}, expected_revision=revision)
    payload = {"workItemId": WID}
    return _code(
        w,
        "WORK_ALREADY_OWNED",
        "worker-a",
        "work.accept_offer",
        payload,
        expected_revision=revision,
    )


def _work_lease_expired() -> str:
    w = _world()
    _queued(w)
    w.start(WID)
    w.advance(w.authority.config.execution_lease_us / 1e6)
    kind = XC.WORK_EXECUTION_LEASE_RENEW.value
    return _code(w, "WORK_LEASE_EXPIRED", "worker-a", kind, w.lease(WID))


def _work_stale_ownership() -> str:
    w = _world()
    _queued(w)
    w.start(WID)
    old = w.lease(WID)
    w.advance(w.authority.config.execution_lease_us / 1e6 + 1)
    w.offer(WID, "worker-b")
    w.accept(WID, "worker-b")
    w.start(WID, "worker-b")
    payload = {**old, "checkpoint": {"progress": w.progress()}}
    return _code(w, "WORK_STALE_OWNERSHIP", "worker-a", "work.checkpoint", payload)


def _approval_required() -> str:
    w = _world()
    w.authorize(WID, executionApproval="human_required", sideEffectRisk="high_risk")
    w.offer(WID)
    w.accept(WID)
    payload = {"workItemId": WID, "ownershipEpoch": 1}
    return _code(w, "APPROVAL_REQUIRED", "worker-a", "work.start", payload)


def _budget_exceeded() -> str:
    w = _world()
    contract = w.contract(budget={"currency": "EUR", "financialLimit": 1000})
    payload = {"workItemId": WID, "contract": contract}
    return _code(w, "BUDGET_EXCEEDED", "coordinator", "work.authorize", payload)


def _rate_limited() -> str:
    w = _world(
        AuthorityConfig(
            rate_policy=RatePolicy(max_commands=1, window_us=60_000_000, kinds=frozenset({POST}))
        )
    )
    w.ok("mission-owner", POST, _text("one"))
    return _code(w, "RATE_LIMITED", "mission-owner", POST, _text("two"))


def _protocol_violation() -> str:
    w = _world()
    return _refused_bytes(w, b'{"protocolVersion": "0.1", "protocolVersion": "0.1"}')


def _internal_error() -> str:
    w = _world()
    spec = handler_registry.HANDLERS[POST]

    def broken(ctx: Any, cmd: Any) -> Any:
        raise ZeroDivisionError("an injected fault")
        yield  # pragma: no cover  (a generator, as handlers are)

    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(handler_registry._HANDLERS, POST, replace(spec, handler=broken))
        return _code(w, "INTERNAL_ERROR", "mission-owner", POST, _text())


# --------------------------------------------------------------------------- delivery scenarios


class _Idle(BasePolicy):
    """A receiver's policy that only listens."""


def _group_events() -> tuple[World, list[dict[str, Any]]]:
    w = _world()
    for i in range(12):
        w.ok("mission-owner", POST, _text(f"message {i}"))
    return w, [copy.deepcopy(e) for e in w.events if e.get("groupId") == GROUP]


def _bus(w: World, config: DeliveryConfig) -> DeliveryBus:
    def snapshot(group: str, events: Sequence[dict[str, Any]], at: str) -> SnapshotBundle:
        return build_snapshot(w.org, group, events, at, online_window=4)

    return DeliveryBus(
        config, seed=1, organization_id=w.org.organization_id, make_snapshot=snapshot
    )


def _error_frames(frames: list[dict[str, Any]]) -> list[str]:
    return [f["error"]["code"] for f in frames if f["frameType"] == "ERROR"]


def _cursor_too_old() -> str:
    w, events = _group_events()
    bus = _bus(w, DeliveryConfig(online_window=4))
    bus.publish(events, T0)
    runtime = AgentRuntime(w.org, w.org.get("mission-owner"), _Idle(), local=MemoryLocalStore())
    client = BusClient(runtime, fetch=bus.snapshot)
    received: list[dict[str, Any]] = []
    original = client.receive

    def spy(
        frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        received.append(frame)
        return original(frame, now_us, event_text)

    client.receive = spy  # type: ignore[method-assign]
    bus.attach(client, T0)
    for _ in range(50):
        bus.pump(T0)
    (code,) = set(_error_frames(received))
    return code


def _backpressure() -> str:
    w, events = _group_events()
    bus = _bus(w, DeliveryConfig(group_buffer=3, frames_per_round=2, validate_frames=False))
    # A member of the Group (delivery goes to members only, §8): one that acknowledges nothing.
    slow = SlowReceiver(w.org.get("mission-owner").id, [])
    bus.attach(slow, T0)
    bus.publish(events, T0)
    for _ in range(5):
        bus.pump(T0)
    (code,) = set(_error_frames(slow.frames))
    return code


#: Each section-19 code → the scenario that makes the sandbox produce it.
PRODUCERS: dict[ErrorCode, Callable[[], str]] = {
    ErrorCode.UNSUPPORTED_VERSION: _unsupported_version,
    ErrorCode.AUTH_REQUIRED: _auth_required,
    ErrorCode.AUTH_INVALID_SIGNATURE: _auth_invalid_signature,
    ErrorCode.AUTH_STALE_SESSION: _auth_stale_session,
    ErrorCode.AUTH_STALE_COORDINATOR: _auth_stale_coordinator,
    ErrorCode.AUTH_FORBIDDEN: _auth_forbidden,
    ErrorCode.GROUP_NOT_FOUND: _group_not_found,
    ErrorCode.MEMBERSHIP_REQUIRED: _membership_required,
    ErrorCode.MEMBERSHIP_STALE: _membership_stale,
    ErrorCode.SCHEMA_VALIDATION_FAILED: _schema_validation_failed,
    ErrorCode.INVALID_COMMAND: _invalid_command,
    ErrorCode.INVALID_STATE_TRANSITION: _invalid_state_transition,
    ErrorCode.REVISION_CONFLICT: _revision_conflict,
    ErrorCode.ACTION_ID_COLLISION: _action_id_collision,
    ErrorCode.UNKNOWN_CRITICAL_EXTENSION: _unknown_critical_extension,
    ErrorCode.WORK_CONTRACT_INCOMPLETE: _work_contract_incomplete,
    ErrorCode.WORK_OFFER_EXPIRED: _work_offer_expired,
    ErrorCode.WORK_ALREADY_OWNED: _work_already_owned,
    ErrorCode.WORK_LEASE_EXPIRED: _work_lease_expired,
    ErrorCode.WORK_STALE_OWNERSHIP: _work_stale_ownership,
    ErrorCode.APPROVAL_REQUIRED: _approval_required,
    ErrorCode.BUDGET_EXCEEDED: _budget_exceeded,
    ErrorCode.RATE_LIMITED: _rate_limited,
    ErrorCode.BACKPRESSURE: _backpressure,
    ErrorCode.CURSOR_TOO_OLD: _cursor_too_old,
    ErrorCode.PROTOCOL_VIOLATION: _protocol_violation,
    ErrorCode.INTERNAL_ERROR: _internal_error,
}


@pytest.mark.parametrize("code", list(ErrorCode), ids=lambda c: c.value)
def test_every_declared_code_is_produced_by_the_sandbox(code: ErrorCode) -> None:
    producer = PRODUCERS.get(code)
    assert producer is not None, f"no scenario produces {code.value}: add one to PRODUCERS"
    assert producer() == code.value


def test_the_catalogue_names_only_declared_codes() -> None:
    assert set(PRODUCERS) <= set(ErrorCode)
    assert json.dumps(sorted(PRODUCERS)) == json.dumps(sorted(ErrorCode))
