"""The §10.2 and §7.1 matrices walked through the real Authority (MWP-WRK-003).

For every WorkItem state and every Command-driven transition, a WorkItem is driven into that
state and the Command is sent: the table's allowed pairs are accepted and land in the table's
next state; every other pair is refused (``INVALID_STATE_TRANSITION``, or the epoch/lease fence
that the pipeline applies before the tables) and changes nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from mwp_local.authority import Accepted, AuthorityConfig
from mwp_local.protocol.tables import (
    MISSION_TABLE,
    WORK_ITEM_TABLE,
    MissionState,
    MissionTransition,
    WorkItemState,
    WorkTransition,
)

from .world import GROUP, MISSION, World

W = WorkItemState
T = WorkTransition
WID = "urn:mwp-local:work:matrix"
CONFIG = AuthorityConfig(coordinator_lease_us=86_400_000_000)


def _world() -> World:
    w = World(config=CONFIG)
    w.bootstrap()
    w.create_mission()
    worker = w.org.get("worker-a").actor
    w.ok(
        "coordinator", "membership.change", {"member": worker, "role": "worker", "state": "active"}
    )
    return w


def _grant(w: World) -> None:
    item = w.state.work_items[WID]
    approval = w.org.sign(
        "approval",
        "mission-owner",
        {
            "approvalId": f"urn:mwp-local:approval:exec-{w._tick}",
            "kind": "work_execution",
            "decision": "approved",
            "missionId": MISSION,
            "groupId": GROUP,
            "workItemId": WID,
            "missionRevision": w.state.missions[MISSION].revision,
            "artifactHashes": [],
            "acceptancePolicyVersion": "1.0.0",
            "approver": w.org.get("mission-owner").actor,
            "comments": "go",
            "conditions": [],
            "occurredAt": w.at(0),
        },
    )
    w._tick += 1
    w.ok(
        "mission-owner",
        "approval.grant_execution",
        {"workItemId": WID, "approval": approval},
        expected_revision=item.revision,
    )


def _publish(w: World) -> str:
    manifest = w.artifact(WID, content=f"content-{w._tick}".encode())
    w._tick += 1
    w.ok("worker-a", "artifact.publish", {**w.lease(WID), "artifact": manifest})
    return str(manifest["contentHash"])


def _submit(w: World) -> None:
    h = _publish(w)
    w.ok(
        "worker-a",
        "work.submit",
        {**w.lease(WID), "artifactHashes": [h], "evidence": [w.evidence(WID, h)]},
    )


REACH: dict[WorkItemState, list[Callable[[World], Any]]] = {
    W.OPEN: [lambda w: w.authorize(WID, executionApproval="human_required")],
}
REACH[W.OFFERED] = [*REACH[W.OPEN], lambda w: w.offer(WID)]
REACH[W.QUEUED] = [*REACH[W.OFFERED], lambda w: w.accept(WID)]
REACH[W.ACTIVE] = [*REACH[W.QUEUED], _grant, lambda w: w.start(WID)]
REACH[W.BLOCKED] = [
    *REACH[W.ACTIVE],
    lambda w: w.ok(
        "worker-a",
        "work.block",
        {
            **w.lease(WID),
            "requiredResolution": "need access",
            "checkpoint": {"progress": w.progress()},
        },
    ),
]
REACH[W.SUBMITTED] = [*REACH[W.ACTIVE], _submit]
REACH[W.VERIFIED] = [
    *REACH[W.SUBMITTED],
    lambda w: w.accept_result(WID),
]
REACH[W.FAILED] = [
    *REACH[W.ACTIVE],
    lambda w: w.ok(
        "worker-a",
        "work.fail",
        {
            **w.lease(WID),
            "evidence": [w.evidence(WID, "sha256:" + "1" * 64, kind="failure_report")],
        },
    ),
]
REACH[W.CANCELLED] = [
    *REACH[W.OPEN],
    lambda w: w.ok("coordinator", "work.cancel", {"workItemId": WID}),
]


def _expire_owner(w: World) -> None:
    w.advance(3 * 3600)
    w.authority.expire(w.now())


def _child(w: World) -> dict[str, Any]:
    return {
        "parentWorkItemId": WID,
        "missionId": "urn:mwp-local:mission:child",
        "childGroupId": "urn:mwp-local:group:child",
        "coordinatorAgentId": w.org.get("reviewer").id,
        "objective": "Sub-problem",
        "definitionOfDone": [
            {"criterionId": "c", "description": "c", "evidenceRequired": ["human_review"]}
        ],
        "budget": {"currency": "EUR", "financialLimit": 5},
        "deadline": "2026-07-19T00:00:00Z",
    }


# transition → (preparation when the table allows it, who sends, kind, payload builder, options)
ATTEMPTS: dict[
    WorkTransition,
    tuple[
        Callable[[World], None] | None,
        str,
        str,
        Callable[[World], dict[str, Any]],
        Callable[[World], dict[str, Any]],
    ],
] = {
    T.OFFER: (
        _expire_owner,
        "coordinator",
        "work.offer",
        lambda w: {
            "workItemId": WID,
            "agentId": w.org.get("worker-b").id,
            "expiresAt": w.at(300),
            "selectionBasis": w.basis(),
        },
        lambda w: {},
    ),
    T.ACCEPT_OFFER: (
        None,
        "worker-a",
        "work.accept_offer",
        lambda w: {"workItemId": WID},
        lambda w: {"expected_revision": w.state.work_items[WID].revision},
    ),
    T.GRANT_EXECUTION: (
        None,
        "mission-owner",
        "approval.grant_execution",
        lambda w: {"workItemId": WID, "approval": {}},
        lambda w: {"expected_revision": w.state.work_items[WID].revision},
    ),
    T.START: (
        _grant,
        "worker-a",
        "work.start",
        lambda w: {"workItemId": WID, "ownershipEpoch": w.state.work_items[WID].ownership_epoch},
        lambda w: {},
    ),
    T.CHECKPOINT: (
        None,
        "worker-a",
        "work.checkpoint",
        lambda w: {**w.lease(WID), "checkpoint": {"progress": w.progress()}},
        lambda w: {},
    ),
    T.BLOCK: (
        None,
        "worker-a",
        "work.block",
        lambda w: {
            **w.lease(WID),
            "requiredResolution": "x",
            "checkpoint": {"progress": w.progress()},
        },
        lambda w: {},
    ),
    T.UNBLOCK: (
        None,
        "coordinator",
        "work.unblock",
        lambda w: {"workItemId": WID, "resolution": "resolved"},
        lambda w: {},
    ),
    T.SUBMIT: (
        None,
        "worker-a",
        "work.submit",
        lambda w: {**w.lease(WID), "artifactHashes": ["sha256:" + "2" * 64], "evidence": []},
        lambda w: {},
    ),
    T.ACCEPT_RESULT: (
        None,
        "coordinator",
        "work.accept_result",
        lambda w: (
            w.review(WID).accept_result_payload()
            if w.state.work_items[WID].state == "submitted"
            else {"workItemId": WID}
        ),
        lambda w: {},
    ),
    T.FAIL: (
        None,
        "coordinator",
        "work.fail",
        lambda w: {
            "workItemId": WID,
            "evidence": [w.evidence(WID, "sha256:" + "3" * 64, kind="failure_report")],
        },
        lambda w: {},
    ),
    T.CANCEL: (None, "coordinator", "work.cancel", lambda w: {"workItemId": WID}, lambda w: {}),
    T.CREATE_CHILD: (None, "coordinator", "mission.create_child", _child, lambda w: {}),
}
STATES = [
    W.OPEN,
    W.OFFERED,
    W.QUEUED,
    W.ACTIVE,
    W.BLOCKED,
    W.SUBMITTED,
    W.VERIFIED,
    W.FAILED,
    W.CANCELLED,
]
#: Commands of the owning Worker meet the Ownership-Epoch and Lease-ID fences before the table.
OWNER_FENCED = {T.START, T.CHECKPOINT, T.BLOCK, T.SUBMIT}
PAIRS = list(itertools.product(STATES, ATTEMPTS))


@pytest.mark.req("MWP-WRK-003")
@pytest.mark.parametrize(("state", "transition"), PAIRS, ids=[f"{s}-{t}" for s, t in PAIRS])
def test_work_item_matrix_through_the_authority(
    state: WorkItemState, transition: WorkTransition
) -> None:
    w = _world()
    for step in REACH[state]:
        step(w)
    assert w.state.work_items[WID].state is state
    prepare, who, kind, payload, options = ATTEMPTS[transition]
    allowed = WORK_ITEM_TABLE.is_allowed(state, transition)
    if allowed and transition is T.SUBMIT:
        _publish(w)
        h = w.state.work_items[WID].artifact_hashes[-1]

        def payload(w: World) -> dict[str, Any]:
            return {**w.lease(WID), "artifactHashes": [h], "evidence": [w.evidence(WID, h)]}

    if allowed and transition is T.GRANT_EXECUTION:
        _grant(w)
        return
    needs_preparation = (transition is not T.START or state is W.QUEUED) and (
        transition is not T.OFFER or state in (W.QUEUED, W.ACTIVE, W.BLOCKED)
    )
    if allowed and prepare is not None and needs_preparation:
        prepare(w)
    if allowed:
        outcome = w.send(who, kind, payload(w), **options(w))
        assert isinstance(outcome, Accepted), f"{state} + {transition}: {outcome.error!r}"
        targets = {str(t) for t in WORK_ITEM_TABLE.lookup(state, transition).targets}
        assert str(w.state.work_items[WID].state) in targets
    else:
        rejected = (
            w.refuse("INVALID_STATE_TRANSITION", who, kind, payload(w), **options(w))
            if transition not in OWNER_FENCED
            else None
        )
        if rejected is None:
            before = w.snapshot()
            outcome = w.send(who, kind, payload(w), **options(w))
            assert not outcome.ok
            assert outcome.error.code.value in {
                "INVALID_STATE_TRANSITION",
                "AUTH_FORBIDDEN",
                "WORK_LEASE_EXPIRED",
            }
            assert w.snapshot() == before


def _submitted_mission(w: World) -> str:
    artifact = w.run_to_submitted("urn:mwp-local:work:m")
    w.accept_result("urn:mwp-local:work:m")
    return artifact


def _submit_mission(w: World) -> None:
    artifact = _submitted_mission(w)
    w.ok("coordinator", "mission.submit_for_approval", {"artifactHashes": [artifact]})


def _mission_approval(w: World, decision: str) -> dict[str, Any]:
    mission = w.state.missions[MISSION]
    return w.org.sign(
        "approval",
        "mission-owner",
        {
            "approvalId": f"urn:mwp-local:approval:{decision}-{w._tick}",
            "kind": "mission_final",
            "decision": decision,
            "missionId": MISSION,
            "groupId": GROUP,
            "missionRevision": mission.submitted_revision or 0,
            "artifactHashes": list(mission.submitted_artifacts) or ["sha256:" + "4" * 64],
            "acceptancePolicyVersion": "1.0.0",
            "approver": w.org.get("mission-owner").actor,
            "comments": "c",
            "conditions": [],
            "occurredAt": w.at(0),
        },
    )


M = MissionState
MT = MissionTransition
MISSION_REACH: dict[MissionState, list[Callable[[World], Any]]] = {
    M.ACTIVE: [],
    M.AWAITING_APPROVAL: [_submit_mission],
    M.APPROVED: [
        _submit_mission,
        lambda w: w.ok(
            "mission-owner",
            "mission.approve",
            {"approval": _mission_approval(w, "approved")},
            expected_revision=w.state.missions[MISSION].revision,
        ),
    ],
    M.CANCELLED: [
        lambda w: w.ok("mission-owner", "mission.cancel", {"reason": "no longer needed"})
    ],
    M.FAILED: [lambda w: w.ok("coordinator", "mission.terminate", {"reason": "impossible"})],
}
MISSION_ATTEMPTS: dict[
    MissionTransition,
    tuple[str, str, Callable[[World], dict[str, Any]], Callable[[World], dict[str, Any]]],
] = {
    MT.SUBMIT_FOR_APPROVAL: (
        "coordinator",
        "mission.submit_for_approval",
        lambda w: {"artifactHashes": [next(iter(w.state.artifact_ids), "sha256:" + "5" * 64)]},
        lambda w: {},
    ),
    MT.REQUEST_CHANGES: (
        "mission-owner",
        "mission.request_changes",
        lambda w: {"reason": "please add tests"},
        lambda w: {},
    ),
    MT.APPROVE: (
        "mission-owner",
        "mission.approve",
        lambda w: {"approval": _mission_approval(w, "approved")},
        lambda w: {"expected_revision": w.state.missions[MISSION].revision},
    ),
    MT.CANCEL: ("mission-owner", "mission.cancel", lambda w: {"reason": "stop"}, lambda w: {}),
    MT.TERMINATE: ("coordinator", "mission.terminate", lambda w: {"reason": "fail"}, lambda w: {}),
}
MISSION_PAIRS = list(itertools.product(MISSION_REACH, MISSION_ATTEMPTS))


@pytest.mark.parametrize(
    ("state", "transition"), MISSION_PAIRS, ids=[f"{s}-{t}" for s, t in MISSION_PAIRS]
)
def test_mission_matrix_through_the_authority(
    state: MissionState, transition: MissionTransition
) -> None:
    w = _world()
    for step in MISSION_REACH[state]:
        step(w)
    if state is M.ACTIVE and transition is MT.SUBMIT_FOR_APPROVAL:
        _submitted_mission(w)
    assert w.state.missions[MISSION].state is state
    who, kind, payload, options = MISSION_ATTEMPTS[transition]
    if MISSION_TABLE.is_allowed(state, transition):
        outcome = w.send(who, kind, payload(w), **options(w))
        assert isinstance(outcome, Accepted), f"{state} + {transition}: {outcome.error!r}"
        assert w.state.missions[MISSION].state in MISSION_TABLE.lookup(state, transition).targets
    else:
        w.refuse("INVALID_STATE_TRANSITION", who, kind, payload(w), **options(w))
