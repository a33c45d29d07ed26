"""The strict import takes in a signed log only as the live Authority appended it (issue 26
point 5; §16, §6.4).

A careless or hostile file: Events forged with the Group Authority's own key (so their own
signature verifies) that carry a tampered Agent Card or Artifact manifest, an archival with a
payload the Authority never writes, a kind this code cannot fold, a repeated Event ID, a gap in a
Group's sequence. Each is refused with its section-19 code, the line, the Event ID and kind, and
the target log (Events, chain head, every projection table) and the Authority's state (Registry,
Agents, Groups) are exactly as before. A genuine log imports whole and verifies.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.signing import profile_for, verify_parsed
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog
from mwp_local.store.log_import import ImportRefused
from mwp_local.store.records import PROJECTIONS
from mwp_local.store.verify import verify_log

from .world import GROUP, World, mission_world

WID = "urn:mwp-local:work:import"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> World:
    """A log with Agent Cards, a Mission, a WorkItem with a published Artifact and Evidence, and
    the Mission cancelled (so its Group may be archived)."""
    w = mission_world("in-memory", tmp_path_factory.mktemp("source"))
    w.run_to_submitted(WID)
    w.ok("mission-owner", "mission.cancel", {"reason": "no longer needed"})
    return w


@pytest.fixture
def target(source: World, tmp_path: Path) -> Iterator[GroupLog]:
    log = GroupLog(source.org, DuckDBLogStore(tmp_path / "target.duckdb"))
    yield log
    log.store.close()


def _lines(events: list[dict[str, Any]]) -> list[bytes]:
    return [canonicalize(e) for e in events]


def _forged(w: World, event: dict[str, Any], **over: Any) -> dict[str, Any]:
    """``event`` changed and signed again with the Group Authority's key: its own signature
    verifies, so only the checks behind it can refuse it."""
    doc = {k: copy.deepcopy(v) for k, v in event.items() if k != "signature"}
    doc.update(over)
    return w.org.sign("event", w.org.authority, doc)


def _next(w: World, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A forged Event appended after the source's last one in its Group."""
    last = {k: v for k, v in w.events[-1].items() if k != "workItemId"}
    return _forged(
        w,
        last,
        eventId="urn:uuid:00000000-0000-4000-8000-00000000beef",
        cause={"type": "command", "id": "urn:uuid:00000000-0000-4000-8000-0000000000aa"},
        sequence=last["sequence"] + 1,
        kind=kind,
        payload=payload,
    )


def _everything(log: GroupLog) -> Any:
    store = log.store
    state = log.state
    return (
        [e.document for e in store.events()],
        store.chain_head(),
        {t.name: store.projection_rows(t.name) for t in PROJECTIONS},
        state.registry.to_fixture(),
        {a: r.card_version for a, r in state.agents.items()},
        {g: (r.state, r.last_sequence) for g, r in state.groups.items()},
    )


def _refused(log: GroupLog, events: list[dict[str, Any]], code: str) -> ImportRefused:
    before = _everything(log)
    with pytest.raises(ImportRefused) as caught:
        log.import_events(_lines(events))
    assert caught.value.code.value == code, caught.value
    assert _everything(log) == before, "a refused import changed the log or the state"
    return caught.value


def test_a_genuine_log_imports_whole_and_verifies(source: World, target: GroupLog) -> None:
    admitted = target.import_events(_lines(source.events))
    assert len(admitted.records) == len(source.events) and admitted.already_held == 0
    assert [e.document for e in target.store.events()] == [
        canonicalize(e).decode() for e in source.events
    ]
    assert verify_log(source.org, target.store).ok


def test_an_agent_card_whose_own_signature_fails_is_refused_and_its_key_never_registered(
    source: World, target: GroupLog
) -> None:
    first = source.events[0]
    card = copy.deepcopy(first["payload"]["agentCard"])
    card["publicKeys"][0]["publicKey"] = source.events[2]["payload"]["agentCard"]["publicKeys"][0][
        "publicKey"
    ]  # another Agent's key: the card's signature no longer covers what it says
    with pytest.raises(Exception, match="signature"):
        verify_parsed(profile_for("agent-card"), card, source.org.registry())
    forged = _forged(source, first, payload={**first["payload"], "agentCard": card})
    error = _refused(target, [forged, *source.events[1:]], "AUTH_INVALID_SIGNATURE")
    assert error.line == 1 and error.event_id == first["eventId"]
    assert error.kind == "ext.missionweaveprotocol.registry.agent_card_registered"
    assert "payload/agentCard" in error.explanation and "does not verify" in error.explanation
    assert target.state.registry.to_fixture() == source.org.registry().to_fixture()


def test_an_artifact_manifest_that_does_not_verify_is_refused(
    source: World, target: GroupLog
) -> None:
    at = next(i for i, e in enumerate(source.events) if e["kind"] == "artifact.published")
    event = source.events[at]
    manifest = {**event["payload"]["artifact"], "sizeBytes": 999}
    forged = _forged(source, event, payload={**event["payload"], "artifact": manifest})
    events = [*source.events[:at], forged, *source.events[at + 1 :]]
    error = _refused(target, events, "AUTH_INVALID_SIGNATURE")
    assert error.line == at + 1 and "payload/artifact" in error.explanation


@pytest.mark.parametrize(
    "payload, needle",
    [
        ({"whatever": 1}, "member 'group'"),
        (
            {"group": {"archivedAt": "2026-07-15T00:00:00Z", "archiveSnapshotId": "urn:x:y"}},
            "group.schema.json",
        ),
    ],
    ids=["no group document", "a group document that does not conform"],
)
def test_an_archival_with_a_payload_the_authority_never_writes_is_refused(
    source: World, target: GroupLog, payload: dict[str, Any], needle: str
) -> None:
    forged = _next(source, "group.archived", payload)
    error = _refused(target, [*source.events, forged], "SCHEMA_VALIDATION_FAILED")
    assert error.line == len(source.events) + 1 and error.kind == "group.archived"
    assert needle in error.explanation


@pytest.mark.parametrize(
    "kind, code",
    [
        ("ext.example.thing.happened", "UNKNOWN_CRITICAL_EXTENSION"),
        ("ext.missionweaveprotocol.core.bogus", "PROTOCOL_VIOLATION"),
        ("ext.mwp-local.sandbox.bogus", "PROTOCOL_VIOLATION"),
        ("mission.follow_up.created", "PROTOCOL_VIOLATION"),
    ],
    ids=["another profile", "the reference core", "the sandbox profile", "a core kind not folded"],
)
def test_a_kind_this_code_cannot_fold_is_refused_by_name(
    source: World, target: GroupLog, kind: str, code: str
) -> None:
    forged = _next(source, kind, {"missionId": source.events[-1]["payload"]["missionId"]})
    error = _refused(target, [*source.events, forged], code)
    assert error.kind == kind and repr(kind) in error.explanation


def test_an_event_twice_in_the_file_is_refused_naming_both_lines(
    source: World, target: GroupLog
) -> None:
    events = [*source.events[:3], source.events[1], *source.events[3:]]
    error = _refused(target, events, "PROTOCOL_VIOLATION")
    assert error.line == 4 and error.event_id == source.events[1]["eventId"]
    assert "appears twice in the file (first on line 2)" in error.explanation


def test_an_event_the_log_holds_already_is_refused(source: World, target: GroupLog) -> None:
    org_events = [e for e in source.events if "groupId" not in e]
    target.import_events(_lines(org_events))
    again = [source.events[0], *[e for e in source.events if e.get("groupId") == GROUP]]
    error = _refused(target, again, "PROTOCOL_VIOLATION")
    assert error.line == 1 and error.event_id == source.events[0]["eventId"]
    assert "already in this log" in error.explanation


def test_a_file_that_is_the_log_itself_is_refused_naming_the_duplicates(
    source: World, target: GroupLog
) -> None:
    target.import_events(_lines(source.events))
    error = _refused(target, source.events, "PROTOCOL_VIOLATION")
    assert "already in this log" in error.explanation
    assert error.details["duplicates"][0] == source.events[0]["eventId"]


def test_a_file_that_begins_with_the_whole_log_continues_it(
    source: World, target: GroupLog
) -> None:
    org_events = [e for e in source.events if "groupId" not in e]
    target.import_events(_lines(org_events))
    admitted = target.import_events(_lines(source.events))
    assert admitted.already_held == len(org_events)
    assert len(admitted.records) == len(source.events) - len(org_events)
    assert verify_log(source.org, target.store).ok


def test_a_gap_in_a_group_sequence_is_refused(source: World, target: GroupLog) -> None:
    at = next(i for i, e in enumerate(source.events) if e.get("sequence") == 3)
    events = [*source.events[:at], *source.events[at + 1 :]]
    error = _refused(target, events, "PROTOCOL_VIOLATION")
    assert error.line == at + 1 and "sequence 4" in error.explanation


def _archived(tmp_path: Path) -> World:
    from mwp_local.authority.archive import unsigned_snapshot

    w = mission_world("in-memory", tmp_path)
    w.ok("mission-owner", "mission.cancel", {"reason": "no longer needed"})
    service = w.org.get("control-plane")
    ids = [e["eventId"] for e in w.events if e.get("groupId") == GROUP]
    snapshot = unsigned_snapshot(
        w.state,
        GROUP,
        ids,
        organization_id=w.org.organization_id,
        created_by=service.actor,
        created_at=w.at(0),
    )
    w.ok(
        "control-plane",
        "ext.missionweaveprotocol.core.group_archive",
        {"snapshot": w.org.sign("group-snapshot", service, snapshot)},
    )
    return w


@pytest.mark.parametrize(
    "change",
    ["a payload without a snapshot", "a final state the log does not build", "a wrong state hash"],
)
def test_a_recorded_snapshot_the_archival_would_have_refused_is_refused(
    tmp_path: Path, change: str
) -> None:
    """``group.snapshot.created`` is re-checked as its archival Command was: its snapshot
    verifies, is final and linked to the Group's history, and the final state is the Group's."""
    w = _archived(tmp_path)
    at = next(i for i, e in enumerate(w.events) if e["kind"] == "group.snapshot.created")
    event = w.events[at]
    payload = copy.deepcopy(event["payload"])
    if change == "a payload without a snapshot":
        payload = {"x": 1}
        code = "SCHEMA_VALIDATION_FAILED"
    elif change == "a final state the log does not build":
        payload["finalState"]["throughSequence"] = 1
        code = "INVALID_COMMAND"
    else:
        snapshot = {k: v for k, v in payload["snapshot"].items() if k != "signature"}
        snapshot["stateHash"] = "sha256:" + "0" * 64
        payload["snapshot"] = w.org.sign("group-snapshot", "control-plane", snapshot)
        code = "INVALID_COMMAND"
    forged = _forged(w, event, payload=payload)
    log = GroupLog(w.org, DuckDBLogStore(tmp_path / "target.duckdb"))
    try:
        assert log.import_events(_lines(w.events)).records  # the genuine archival imports
        log.store.close()
        (tmp_path / "target.duckdb").unlink()
        log = GroupLog(w.org, DuckDBLogStore(tmp_path / "target.duckdb"))
        error = _refused(log, [*w.events[:at], forged, *w.events[at + 1 :]], code)
        assert error.line == at + 1 and error.kind == "group.snapshot.created"
    finally:
        log.store.close()


def test_verify_log_reports_a_stored_snapshot_the_archival_would_have_refused(
    tmp_path: Path,
) -> None:
    """A log written without the checks (straight into the store) holding a re-signed
    ``group.snapshot.created`` whose state hash is wrong: verify-log names the Event and why."""
    from mwp_local.authority.pipeline import event_record
    from mwp_local.store.records import Batch

    w = _archived(tmp_path)
    at = next(i for i, e in enumerate(w.events) if e["kind"] == "group.snapshot.created")
    event = w.events[at]
    payload = copy.deepcopy(event["payload"])
    snapshot = {k: v for k, v in payload["snapshot"].items() if k != "signature"}
    snapshot["stateHash"] = "sha256:" + "0" * 64
    payload["snapshot"] = w.org.sign("group-snapshot", "control-plane", snapshot)
    events = [*w.events[:at], _forged(w, event, payload=payload), *w.events[at + 1 :]]
    store = DuckDBLogStore(tmp_path / "written.duckdb")
    try:
        store.commit(Batch(events=tuple(event_record(e, None, None) for e in events)))
        report = verify_log(w.org, store)
    finally:
        store.close()
    expected = (
        f"position {at + 1} (group.snapshot.created, {event['eventId']}): the archival it "
        "records would have been refused: INVALID_COMMAND: The snapshot's stateHash"
    )
    assert any(p.startswith(expected) for p in report.problems), report.problems
