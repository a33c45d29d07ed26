"""The state table before the fences (§10.2, MWP-WRK-003): a transition the table forbids is
``INVALID_STATE_TRANSITION`` whatever else is wrong with the Command (no owner, no current
lease, a stale Ownership Epoch or expected revision); only then do the row's fences speak. Each
case is the Command a careless client sends, refused with that code, changing nothing
(``World.refuse`` compares the state, and on DuckDB the stored log and projections)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.protocol.documents.kinds import ExtensionCommandKind as XC

from .world import WHERE_REFUSED, World, mission_world

WID = "urn:mwp-local:work:impl"
TABLE = "INVALID_STATE_TRANSITION"


@pytest.fixture(params=WHERE_REFUSED)
def world(request: pytest.FixtureRequest, tmp_path: Path) -> World:
    return mission_world(request.param, tmp_path)


def _queued(w: World) -> None:
    w.authorize(WID)
    w.offer(WID)
    w.accept(WID)


def _submission(w: World) -> dict[str, object]:
    """What a submission of WID would carry (its lease, an Artifact, Evidence)."""
    manifest = w.artifact(WID, content=b"late")
    evidence = w.evidence(WID, manifest["contentHash"])
    return {
        **w.lease(WID),
        "artifactHashes": [manifest["contentHash"]],
        "evidence": [evidence],
    }


@pytest.mark.req("MWP-WRK-003")
def test_submit_from_queued_is_refused_by_the_table_not_the_lease_fence(world: World) -> None:
    _queued(world)  # owned, no Execution Lease yet: the lease fence would say WORK_LEASE_EXPIRED
    refused = world.refuse(TABLE, "worker-a", "work.submit", _submission(world))
    assert "'queued'" in refused.error.explanation
    assert refused.error.details["transition"] == "work.submit"


@pytest.mark.req("MWP-WRK-003")
def test_checkpoint_from_queued_is_refused_by_the_table(world: World) -> None:
    _queued(world)
    world.refuse(
        TABLE,
        "worker-a",
        "work.checkpoint",
        {**world.lease(WID), "checkpoint": {"progress": world.progress()}},
    )


@pytest.mark.req("MWP-WRK-003")
def test_submit_after_verified_is_refused_by_the_table(world: World) -> None:
    world.run_to_submitted(WID)
    world.accept_result(WID)
    refused = world.refuse(TABLE, "worker-a", "work.submit", _submission(world))
    assert "terminal" in refused.error.explanation


@pytest.mark.req("MWP-WRK-003")
def test_start_from_offered_is_refused_by_the_table_not_the_owner_fence(world: World) -> None:
    world.authorize(WID)
    world.offer(WID)  # nobody owns it yet: the owner fence would say AUTH_FORBIDDEN
    world.refuse(TABLE, "worker-a", "work.start", {"workItemId": WID, "ownershipEpoch": 1})


@pytest.mark.req("MWP-WRK-003")
def test_a_stale_expected_revision_does_not_hide_a_forbidden_transition(world: World) -> None:
    world.run_to_submitted(WID)
    world.accept_result(WID)
    world.refuse(
        TABLE,
        "worker-a",
        "work.start",
        {"workItemId": WID, "ownershipEpoch": 1},
        expected_revision=1,
    )


@pytest.mark.req("MWP-WRK-003")
def test_an_in_state_action_checks_its_states_before_the_lease(world: World) -> None:
    _queued(world)
    world.refuse(TABLE, "worker-a", XC.WORK_EXECUTION_LEASE_RENEW.value, world.lease(WID))


@pytest.mark.req("MWP-WRK-013")
def test_where_the_table_allows_the_move_the_fences_decide(world: World) -> None:
    _queued(world)
    world.start(WID)
    stale = {**world.lease(WID), "leaseId": "urn:uuid:00000000-0000-4000-8000-0000000000ff"}
    world.refuse("WORK_LEASE_EXPIRED", "worker-a", "work.submit", {**_submission(world), **stale})
    world.refuse(
        "AUTH_FORBIDDEN",
        "coordinator",  # a member, but not the owner
        "work.checkpoint",
        {**world.lease(WID), "checkpoint": {"progress": world.progress()}},
    )
    world.refuse(
        "REVISION_CONFLICT",
        "worker-a",
        "work.fail",
        {**world.lease(WID), "evidence": [world.evidence(WID, "sha256:" + "0" * 64)]},
        expected_revision=1,
    )


@pytest.mark.req("MWP-WRK-004")
def test_a_lost_race_is_still_named_for_what_it_is(world: World) -> None:
    """The row's refusal explains the forbidden move: the loser's acceptance of an item the
    winner owns is WORK_ALREADY_OWNED, never an acceptance."""
    world.authorize(WID, requestedUrgency="critical")
    world.ok(
        "coordinator",
        "work.offer",
        {
            "workItemId": WID,
            "offers": [
                {"agentId": world.org.get("worker-a").id, "expiresAt": world.at(60)},
                {"agentId": world.org.get("worker-b").id, "expiresAt": world.at(60)},
            ],
            "selectionBasis": world.basis(),
        },
    )
    revision = world.state.work_items[WID].revision
    world.ok("worker-b", "work.accept_offer", {"workItemId": WID}, expected_revision=revision)
    world.refuse(
        "WORK_ALREADY_OWNED",
        "worker-a",
        "work.accept_offer",
        {"workItemId": WID},
        expected_revision=revision + 1,
    )
