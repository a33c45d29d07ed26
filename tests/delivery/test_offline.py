"""Bounded offline execution (§11.5; MWP-WRK-020, 021, 022): what a Worker continues through a
Group-service outage, the critical binding its buffered Commands carry, how they are rebased,
and how the Authority reconciles or refuses them, leaving nothing behind when it refuses."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import Intent, unwrap
from mwp_local.agents.worker.lifecycle import SlotState
from mwp_local.agents.worker.offline import Buffered
from mwp_local.authority import Accepted
from mwp_local.authority.offline import BINDING_MEMBERS, BOUNDED_OFFLINE, MAX_GRACE_US, check_window
from mwp_local.authority.pipeline import Outcome
from mwp_local.drivers.bus import OfflineRecord
from mwp_local.drivers.clock import timestamp
from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.timestamps import format_utc, parse_timestamp

from ..official_schemas import problems
from .helpers import projections, sample, untouched

WALL = "wallClockSeconds"


@dataclass
class Offline:
    sandbox: Sandbox
    record: OfflineRecord

    def buffered(self, agent: str) -> Buffered:
        return next(b for b in self.record.buffered if b.agent == agent)

    def submit(self, agent: str, intent: Intent) -> tuple[bytes, Outcome]:
        runtime = self.sandbox.runtime(agent)
        now = self.sandbox.clock.now_us()
        data = runtime.command(intent, format_utc(now))
        return data, self.sandbox.log.submit(data, timestamp(now))


def _outage_reached(
    raw: dict[str, Any], tmp_path: Path, at_outage: Callable[[Sandbox], None] | None = None
) -> Offline:
    """The sample mission run to just after its outage, with the buffered Commands held back;
    ``at_outage`` sees the Sandbox as the Workers go offline."""
    sandbox = Sandbox(tmp_path / "s", parse(raw, name="offline"), worker_files=False)
    assert sandbox.delivery is not None
    driver = sandbox.delivery
    captured: list[OfflineRecord] = []
    original = driver.go_offline

    def go_offline(runtimes: Any, outage: Any) -> OfflineRecord:
        if at_outage is not None:
            at_outage(sandbox)
        record = original(runtimes, outage)
        captured.append(record)
        driver.reconcile.clear()  # the test submits them itself
        return record

    driver.go_offline = go_offline  # type: ignore[method-assign]
    for runtime in sandbox.runtimes:
        # once the outage is reached nobody acts: the test submits the buffered Commands
        # first (which agent the seeded step would pick next is no part of the story)
        inner = runtime.intents
        runtime.intents = (  # type: ignore[method-assign]
            lambda now_us, inner=inner, **options: [] if captured else inner(now_us, **options)
        )
    sandbox.run(until=lambda _sb: bool(captured))
    assert sandbox.clock.now_us() >= captured[0].outage.until_us
    return Offline(sandbox=sandbox, record=captured[0])


@pytest.fixture
def offline(tmp_path: Path) -> Offline:
    return _outage_reached(sample("delivery"), tmp_path)


def _with_binding(intent: Intent, **changes: Any) -> Intent:
    extensions = copy.deepcopy(intent.overrides["extra"]["extensions"])
    data = extensions[BOUNDED_OFFLINE]["data"]
    for key, value in changes.items():
        if value is None:
            del data[key]
        else:
            data[key] = value
    return replace(intent, overrides={"extra": {"extensions": extensions}})


def _refused(offline: Offline, agent: str, intent: Intent, code: str) -> ProtocolError:
    before = untouched(offline.sandbox)
    _data, outcome = offline.submit(agent, intent)
    assert not outcome.ok
    error = outcome.error  # type: ignore[union-attr]
    assert error.code.value == code, error.explanation
    assert error.explanation and len(error.explanation) > 40  # a learner-friendly reason
    assert untouched(offline.sandbox) == before  # log, receipts and projections unchanged
    return error


@pytest.mark.req("MWP-WRK-020")
def test_only_already_active_reversible_work_continues_offline_and_nothing_new_starts(
    offline: Offline,
) -> None:
    record = offline.record
    assert {b.agent for b in record.buffered} == {"ana", "dev"}
    sandbox = offline.sandbox
    for b in record.buffered:
        item = sandbox.log.state.work_items[b.work_item_id]
        assert str(item.state) == "active" and item.contract["sideEffectRisk"] in (
            "none",
            "reversible",
        )
    start, end = record.outage.at_us, record.outage.until_us
    assert not [r for r in sandbox.history if start <= parse_timestamp(r.at).epoch_micros < end]
    assert not [c for c in sandbox.external.calls if start <= c.at_us < end]


@pytest.mark.req("MWP-WRK-020")
def test_work_with_external_side_effects_stops_during_an_outage(tmp_path: Path) -> None:
    raw = sample("delivery")
    for work in raw["missions"][0]["work"]:
        if work["id"] == "survey":
            work["risk"] = "external"
    offline = _outage_reached(raw, tmp_path)
    assert [b.agent for b in offline.record.buffered] == ["dev"]
    (stopped,) = offline.record.stopped
    assert stopped.agent == "ana" and "not reversible" in stopped.why


@pytest.mark.req("MWP-WRK-020")
def test_a_slot_past_its_running_state_is_not_checkpointed_offline(tmp_path: Path) -> None:
    """In threads mode a Worker may go offline after its work's time was up (slot
    ``producing``): a checkpoint may leave only a running slot, so that slot waits for the
    service instead of buffering one (which, accepted on reconnect, broke the slot table)."""

    def finished(sandbox: Sandbox) -> None:
        (slot,) = unwrap(sandbox.runtime("dev").policy).slots.values()
        assert slot.state == SlotState.RUNNING
        slot.state = SlotState.PRODUCING

    offline = _outage_reached(sample("delivery"), tmp_path, finished)
    assert [b.agent for b in offline.record.buffered] == ["ana"]
    (stopped,) = offline.record.stopped
    assert stopped.agent == "dev" and "producing" in stopped.why


@pytest.mark.req("MWP-WRK-021")
def test_a_buffered_command_carries_the_critical_binding_and_is_rebased_on_reconnect(
    offline: Offline,
) -> None:
    buffered = offline.buffered("ana")
    original = buffered.original
    assert problems("command", original) == []
    entry = original["extensions"][BOUNDED_OFFLINE]
    assert entry["critical"] is True and set(entry["data"]) == set(BINDING_MEMBERS)
    assert set(entry["data"]["usageDelta"]) == {
        "financial",
        "modelTokens",
        "toolCalls",
        "computeSeconds",
        WALL,
        "externalSideEffects",
    }
    assert original["issuedAt"] == entry["data"]["bufferedAt"]
    data, outcome = offline.submit("ana", buffered.intent)
    assert isinstance(outcome, Accepted), outcome
    rebased = parse_strict(data)
    assert rebased["extensions"] == original["extensions"]  # the binding is preserved
    assert rebased["actionId"] != original["actionId"]
    assert rebased["issuedAt"] == format_utc(offline.sandbox.clock.now_us())
    state = offline.sandbox.log.state
    agent = state.agents[rebased["actor"]["id"]]
    membership = state.memberships[(rebased["groupId"], rebased["actor"]["id"])]
    assert rebased["sessionEpoch"] == agent.session_epoch
    assert rebased["membershipEpoch"] == membership.epoch


@pytest.mark.req("MWP-WRK-022")
def test_reconciliation_charges_the_whole_ancestry_then_applies_the_checkpoint(
    offline: Offline,
) -> None:
    buffered = offline.buffered("ana")
    state = offline.sandbox.log.state
    item = state.work_items[buffered.work_item_id]
    keys = [("work_item", item.work_item_id), ("mission", item.mission_id)]
    used_before = {k: state.budgets[k].used.get(WALL, 0) for k in keys}
    _data, outcome = offline.submit("ana", buffered.intent)
    assert isinstance(outcome, Accepted), outcome
    usage, checkpointed = outcome.event_documents
    assert usage["kind"] == "ext.missionweaveprotocol.core.resource_usage_recorded"
    assert checkpointed["kind"] == "work.checkpointed"
    assert checkpointed["sequence"] == usage["sequence"] + 1  # one transaction, charge first
    sessions = usage["payload"]["offline"]
    assert sessions["historicalSession"]["sessionEpoch"] == buffered.binding["sessionEpoch"]
    assert sessions["historicalSession"]["executionLeaseId"] == buffered.binding["executionLeaseId"]
    assert sessions["reconciliationSession"]["actionId"] == outcome.receipt.action_id  # type: ignore[union-attr]
    delta = buffered.binding["usageDelta"][WALL]
    state = offline.sandbox.log.state
    assert {k: state.budgets[k].used.get(WALL, 0) for k in keys} == {
        k: v + delta for k, v in used_before.items()
    }
    assert checkpointed["extensions"][BOUNDED_OFFLINE]["data"] == buffered.binding
    assert str(state.work_items[item.work_item_id].state) == "queued"


@pytest.mark.req("MWP-WRK-022")
def test_an_overflowing_offline_charge_rejects_charge_and_progress_together(
    offline: Offline,
) -> None:
    buffered = offline.buffered("dev")  # 'sketch' allows 60 wall-clock seconds
    error = _refused(offline, "dev", buffered.intent, "BUDGET_EXCEEDED")
    assert error.details["dimension"] == WALL
    item = offline.sandbox.log.state.work_items[buffered.work_item_id]
    assert str(item.state) == "active"


@pytest.mark.req("MWP-WRK-021")
@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("buffered after the grace deadline", "WORK_LEASE_EXPIRED"),
        ("grace beyond the policy bound", "WORK_LEASE_EXPIRED"),
        ("disconnected after the lease expired", "WORK_LEASE_EXPIRED"),
        ("another historical lease", "WORK_LEASE_EXPIRED"),
        ("owner changed", "WORK_STALE_OWNERSHIP"),
        ("another WorkItem", "INVALID_COMMAND"),
        ("another Conversation", "INVALID_COMMAND"),
        ("not critical", "INVALID_COMMAND"),
        ("a member missing", "INVALID_COMMAND"),
    ],
)
def test_the_authority_rejects_progress_outside_the_binding(
    offline: Offline, case: str, code: str
) -> None:
    ana, dev = offline.buffered("ana"), offline.buffered("dev")
    binding = ana.binding
    grace = parse_timestamp(binding["graceDeadline"]).epoch_micros
    expiry = parse_timestamp(binding["leaseExpiresAt"]).epoch_micros
    intent = ana.intent
    if case == "buffered after the grace deadline":
        intent = _with_binding(intent, bufferedAt=format_utc(grace + 1_000_000))
    elif case == "grace beyond the policy bound":
        intent = _with_binding(intent, graceDeadline=format_utc(expiry + MAX_GRACE_US + 1))
    elif case == "disconnected after the lease expired":
        late = format_utc(expiry + 1)
        intent = _with_binding(intent, disconnectedAt=late, bufferedAt=late)
    elif case == "another historical lease":
        intent = _with_binding(intent, executionLeaseId=dev.binding["executionLeaseId"])
    elif case == "owner changed":
        intent = _with_binding(intent, ownershipEpoch=binding["ownershipEpoch"] + 1)
    elif case == "another WorkItem":
        intent = _with_binding(intent, workItemId=dev.work_item_id)
    elif case == "another Conversation":
        extra = {**intent.overrides["extra"], "conversationId": "urn:mwp-local:conversation:x"}
        intent = replace(intent, overrides={"extra": extra})
    elif case == "not critical":
        extensions = copy.deepcopy(intent.overrides["extra"]["extensions"])
        extensions[BOUNDED_OFFLINE]["critical"] = False
        intent = replace(intent, overrides={"extra": {"extensions": extensions}})
    else:
        intent = _with_binding(intent, graceDeadline=None)
    _refused(offline, "ana", intent, code)
    # ... and the unchanged buffered Command is still accepted afterwards.
    _data, outcome = offline.submit("ana", ana.intent)
    assert outcome.ok


@pytest.mark.req("MWP-WRK-021")
def test_progress_buffered_after_the_lease_was_closed_is_rejected(offline: Offline) -> None:
    buffered = offline.buffered("ana")
    state = offline.sandbox.log.state
    lease = state.leases[buffered.binding["executionLeaseId"]]
    check_window(buffered.binding, lease)  # inside the window: fine
    disconnected = parse_timestamp(buffered.binding["disconnectedAt"]).epoch_micros
    closed = replace(lease, state="released", closed_at=format_utc(disconnected))
    with pytest.raises(ProtocolError) as caught:
        check_window(buffered.binding, closed)
    assert caught.value.code.value == "WORK_LEASE_EXPIRED"
    assert "after lease" in caught.value.explanation
    assert projections(state) == projections(offline.sandbox.log.state)


@pytest.mark.req("MWP-WRK-021", "MWP-WRK-022")
def test_a_buffered_progress_message_is_reconciled_only_in_its_work_item_conversation(
    offline: Offline,
) -> None:
    ana = offline.buffered("ana")
    state = offline.sandbox.log.state
    item = state.work_items[ana.work_item_id]
    note = Intent(
        kind="message.post",
        group=item.group_id,
        why="a progress note written while the Group service was down",
        payload={
            "workItemId": item.work_item_id,
            "conversationId": item.conversation_id,
            "content": [{"type": "text", "text": "Columns listed while offline."}],
        },
        overrides=ana.intent.overrides,
        tag="offline-note",
    )
    main = state.groups[item.group_id].main_conversation_id
    elsewhere = replace(note, payload={**note.payload, "conversationId": main})
    error = _refused(offline, "ana", elsewhere, "INVALID_COMMAND")
    assert "WorkItem Conversation" in error.explanation
    _data, outcome = offline.submit("ana", note)
    assert isinstance(outcome, Accepted), outcome
    usage, posted = outcome.event_documents
    assert usage["kind"] == "ext.missionweaveprotocol.core.resource_usage_recorded"
    assert posted["kind"] == "message.posted"
    assert posted["conversationId"] == item.conversation_id
    assert posted["extensions"][BOUNDED_OFFLINE]["data"] == ana.binding
