"""Context Packages: signed, versioned, scoped summaries built from the log, updates with
provenance, and cited Events only as the requester's Membership allows (MWP-WRK-027)."""

from __future__ import annotations

from typing import Any

import pytest

from mwp_local.artifacts.context_packages import (
    PROVENANCE_EXTENSION,
    PackageScope,
    check_update,
    cited_event_ids,
    context_package_from_log,
    fetch_cited_events,
    verify_context_package,
)
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.signing import signing_hash

from ..official_schemas import problems
from .scene import GROUP, MISSION, Scene

W1, W2 = "urn:mwp-local:work:first", "urn:mwp-local:work:second"


def _package(scene: Scene, work_item: str | None = None, **kw: Any) -> dict[str, Any]:
    return context_package_from_log(
        scene.w.log.store,
        scene.w.state,
        PackageScope(mission_id=MISSION, group_id=GROUP, work_item_id=work_item),
        generator=scene.w.org.get(kw.pop("generator", "coordinator")),
        generated_at=scene.w.now().text,
        **kw,
    )


def _two_items(scene: Scene) -> str:
    scene.to_active(W1)
    artifact = scene.publish(W1, b"first result")["contentHash"]
    scene.w.ok(
        "worker-a",
        "work.block",
        {
            **scene.w.lease(W1),
            "requiredResolution": "Which database?",
            "checkpoint": {"reason": "blocked", "progress": scene.w.progress()},
        },
    )
    scene.to_active(W2, agent="worker-b")
    return str(artifact)


def _code(exc: pytest.ExceptionInfo[ProtocolError]) -> str:
    return exc.value.code.value


@pytest.mark.req("MWP-WRK-027")
def test_a_mission_package_is_official_signed_and_summarizes_the_log(logged: Scene) -> None:
    artifact = _two_items(logged)
    package = _package(logged, constraints=["Stay within the EUR budget"])
    assert problems("context-package", package) == []
    verified = verify_context_package(package, logged.w.state)
    assert verified.principal.id == logged.id("coordinator")
    group_events = [e for e in logged.w.events if e.get("groupId") == GROUP]
    assert package["sourceEventRange"]["eventIds"] == [e["eventId"] for e in group_events]
    assert package["sourceEventRange"]["fromSequence"] == 1
    assert package["artifactHashes"] == [artifact]
    assert any(
        W1 in d["description"] and "authorized" in d["description"] for d in package["decisions"]
    )
    assert any("Which database?" in q for q in package["unresolvedQuestions"])
    assert "Stay within the EUR budget" in package["constraints"]
    assert package["version"] == 1 and "previousContextPackageId" not in package


@pytest.mark.req("MWP-WRK-027")
def test_a_work_item_package_cites_only_that_work_item(logged: Scene) -> None:
    """It cites the WorkItem (its Events, its Conversation), the WorkItems it depends on, and
    the Mission's own Events (its creation, its Coordinator): what a Worker whose visibility
    starts later needs to act; no other WorkItem's Event."""
    _two_items(logged)
    package = _package(logged, W2)
    assert package["workItemId"] == W2
    cited = set(package["sourceEventRange"]["eventIds"])
    depends = set(logged.item(W2).contract.get("dependencyWorkItemIds", ()))
    about = {e["eventId"] for e in logged.w.events if e.get("workItemId") in {W2, *depends}}
    mission = {
        e["eventId"]
        for e in logged.w.events
        if e.get("groupId") == GROUP
        and e["kind"].startswith("mission.")
        and not e.get("workItemId")
    }
    assert mission and mission <= cited
    assert cited and cited <= about | mission | {
        e["eventId"]
        for e in logged.w.events
        if e.get("conversationId") == logged.item(W2).conversation_id
    }
    other = {e["eventId"] for e in logged.w.events if e.get("workItemId") == W1}
    assert W1 not in depends and not cited & other
    assert package["artifactHashes"] == []


@pytest.mark.req("MWP-WRK-027")
def test_an_update_is_a_new_version_with_provenance_to_the_previous(logged: Scene) -> None:
    _two_items(logged)
    first = _package(logged)
    logged.w.advance(5)
    logged.publish(W2, b"second result", "worker-b")
    second = _package(logged, previous=first)
    assert second["version"] == 2
    assert second["previousContextPackageId"] == first["contextPackageId"]
    assert second["contextPackageId"] != first["contextPackageId"]
    bound = second["extensions"][PROVENANCE_EXTENSION]["data"]
    assert bound == {"previousVersion": 1, "previousSigningHash": signing_hash(first)}
    assert problems("context-package", second) == []
    check_update(first, second)
    assert second["sourceEventRange"]["toSequence"] > first["sourceEventRange"]["toSequence"]


@pytest.mark.req("MWP-WRK-027")
def test_a_bad_update_is_refused(logged: Scene) -> None:
    _two_items(logged)
    first = _package(logged)
    with pytest.raises(ProtocolError) as caught:
        _package(logged, W1, previous=first)
    assert _code(caught) == "INVALID_COMMAND"
    with pytest.raises(ProtocolError) as caught:
        _package(logged, previous=first, through_sequence=2)
    assert _code(caught) == "INVALID_COMMAND"
    second = _package(logged, previous=first)
    swapped = dict(first, summary="A rewritten history")
    with pytest.raises(ProtocolError) as caught:
        check_update(swapped, second)
    assert "signing hash" in caught.value.explanation
    with pytest.raises(ProtocolError):
        check_update(second, first)


@pytest.mark.req("MWP-WRK-027")
def test_a_decision_must_cite_events_of_the_package(logged: Scene) -> None:
    _two_items(logged)
    with pytest.raises(ProtocolError) as caught:
        _package(logged, decisions=[("Use Postgres", ["urn:uuid:not-in-the-log"])])
    assert _code(caught) == "INVALID_COMMAND"
    first_event = next(e["eventId"] for e in logged.w.events if e.get("groupId") == GROUP)
    package = _package(logged, decisions=[("Use Postgres", [first_event])])
    assert {"description": "Use Postgres", "sourceEventIds": [first_event]} in package["decisions"]


@pytest.mark.req("MWP-WRK-027")
def test_the_coordinator_fetches_every_cited_event(logged: Scene) -> None:
    _two_items(logged)
    package = _package(logged)
    fetched = fetch_cited_events(
        logged.w.state, logged.w.log.store, package, logged.id("coordinator")
    )
    assert [e["eventId"] for e in fetched] == cited_event_ids(package)
    assert all(e["groupId"] == GROUP for e in fetched)


@pytest.mark.req("MWP-WRK-027")
def test_the_worker_a_package_was_made_for_fetches_its_cited_history(logged: Scene) -> None:
    """The package scoped to W2 cites W2's history from before worker-b's visibility start
    (its work.authorized precedes the offer that granted the Membership): worker-b, whose
    Membership covers W2, fetches every Event of it the package cites (MWP-WRK-027)."""
    _two_items(logged)
    package = _package(logged, W2)
    worker_b = logged.id("worker-b")
    start = logged.w.state.memberships[(GROUP, worker_b)].document["visibilityStartSequence"]
    cited = {e["eventId"]: e for e in logged.w.events if e["eventId"] in cited_event_ids(package)}
    mine = [i for i, e in cited.items() if e.get("workItemId") == W2]
    assert any(cited[i]["sequence"] < start for i in mine)  # history from before its start
    assert any(cited[i]["kind"] == "work.authorized" for i in mine)
    fetched = fetch_cited_events(logged.w.state, logged.w.log.store, package, worker_b, mine)
    assert [e["eventId"] for e in fetched] == mine


@pytest.mark.req("MWP-WRK-027")
def test_a_late_joiner_gets_no_other_history_from_before_its_start(logged: Scene) -> None:
    """A package of the whole Mission (not made for worker-b) lends it nothing from before
    its visibility start; nor does the W2 package for Events not about W2."""
    _two_items(logged)
    worker_b = logged.id("worker-b")
    start = logged.w.state.memberships[(GROUP, worker_b)].document["visibilityStartSequence"]
    whole = _package(logged)
    cited = {e["eventId"]: e for e in logged.w.events if e["eventId"] in cited_event_ids(whole)}
    before = [i for i, e in cited.items() if e["sequence"] < start and e.get("workItemId") == W2]
    assert before
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(logged.w.state, logged.w.log.store, whole, worker_b, before)
    assert _code(caught) == "AUTH_FORBIDDEN"
    assert set(caught.value.details["denied"]) == set(before)
    package = _package(logged, W2)
    cited = {e["eventId"]: e for e in logged.w.events if e["eventId"] in cited_event_ids(package)}
    other = [i for i, e in cited.items() if e["sequence"] < start and e.get("workItemId") != W2]
    # What the W2 package cites from before the start besides W2 is the Mission's own (its
    # creation, its Coordinator): worker-b needs it to act in the Group, and fetches it ...
    assert other and all(
        cited[i]["kind"].startswith("mission.") and not cited[i].get("workItemId") for i in other
    )
    fetched = fetch_cited_events(logged.w.state, logged.w.log.store, package, worker_b, other)
    assert [e["eventId"] for e in fetched] == other
    # ... but the package lends it to nobody it was not made for (worker-a: W1 only).
    worker_a = logged.id("worker-a")
    start_a = logged.w.state.memberships[(GROUP, worker_a)].document["visibilityStartSequence"]
    early = [i for i in other if cited[i]["sequence"] < start_a]
    assert early
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(logged.w.state, logged.w.log.store, package, worker_a, early)
    assert _code(caught) == "AUTH_FORBIDDEN"
    assert set(caught.value.details["denied"]) == set(early)


@pytest.mark.req("MWP-WRK-027")
def test_events_outside_the_requesters_scopes_are_refused(logged: Scene) -> None:
    _two_items(logged)
    package = _package(logged)
    w1_events = [
        e["eventId"]
        for e in logged.w.events
        if e.get("workItemId") == W1 and e["eventId"] in cited_event_ids(package)
    ]
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(
            logged.w.state, logged.w.log.store, package, logged.id("worker-b"), w1_events
        )
    assert _code(caught) == "AUTH_FORBIDDEN"


@pytest.mark.req("MWP-WRK-027")
def test_an_authorized_earlier_visibility_lets_a_joiner_read_cited_history(logged: Scene) -> None:
    _two_items(logged)
    package = _package(logged, W1)
    w = logged.w
    w.ok(
        "coordinator",
        "membership.change",
        {
            "member": {"type": "agent", "id": logged.id("reviewer")},
            "role": "reviewer",
            "state": "active",
            "scopes": ["work:" + W1],
            "visibilityStartSequence": 1,
        },
    )
    fetched = fetch_cited_events(w.state, w.log.store, package, logged.id("reviewer"))
    assert [e["eventId"] for e in fetched] == cited_event_ids(package)
    w.ok("coordinator", "membership.end", {"principalId": logged.id("reviewer")})
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(w.state, w.log.store, package, logged.id("reviewer"))
    assert _code(caught) == "MEMBERSHIP_REQUIRED"


@pytest.mark.req("MWP-WRK-027")
def test_only_cited_events_of_a_genuine_package_can_be_fetched(logged: Scene) -> None:
    _two_items(logged)
    package = _package(logged, W2)
    state, store, coordinator = logged.w.state, logged.w.log.store, logged.id("coordinator")
    uncited = next(e["eventId"] for e in logged.w.events if e.get("workItemId") == W1)
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(state, store, package, coordinator, [uncited])
    assert _code(caught) == "INVALID_COMMAND"
    tampered = dict(
        package, sourceEventRange={**package["sourceEventRange"], "eventIds": [uncited]}
    )
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(state, store, tampered, coordinator)
    assert _code(caught) == "AUTH_INVALID_SIGNATURE"
    by_worker = _package(logged, W2, generator="worker-b")
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(state, store, by_worker, coordinator)
    assert caught.value.code is ErrorCode.AUTH_FORBIDDEN
    with pytest.raises(ProtocolError) as caught:
        fetch_cited_events(state, store, package, logged.id("reviewer"))
    assert _code(caught) == "MEMBERSHIP_REQUIRED"


@pytest.mark.req("MWP-WRK-027")
def test_a_replacement_coordinator_reads_the_package_and_continues_its_versions(
    logged: Scene,
) -> None:
    _two_items(logged)
    first = _package(logged)
    logged.w.ok(
        "mission-owner",
        "mission.assign_coordinator",
        {"coordinatorAgentId": logged.id("reviewer"), "reason": "the Coordinator stopped renewing"},
    )
    replacement = logged.id("reviewer")
    fetched = fetch_cited_events(logged.w.state, logged.w.log.store, first, replacement)
    assert [e["eventId"] for e in fetched] == cited_event_ids(first)
    second = _package(logged, previous=first, generator="reviewer")
    check_update(first, second)
    assert verify_context_package(second, logged.w.state).principal.id == replacement
    assert any("appointed" in d["description"] for d in second["decisions"])
