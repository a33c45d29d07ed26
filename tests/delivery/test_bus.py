"""The delivery bus and a receiver, on the real Events of a finished Mission (§16, §17):
deduplication, per-Group order, gaps, ACK, reconnection, CURSOR_TOO_OLD, backpressure."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import BasePolicy
from mwp_local.agents.bus_client import MAX_SNAPSHOT_REFUSALS, BusClient
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.authority.organization import Organization
from mwp_local.delivery import frames
from mwp_local.delivery.bus import DeliveryBus
from mwp_local.delivery.by_hand import SECOND, T0, drive
from mwp_local.delivery.config import DeliveryConfig, Window
from mwp_local.delivery.snapshots import SnapshotBundle, build_snapshot
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.store.agent_store import MemoryLocalStore

from ..official_schemas import problems
from .helpers import (
    SAMPLES,
    SlowReceiver,
    acks_never_pass_a_gap,
    contiguous,
    projections,
    visible_to,
)


class Idle(BasePolicy):
    """A policy that only listens."""


@dataclass
class Finished:
    org: Organization
    events: list[dict[str, Any]]
    #: Per agent name, the projections of a replica handed what it may receive, in order.
    clean: dict[str, dict[str, list[str]]]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Finished:
    """The learning Mission run to its end with direct delivery, and a clean replay of it."""
    sandbox = Sandbox(
        tmp_path_factory.mktemp("learn"), SAMPLES / "learn.toml", seed=2, worker_files=False
    )
    assert sandbox.run().finished
    events = [parse_strict(e.document) for e in sandbox.log.store.events()]
    clean = {}
    for name in ("dev", "ana", "coordinator"):
        # What each may receive, handed in order without a bus (a Worker's from its
        # visibility start, the Coordinator's from sequence 1): the bus must end there too.
        runtime = AgentRuntime(sandbox.log.org, sandbox.log.org.get(name), Idle())
        runtime.deliver(copy.deepcopy(visible_to(runtime.member.id, events)))
        clean[name] = projections(runtime.replica)
    assert clean["dev"] != clean["coordinator"]  # dev joined late: it sees less
    return Finished(org=sandbox.log.org, events=events, clean=clean)


def _bus(finished: Finished, config: DeliveryConfig, seed: int = 1) -> DeliveryBus:
    def snapshot(group: str, events: Sequence[dict[str, Any]], at: str) -> SnapshotBundle:
        return build_snapshot(finished.org, group, events, at, online_window=8)

    return DeliveryBus(
        config,
        seed=seed,
        organization_id=finished.org.organization_id,
        make_snapshot=snapshot,
    )


def _receiver(finished: Finished, name: str = "dev") -> BusClient:
    runtime = AgentRuntime(finished.org, finished.org.get(name), Idle(), local=MemoryLocalStore())
    return BusClient(runtime, fetch=lambda _id: pytest.fail("no snapshot expected"))


def _run(bus: DeliveryBus, finished: Finished, start: int = T0, chunk: int = 3) -> int:
    """Publish the Mission's Events a few at a time, then deliver until everything settled."""
    return drive(bus, finished.events, start=start, chunk=chunk)


@pytest.mark.req("MWP-WRK-029")
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_duplicates_reordering_delays_and_drops_are_absorbed_by_the_receiver(
    finished: Finished, seed: int
) -> None:
    config = DeliveryConfig(
        duplicate=0.5, reorder=0.5, delay=0.5, max_delay_us=30 * SECOND, drop=0.2
    )
    bus = _bus(finished, config, seed)
    client = _receiver(finished)
    bus.attach(client, T0)
    _run(bus, finished)
    assert bus.stats.duplicates and bus.stats.reorders and bus.stats.drops
    assert bus.stats.redeliveries  # every drop was made good from the acknowledged Cursor
    assert client.runtime.inbox.duplicates > 0
    assert projections(client.runtime.replica) == finished.clean["dev"]
    acks_never_pass_a_gap(bus, {})
    cursors = [c for _, _, c in bus.acks]
    assert cursors == sorted(cursors)  # one Group: the acknowledged Cursor only grows


@pytest.mark.req("MWP-WRK-029")
def test_the_durable_cursor_never_moves_over_a_gap(finished: Finished) -> None:
    client = _receiver(finished)
    group_events = [e for e in finished.events if e.get("groupId")]
    ids = frames.FrameIds(finished.org.organization_id, "test")
    first, second, third, fourth, fifth = group_events[:5]
    org = [e for e in finished.events if not e.get("groupId")]
    for e in org:
        client.receive(frames.event(ids.next(), e), T0)
    for e in (first, second, fourth, fifth, fourth):  # 3 is missing, 4 comes twice
        client.receive(frames.event(ids.next(), e), T0)
    ack = client.acknowledge(T0)
    assert ack is not None and frames.acknowledged(ack) == {first["groupId"]: 2}
    stored = client.runtime.local.load() if client.runtime.local else None
    assert stored is not None and stored.cursors[first["groupId"]] == 2
    assert {r.sequence for r in stored.events if r.group_id == first["groupId"]} == {1, 2}
    assert client.runtime.inbox.gaps() == {first["groupId"]: [4, 5]}
    client.receive(frames.event(ids.next(), third), T0)
    ack = client.acknowledge(T0)
    assert ack is not None and frames.acknowledged(ack) == {first["groupId"]: 5}
    stored = client.runtime.local.load() if client.runtime.local else None
    assert stored is not None
    assert contiguous({r.sequence for r in stored.events if r.group_id == first["groupId"]}) == 5


@pytest.mark.req("MWP-WRK-030")
def test_ack_permits_delivery_clean_up_but_never_deletes_history(finished: Finished) -> None:
    bus = _bus(finished, DeliveryConfig(delay=0.9, max_delay_us=60 * SECOND), seed=4)
    client = _receiver(finished)
    bus.attach(client, T0)
    _run(bus, finished)
    session = bus.sessions[client.agent_id]
    assert not session.queue  # acknowledged frames were cleaned up
    group = next(iter(bus.latest))
    assert sorted(bus.online[group]) == list(range(1, bus.latest[group] + 1))  # all still there
    # A newcomer subscribing from the start still gets the whole history.
    late = _receiver(finished, "ana")
    bus.attach(late, T0 + 3600 * SECOND)
    _run(bus, Finished(org=finished.org, events=[], clean={}), start=T0 + 3600 * SECOND)
    assert projections(late.runtime.replica) == finished.clean["ana"]


@pytest.mark.req("MWP-WRK-030")
def test_reconnection_subscribes_after_the_cursor_and_replays_duplicates(
    finished: Finished,
) -> None:
    # The Coordinator: a member from the Group's first Event, so it has a Cursor to resume
    # after when the window cuts it off (a Worker receives nothing before its Membership).
    down = Window(at_us=T0 + 5 * SECOND, until_us=T0 + 40 * SECOND, agent="coordinator")
    config = DeliveryConfig(
        drop=0.3,
        delay=0.3,
        max_delay_us=20 * SECOND,
        redeliver_after_us=60 * SECOND,
        disconnects=(down,),
    )
    bus = _bus(finished, config, seed=5)
    client = _receiver(finished, "coordinator")
    bus.attach(client, T0)
    _run(bus, finished)
    assert bus.stats.disconnects == 1 and bus.stats.reconnects == 1
    ((_agent, frame),) = [s for s in bus.subscriptions if s[1]["frameType"] == "SUBSCRIBE"][-1:]
    assert problems("websocket-frame", frame) == []
    assert frame["groups"][0]["afterSequence"] > 0  # after the durable Cursor, not from 0
    assert client.runtime.inbox.duplicates > 0  # Events buffered past a gap came again
    assert projections(client.runtime.replica) == finished.clean["coordinator"]
    acks_never_pass_a_gap(bus, {})


@pytest.mark.req("MWP-WRK-030")
def test_an_old_cursor_gets_cursor_too_old_and_the_receiver_restores_the_snapshot(
    finished: Finished,
) -> None:
    bus = _bus(finished, DeliveryConfig(online_window=5), seed=6)
    bus.publish(copy.deepcopy(finished.events), T0)
    group = next(iter(bus.latest))
    assert bus.retention[group] > 0 and 1 not in bus.online[group]
    runtime = AgentRuntime(finished.org, finished.org.get("dev"), Idle(), local=MemoryLocalStore())
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
    _run(bus, Finished(org=finished.org, events=[], clean={}))
    errors = [f for f in received if f["frameType"] == "ERROR"]
    assert [f["error"]["code"] for f in errors] == ["CURSOR_TOO_OLD"]
    assert problems("websocket-frame", errors[0]) == []
    reference = errors[0]["error"]["details"]["snapshot"]
    bundle = bus.snapshot(reference["snapshotId"])
    assert problems("group-snapshot", bundle.snapshot) == []
    assert bundle.through_sequence == bus.retention[group]
    (restoration,) = client.restorations
    assert restoration.refused is None and restoration.through_sequence == bus.retention[group]
    # It resumed from the snapshot sequence, and it ends where a receiver of every Event ends.
    resumed = [f for a, f in bus.subscriptions if a == client.agent_id]
    assert resumed[-1]["groups"] == [{"groupId": group, "afterSequence": bundle.through_sequence}]
    assert projections(runtime.replica) == finished.clean["dev"]
    acks_never_pass_a_gap(bus, {client.agent_id: {group: bundle.through_sequence}})


@pytest.mark.req("MWP-WRK-030")
@pytest.mark.parametrize("tamper", ["body", "signature", "reference"])
def test_a_snapshot_that_fails_verification_restores_nothing(
    finished: Finished, tamper: str
) -> None:
    bus = _bus(finished, DeliveryConfig(online_window=5), seed=7)
    bus.publish(copy.deepcopy(finished.events), T0)
    group = next(iter(bus.latest))
    bundle = bus._snapshot_at_retention(group, T0)
    reference = bundle.reference()
    snapshot, body = copy.deepcopy(bundle.snapshot), copy.deepcopy(bundle.body)
    if tamper == "body":
        body["events"][0]["payload"]["tampered"] = True
    elif tamper == "signature":
        snapshot["policyLog"][0]["decision"] = "rewritten"
        reference = {
            **reference,
            "snapshotHash": SnapshotBundle(snapshot=snapshot, body=body).reference()[
                "snapshotHash"
            ],
        }
    else:
        reference = {**reference, "snapshotHash": "sha256:" + "0" * 64}
    forged = SnapshotBundle(snapshot=snapshot, body=body)
    runtime = AgentRuntime(finished.org, finished.org.get("dev"), Idle(), local=MemoryLocalStore())
    client = BusClient(runtime, fetch=lambda _id: forged)
    before = projections(runtime.replica)
    error = frames.error(
        "urn:uuid:00000000-0000-4000-8000-000000000001",
        ProtocolError(ErrorCode.CURSOR_TOO_OLD, "old", details={"snapshot": reference}),
        "2026-07-15T09:00:00Z",
        group_id=group,
    )
    # it asks again from its durable Cursor (so the bus names a snapshot signed anew)
    (again,) = client.receive(error, T0)
    assert again["frameType"] == "SUBSCRIBE" and problems("websocket-frame", again) == []
    assert again["groups"] == [{"groupId": group, "afterSequence": 0}]
    (restoration,) = client.restorations
    expected = "AUTH_INVALID_SIGNATURE" if tamper == "signature" else "PROTOCOL_VIOLATION"
    assert restoration.refused == expected and restoration.events == 0
    assert projections(runtime.replica) == before
    assert runtime.durable_cursors() == {}
    # refused every time, it stops asking after MAX_SNAPSHOT_REFUSALS and says it is stuck
    for _ in range(MAX_SNAPSHOT_REFUSALS - 1):
        assert client.receive(error, T0) != []
    assert client.receive(error, T0) == [] and client.stuck == {group}
    assert projections(runtime.replica) == before


@pytest.mark.req("MWP-WRK-030")
def test_an_agent_refusing_a_tampered_snapshot_recovers_from_one_signed_anew(
    finished: Finished,
) -> None:
    """One tampered snapshot in the bus's store (correctly refused) does not leave the agent
    at its Cursor for good: it subscribes again, the bus signs a snapshot anew from its
    archive, the agent restores it and the bus settles with the agent at the head."""
    bus = _bus(finished, DeliveryConfig(online_window=5), seed=7)
    bus.publish(copy.deepcopy(finished.events), T0)
    group = next(iter(bus.latest))
    bundle = bus._snapshot_at_retention(group, T0)
    body = copy.deepcopy(bundle.body)
    body["events"][0]["payload"]["tampered"] = True
    bus.snapshots[bundle.snapshot["snapshotId"]] = SnapshotBundle(
        snapshot=bundle.snapshot, body=body
    )
    runtime = AgentRuntime(
        finished.org, finished.org.get("coordinator"), Idle(), local=MemoryLocalStore()
    )
    client = BusClient(runtime, fetch=bus.snapshot)
    bus.attach(client, T0)
    now = _run(bus, finished, start=T0 + SECOND)
    assert bus.settled()
    refused, restored = client.restorations
    assert refused.refused == "PROTOCOL_VIOLATION" and restored.refused is None
    assert not client.stuck
    assert runtime.inbox.cursors[group] == bus.latest[group]
    assert projections(runtime.replica) == finished.clean["coordinator"]
    assert now >= T0


def _group_events(finished: Finished, group: str, count: int) -> list[dict[str, Any]]:
    """``count`` Events of a second Group: the Mission's Events re-sequenced under ``group``
    (the receiver here only routes and counts; it does not fold them)."""
    out = []
    for n, e in enumerate([e for e in finished.events if e.get("groupId")][:count], start=1):
        out.append({**e, "groupId": group, "sequence": n, "eventId": f"{e['eventId']}-{group}"})
    return out


@pytest.mark.req("MWP-WRK-030")
def test_a_noisy_group_pauses_with_backpressure_and_never_starves_another(
    finished: Finished,
) -> None:
    config = DeliveryConfig(group_buffer=4, frames_per_round=3, validate_frames=False)
    bus = _bus(finished, config)
    slow = SlowReceiver("urn:missionweaveprotocol:agent:slow", [])
    bus.attach(slow, T0)
    noisy = _group_events(finished, "urn:mwp-local:group:noisy", 30)
    quiet = _group_events(finished, "urn:mwp-local:group:quiet", 1)
    for group in ("urn:mwp-local:group:noisy", "urn:mwp-local:group:quiet"):
        bus.audience.grant(slow.agent_id, group)  # the bus delivers to members only
    bus.publish(noisy + quiet, T0)
    bus.pump(T0)
    first_round = [f for f in slow.frames]
    assert any(
        f.get("event", {}).get("groupId") == "urn:mwp-local:group:quiet" for f in first_round
    )
    bus.pump(T0)
    errors = [f["error"] for f in slow.frames if f["frameType"] == "ERROR"]
    assert [e["code"] for e in errors] == ["BACKPRESSURE"]
    assert errors[0]["groupId"] == "urn:mwp-local:group:noisy" and errors[0]["retryable"]
    assert errors[0]["details"]["retryAfterMs"] > 0
    assert problems("error", errors[0]) == []
    noisy_frames = [
        f for f in slow.frames if f.get("event", {}).get("groupId", "").endswith("noisy")
    ]
    assert len(noisy_frames) == 4  # bounded: no more than group_buffer unacknowledged
    assert bus.sessions[slow.agent_id].paused == {
        "urn:mwp-local:group:noisy": T0 + config.retry_after_us
    }


def test_the_same_seed_gives_the_same_faults_and_another_seed_others(finished: Finished) -> None:
    config = DeliveryConfig(duplicate=0.4, reorder=0.4, delay=0.4, drop=0.1)

    def trace(seed: int) -> list[tuple[str, str, int]]:
        bus = _bus(finished, config, seed)
        bus.attach(_receiver(finished), T0)
        _run(bus, finished)
        return list(bus.acks)

    assert trace(11) == trace(11)
    assert trace(11) != trace(12)


def test_frames_from_the_builders_are_valid_against_the_official_schema(
    finished: Finished, tmp_path: Path
) -> None:
    ids = frames.FrameIds(finished.org.organization_id, "schema")
    at = "2026-07-15T09:00:00Z"
    built = [
        frames.subscribe(ids.next(), "urn:mwp-local:subscription:x", {"urn:mwp-local:group:a": 0}),
        frames.event(ids.next(), finished.events[-1]),
        frames.ack(ids.next(), {"urn:mwp-local:group:a": 4}, at),
        frames.ping(ids.next(), frames.nonce_for("a"), at),
        frames.ping(ids.next(), frames.nonce_for("b"), at, reply_to=frames.nonce_for("a")),
    ]
    for frame in built:
        assert problems("websocket-frame", frame) == [], frame["frameType"]
        frames.check(frame)
    broken = frames.ack(ids.next(), {}, at)  # an ACK must acknowledge something
    assert problems("websocket-frame", broken)
    with pytest.raises(Exception, match="SCHEMA_VALIDATION_FAILED"):
        frames.check(broken)


def test_an_event_frame_is_checked_in_full_even_when_its_event_was_seen(
    finished: Finished,
) -> None:
    ids = frames.FrameIds(finished.org.organization_id, "schema-event")
    event = finished.events[-1]
    for _ in range(3):  # one Event, many subscribers: the same verdict each time
        frames.check(frames.event(ids.next(), event))
    bad_envelope = {**frames.event(ids.next(), event), "frameId": "not an id"}
    with pytest.raises(Exception, match="SCHEMA_VALIDATION_FAILED"):
        frames.check(bad_envelope)
    extra = {**frames.event(ids.next(), event), "note": "unknown member"}
    with pytest.raises(Exception, match="SCHEMA_VALIDATION_FAILED"):
        frames.check(extra)
    bad_event = {key: value for key, value in event.items() if key != "kind"}
    for _ in range(2):  # a bad Event is never remembered as checked
        with pytest.raises(Exception, match="SCHEMA_VALIDATION_FAILED") as raised:
            frames.check(frames.event(ids.next(), bad_event))
        assert "event" in str(raised.value.details["path"])  # type: ignore[attr-defined]
