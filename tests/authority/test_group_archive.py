"""Group archival from outside (§7.4, §15.2): hand-signed
``ext.missionweaveprotocol.core.group_archive`` Commands. An authorized archival service archives
the Group of an ended Mission with a signed final snapshot linked to the Group's history; an
Agent or a human may not, an active Mission's Group may not be archived, a stale or altered
snapshot is refused, and an archived Group accepts no Command and records no Event. Every
refusal changes nothing (``World.refuse``, on the Authority alone and through a DuckDB log)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.archive import final_state, unsigned_snapshot
from mwp_local.protocol.documents.kinds import ExtensionCommandKind
from mwp_local.protocol.errors import ProtocolError
from mwp_local.protocol.hashing import sha256_id
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.tables import GROUP_TABLE, GroupState, GroupTransition
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog

from ..official_schemas import problems
from .world import GROUP, MISSION, WHERE_REFUSED, World, mission_world

ARCHIVE = ExtensionCommandKind.GROUP_ARCHIVE.value


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _event_ids(world: World) -> list[str]:
    return [e["eventId"] for e in world.events if e.get("groupId") == GROUP]


def _snapshot(world: World, signer: str = "control-plane", **over: Any) -> dict[str, Any]:
    member = world.org.get(signer)
    doc = unsigned_snapshot(
        world.state,
        GROUP,
        _event_ids(world),
        organization_id=world.org.organization_id,
        created_by=member.actor,
        created_at=world.at(0),
    )
    doc.update(over)
    return world.org.sign("group-snapshot", member, doc)


def _ended(world: World) -> World:
    world.ok("mission-owner", "mission.cancel", {"reason": "no longer needed"})
    return world


# --------------------------------------------------------------------------- the table


def test_the_group_table_archives_once_and_then_records_nothing() -> None:
    assert GROUP_TABLE.allowed(GroupState.ACTIVE) == (
        GroupTransition.RECORD_EVENT,
        GroupTransition.ARCHIVE,
    )
    assert GROUP_TABLE.allowed(GroupState.ARCHIVED) == ()
    row = GROUP_TABLE.row(ARCHIVE)
    assert row.command == ARCHIVE and row.events == ("group.archived",)
    assert row.fences == ("archival_service",) and row.guards == ("mission_finished",)


# --------------------------------------------------------------------------- allowed


def test_an_archival_service_archives_the_group_of_an_ended_mission(world: World) -> None:
    _ended(world)
    coordinator_lease = world.state.missions[MISSION].coordinator_lease_id
    snapshot = _snapshot(world)
    accepted = world.ok("control-plane", ARCHIVE, {"snapshot": snapshot})
    created, archived = accepted.event_documents
    assert (created["kind"], archived["kind"]) == ("group.snapshot.created", "group.archived")
    assert created["payload"]["snapshot"] == snapshot
    assert problems("group-snapshot", snapshot) == []
    state_hash = sha256_id(canonicalize(created["payload"]["finalState"]))
    assert state_hash == snapshot["stateHash"]
    group_doc = archived["payload"]["group"]
    assert problems("group", group_doc) == []
    assert group_doc["state"] == "archived"
    assert group_doc["archiveSnapshotId"] == snapshot["snapshotId"]
    record = world.state.groups[GROUP]
    assert record.state == "archived" and record.archived_at == archived["occurredAt"]
    assert world.state.leases[coordinator_lease or ""].state == "released"
    assert snapshot["eventIds"] == _event_ids(world)[: snapshot["throughSequence"]]


def test_the_final_state_holds_the_missions_decisions_work_and_artifacts(world: World) -> None:
    world.run_to_submitted("urn:mwp-local:work:impl")
    _ended(world)
    final = final_state(world.state, GROUP)
    assert final["mission"]["state"] == "cancelled"
    assert [w["workItemId"] for w in final["workItems"]] == ["urn:mwp-local:work:impl"]
    assert len(final["artifacts"]) == 1 and final["approvals"] == []
    world.ok("control-plane", ARCHIVE, {"snapshot": _snapshot(world)})


def test_an_archived_group_is_rebuilt_archived_from_its_log(tmp_path: Path) -> None:
    world = mission_world("duckdb", tmp_path)
    _ended(world)
    world.ok("control-plane", ARCHIVE, {"snapshot": _snapshot(world)})
    world.log.store.close()  # type: ignore[attr-defined]
    reopened = GroupLog(world.org, DuckDBLogStore(tmp_path / "group.duckdb"))
    assert reopened.state.groups[GROUP] == world.state.groups[GROUP]
    reopened.store.close()


# --------------------------------------------------------------------------- who and when


@pytest.mark.parametrize("who", ["coordinator", "mission-owner"])
def test_an_agent_or_a_human_may_not_archive_a_group(world: World, who: str) -> None:
    _ended(world)
    rejected = world.refuse("AUTH_FORBIDDEN", who, ARCHIVE, {"snapshot": _snapshot(world)})
    assert "service" in rejected.error.explanation


def test_the_group_of_an_active_mission_cannot_be_archived(world: World) -> None:
    rejected = world.refuse(
        "INVALID_STATE_TRANSITION", "control-plane", ARCHIVE, {"snapshot": _snapshot(world)}
    )
    assert "is active" in rejected.error.explanation
    assert world.state.groups[GROUP].state == "active"


# --------------------------------------------------------------------------- the snapshot


def test_a_snapshot_of_an_older_state_of_the_group_is_refused(world: World) -> None:
    _ended(world)
    stale = _snapshot(world)
    world.ok("mission-owner", "message.post", {"content": [{"type": "text", "text": "bye"}]})
    rejected = world.refuse("INVALID_COMMAND", "control-plane", ARCHIVE, {"snapshot": stale})
    assert "covers every Event" in rejected.error.explanation


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s.update(stateHash="sha256:" + "0" * 64), "stateHash"),
        (lambda s: s.update(eventIds=[*s["eventIds"][:-1], "urn:uuid:" + "0" * 32]), "eventIds"),
        (lambda s: s.update(eventIds=list(reversed(s["eventIds"]))), "eventIds"),
        (lambda s: s["policyLog"][0].update(decision="nothing happened"), "policyLog"),
        (lambda s: s.update(groupId="urn:mwp-local:group:other"), "Group"),
    ],
    ids=["state hash", "an event id", "event order", "policy log", "another group"],
)
def test_a_snapshot_that_does_not_match_the_group_is_refused(
    world: World, change: Any, says: str
) -> None:
    _ended(world)
    unsigned = copy.deepcopy(_snapshot(world))
    unsigned.pop("signature")
    change(unsigned)
    altered = world.org.sign("group-snapshot", world.org.control_plane, unsigned)
    rejected = world.refuse("INVALID_COMMAND", "control-plane", ARCHIVE, {"snapshot": altered})
    assert (
        says in rejected.error.explanation and "Nothing was archived" in rejected.error.explanation
    )


def test_a_snapshot_altered_after_its_signature_is_refused(world: World) -> None:
    _ended(world)
    snapshot = _snapshot(world)
    snapshot["stateHash"] = "sha256:" + "0" * 64
    world.refuse("AUTH_INVALID_SIGNATURE", "control-plane", ARCHIVE, {"snapshot": snapshot})


def test_a_snapshot_signed_by_an_agent_is_refused(world: World) -> None:
    _ended(world)
    unsigned = _snapshot(world)
    unsigned.pop("signature")
    unsigned["createdBy"] = world.org.get("coordinator").actor
    forged = world.org.sign("group-snapshot", "coordinator", unsigned)
    world.refuse("SCHEMA_VALIDATION_FAILED", "control-plane", ARCHIVE, {"snapshot": forged})


# --------------------------------------------------------------------------- after the archive


def _archived(world: World) -> World:
    _ended(world)
    world.ok("control-plane", ARCHIVE, {"snapshot": _snapshot(world)})
    return world


@pytest.mark.parametrize(
    ("who", "kind", "payload"),
    [
        ("mission-owner", "message.post", {"content": [{"type": "text", "text": "hello?"}]}),
        ("control-plane", ARCHIVE, None),
        ("coordinator", "mission.renew_coordinator", {}),
        ("mission-owner", "mission.cancel", {"reason": "again"}),
    ],
    ids=["message", "archive again", "renew coordinator", "cancel"],
)
def test_an_archived_group_accepts_no_command(
    world: World, who: str, kind: str, payload: dict[str, Any] | None
) -> None:
    _archived(world)
    body = payload if payload is not None else {"snapshot": _snapshot(world)}
    rejected = world.refuse("INVALID_STATE_TRANSITION", who, kind, body)
    assert "'archived' is terminal" in rejected.error.explanation


def test_no_timer_records_anything_in_an_archived_group(world: World) -> None:
    _archived(world)
    world.advance(30 * 24 * 3600)
    assert world.authority.expire(world.now()) == []


def test_an_imported_event_in_an_archived_group_is_refused(tmp_path: Path) -> None:
    world = _archived(mission_world("in-memory", tmp_path))
    last = world.events[-1]
    late = {k: v for k, v in last.items() if k != "signature"}
    late.update(
        eventId="urn:uuid:00000000-0000-4000-8000-00000000beef",
        sequence=last["sequence"] + 1,
        kind="message.posted",
    )
    forged = world.org.sign("event", world.org.authority, late)
    target = GroupLog(world.org, DuckDBLogStore(tmp_path / "group.duckdb"))
    with pytest.raises(ProtocolError, match="archived") as caught:
        target.import_events([canonicalize(e) for e in [*world.events, forged]])
    assert caught.value.code.value == "INVALID_STATE_TRANSITION"
    assert list(target.store.events()) == []
    target.store.close()
