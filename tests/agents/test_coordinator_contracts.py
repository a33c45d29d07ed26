"""Every WorkItem the Coordinator authorizes carries a complete, versioned Work Contract; an
incomplete one is refused with WORK_CONTRACT_INCOMPLETE (MWP-WRK-001). An ambiguous contract is
questioned in the WorkItem Conversation and answered with a new offer carrying the corrected
contract, whose higher version needs renewed acceptance (MWP-WRK-002)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.base import Intent
from mwp_local.agents.coordinator.contracts import QUESTION_SCHEMA, ambiguities
from mwp_local.agents.naming import agent_id
from mwp_local.protocol.documents import validate

from .coordinator_harness import (
    base_file,
    events,
    has_item,
    item,
    make,
    mission_state,
    rejections,
    run_until,
    runtime_of,
    send,
)

#: Every member §10.1 and ``work-contract.schema.json`` require.
REQUIRED = (
    "contractVersion",
    "goal",
    "requiredDeliverables",
    "acceptanceCriteria",
    "inputArtifacts",
    "dependencyWorkItemIds",
    "allowedResources",
    "requiredCapabilities",
    "deadline",
    "requestedUrgency",
    "businessImpact",
    "retryPolicy",
    "budget",
    "sideEffectRisk",
    "executionApproval",
)


def _ambiguous_file() -> dict[str, Any]:
    return base_file(
        work=[
            {
                "id": "export",
                "goal": "Export the report as CSV",
                "capability": "mwp.build@1.0.0",
                "duration": "20m",
                "budget": {"financial": 20},
                "ambiguous": "Which field delimiter must the CSV use?",
                "clarification": "Semicolons, with a header row.",
            }
        ]
    )


@pytest.mark.req("MWP-WRK-001")
def test_every_work_item_the_coordinator_authorizes_carries_a_complete_versioned_contract(
    tmp_path: Path,
) -> None:
    sandbox = make(
        tmp_path,
        base_file(
            work=base_file()["missions"][0]["work"]
            + [{"id": "b", "goal": "Build B", "capability": "mwp.build@1.0.0", "depends_on": ["a"]}]
        ),
    )
    sandbox.run()
    authorized = events(sandbox, "work.authorized")
    assert len(authorized) == 2
    for event in authorized:
        contract = event["payload"]["workItem"]["contract"]
        validate("work-contract", contract)  # raises on any problem
        assert set(REQUIRED) <= set(contract)
        assert contract["contractVersion"] == 1
        assert contract["acceptanceCriteria"] and contract["requiredCapabilities"]
        assert contract["constraints"]["dependencyPolicy"] == "all_verified"


@pytest.mark.req("MWP-WRK-001")
@pytest.mark.parametrize("missing", ["acceptanceCriteria", "retryPolicy", "budget", "deadline"])
def test_an_incomplete_contract_from_the_coordinator_is_refused_and_changes_nothing(
    tmp_path: Path, missing: str
) -> None:
    sandbox = make(tmp_path, base_file())
    run_until(sandbox, lambda s: mission_state(s) == "active")
    coordinator = runtime_of(sandbox, "coord")
    planned = next(
        i for i in coordinator.intents(sandbox.clock.now_us()) if i.kind == "work.authorize"
    )
    contract = copy.deepcopy(planned.payload["contract"])
    del contract[missing]
    broken = Intent(
        kind=planned.kind,
        group=planned.group,
        payload={**planned.payload, "contract": contract},
        tag="broken",
    )
    before = sandbox.log.store.event_count()
    outcome = send(sandbox, "coord", broken)
    assert not outcome.ok
    assert outcome.error.code.value == "WORK_CONTRACT_INCOMPLETE"  # type: ignore[union-attr]
    assert sandbox.log.store.event_count() == before
    assert not has_item(sandbox, "a")
    assert rejections(sandbox)[-1]["code"] == "WORK_CONTRACT_INCOMPLETE"
    # the Coordinator's own, complete contract is then accepted
    assert send(sandbox, "coord", planned).ok


@pytest.mark.req("MWP-WRK-002")
def test_an_ambiguous_contract_is_questioned_then_answered_with_a_revised_offer(
    tmp_path: Path,
) -> None:
    sandbox = make(tmp_path, _ambiguous_file())
    sandbox.run()
    assert mission_state(sandbox) == "approved"
    export = item(sandbox, "export")
    docs = events(sandbox)
    wid = export.work_item_id

    def index(kind: str, test: Any = lambda e: True) -> int:
        return next(
            i
            for i, e in enumerate(docs)
            if e["kind"] == kind and e["payload"].get("workItemId", wid) == wid and test(e)
        )

    first_offer = index("work.offer.created")
    assert docs[first_offer]["payload"]["contractVersion"] == 1
    question = index(
        "message.posted",
        lambda e: any(
            p.get("schema") == QUESTION_SCHEMA for p in e["payload"]["message"]["content"]
        ),
    )
    revised = index("work.contract.revised")
    second_offer = index("work.offer.created", lambda e: e["payload"]["contractVersion"] == 2)
    accepted = index("work.offer.accepted")
    assert first_offer < question < revised < second_offer < accepted
    message = docs[question]["payload"]["message"]
    assert message["conversationId"] == export.conversation_id  # the WorkItem Conversation
    assert message["authority"] is False
    # the Worker did not accept the ambiguous version
    assert docs[accepted]["payload"]["offerId"] in {
        o["offerId"] for o in docs[second_offer]["payload"]["offers"]
    }
    change = docs[revised]["payload"]
    assert change["previousContractVersion"] == 1 and change["renewedAcceptanceRequired"]
    contract = change["contract"]
    assert contract["contractVersion"] == 2 and ambiguities(contract) == []
    assert contract["constraints"]["clarifications"] == [
        {
            "question": "Which field delimiter must the CSV use?",
            "answer": "Semicolons, with a header row.",
        }
    ]
    validate("work-contract", contract)
    assert export.contract_version == 2
    # the first offer was withdrawn by the revision
    first_ids = [o["offerId"] for o in docs[first_offer]["payload"]["offers"]]
    assert all(sandbox.log.state.offers[o].status == "withdrawn" for o in first_ids)


@pytest.mark.req("MWP-WRK-002")
def test_the_offer_of_the_ambiguous_version_can_no_longer_be_accepted(tmp_path: Path) -> None:
    sandbox = make(tmp_path, _ambiguous_file())
    run_until(sandbox, lambda s: has_item(s, "export") and item(s, "export").contract_version == 2)
    export = item(sandbox, "export")
    old = next(
        o
        for o in sandbox.log.state.offers.values()
        if o.work_item_id == export.work_item_id and o.contract_version == 1
    )
    late = Intent(
        kind="work.accept_offer",
        group=export.group_id,
        payload={"workItemId": export.work_item_id, "offerId": old.offer_id},
        overrides={"expected_revision": export.revision},
        tag="late",
    )
    outcome = send(sandbox, old.agent_id.rsplit(":", 1)[-1], late)
    assert not outcome.ok
    assert outcome.error.code.value == "WORK_OFFER_EXPIRED"  # type: ignore[union-attr]
    assert item(sandbox, "export").owner is None


@pytest.mark.req("MWP-WRK-002")
def test_a_clear_contract_is_accepted_without_questions(tmp_path: Path) -> None:
    sandbox = make(tmp_path, base_file())
    sandbox.run()
    assert not events(sandbox, "work.contract.revised")
    assert not [
        e
        for e in events(sandbox, "message.posted")
        if e["payload"]["message"]["author"]["id"] == agent_id("w1")
    ]
