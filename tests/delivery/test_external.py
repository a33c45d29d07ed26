"""The simulated external tool service takes each logical operation into effect once per
Ownership Epoch, whatever the network does (§16; MWP-WRK-031)."""

from __future__ import annotations

import pytest

from mwp_local.agents.worker.slots import ExternalCall, attempt_key, execution_key
from mwp_local.authority.tokens import CapabilityToken
from mwp_local.drivers.external import ExternalSystem

MISSION = "urn:mwp-local:mission:m"
ITEM = "urn:mwp-local:work:m:build"
AGENT = "urn:missionweaveprotocol:agent:dev"


def _call(epoch: int, *, agent: str = AGENT, attempt: int = 1, fail: bool = False) -> ExternalCall:
    token = CapabilityToken(
        token_id=f"urn:uuid:token-{epoch}-{attempt}",
        agent_id=agent,
        session_epoch=1,
        work_item_id=ITEM,
        ownership_epoch=epoch,
        lease_id=f"urn:uuid:lease-{epoch}",
        operations=("write",),
        resources=("repo",),
        limits=(),
        issued_us=0,
        expires_us=10**18,
        value="not-a-secret-in-tests",
    )
    return ExternalCall(
        slot_id="slot-0",
        work_item_id=ITEM,
        resource="repo",
        operation="write",
        operation_id="deliverable",
        idempotency_key=attempt_key(execution_key(MISSION, ITEM, epoch), "deliverable"),
        attempt=attempt,
        token=token,
        simulated_failure=fail,
    )


def _service() -> ExternalSystem:
    return ExternalSystem(check=lambda token, operation, work_item, now: None)


def test_the_key_is_derived_from_mission_work_item_epoch_and_operation() -> None:
    assert _call(3).idempotency_key == f"{MISSION}|{ITEM}|3|deliverable"
    assert _call(3).idempotency_key != _call(4).idempotency_key


@pytest.mark.req("MWP-WRK-031")
def test_duplicates_retries_and_a_restart_take_effect_once_per_epoch() -> None:
    service = _service()
    for at in range(4):  # a duplicate, a retry, and a restarted Worker resending the same key
        service.perform(AGENT, _call(1, attempt=1 + at // 2), at)
    assert [c.outcome for c in service.calls] == ["performed"] + ["duplicate"] * 3
    service.perform(AGENT, _call(2), 10)  # reassigned under a new Ownership Epoch
    service.perform(AGENT, _call(2), 11)
    assert service.effects() == {_call(1).idempotency_key: 1, _call(2).idempotency_key: 1}


@pytest.mark.req("MWP-WRK-031")
def test_a_failed_operation_took_no_effect_and_a_refused_one_never_reaches_the_tool() -> None:
    service = _service()
    service.perform(AGENT, _call(1, fail=True), 0)
    assert service.effects() == {}
    service.perform(AGENT, _call(1), 1)  # the retry with the same key now takes effect
    service.perform("urn:missionweaveprotocol:agent:other", _call(1), 2)
    assert service.calls[-1].outcome == "refused" and service.calls[-1].code == "AUTH_FORBIDDEN"
    assert service.effects() == {_call(1).idempotency_key: 1}
