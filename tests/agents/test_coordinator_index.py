"""The Coordinator's indexes (``coordinator_index``) read what a full scan of the view reads."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mwp_local.agents.coordinator.index import Agenda, Due, MissionItems, OpenOffers, epoch_us
from mwp_local.authority.model import OfferRecord, WorkItemRecord
from mwp_local.authority.state import AuthorityState
from mwp_local.protocol.tables import WorkItemState
from mwp_local.protocol.timestamps import parse_timestamp

W = WorkItemState
DEADLINE = "2026-07-16T09:00:00.5Z"


def _state() -> AuthorityState:
    return AuthorityState(registry=None, organization_id="org")  # type: ignore[arg-type]


def _item(wid: str, mission: str = "m", deps: tuple[str, ...] = (), **kw: Any) -> WorkItemRecord:
    contract = {
        "contractVersion": 1,
        "deadline": DEADLINE,
        "dependencyWorkItemIds": list(deps),
        "constraints": {"dependencyPolicy": "all_verified"},
    }
    return WorkItemRecord(
        work_item_id=wid,
        mission_id=mission,
        group_id="g",
        conversation_id="c",
        state=kw.pop("state", W.OPEN),
        revision=1,
        exclusive=True,
        contract=contract,
        created_by={},
        created_at=DEADLINE,
        **kw,
    )


def test_epoch_us_is_the_parsed_instant() -> None:
    assert epoch_us(DEADLINE) == parse_timestamp(DEADLINE).epoch_micros


def test_mission_items_follow_the_replica() -> None:
    state, index = _state(), MissionItems()
    state.put("work_items", "b", _item("b"))
    state.put("work_items", "x", _item("x", mission="other"))
    assert index.ids(state, "m") == ["b"]
    state.put("work_items", "a", _item("a", deps=("b",)))
    assert index.ids(state, "m") == ["a", "b"]
    assert list(index.items(state, "m")) == ["a", "b"]
    facts = index.facts(state.work_items["a"])
    assert facts.dependencies == ("b",) and facts.deadline_us == epoch_us(DEADLINE)
    assert index.facts(state.work_items["a"]) is facts  # same contract: not read again
    assert index.ids(_state(), "m") == []  # another replica: rebuilt


def test_the_agenda_reclassifies_dependents_of_a_changed_item() -> None:
    state, index = _state(), MissionItems()
    state.put("work_items", "a", _item("a"))
    state.put("work_items", "b", _item("b", deps=("a",)))

    def classify(item: WorkItemRecord, items: Any) -> Due:
        if item.state is not W.OPEN:
            return Due.IDLE
        return Due.ACT if index.facts(item).satisfied(items) else Due.WAIT

    agenda = Agenda(classify)
    agenda.update(index.items(state, "m"), index)
    assert agenda.due(0) == ["a"]
    assert agenda.due(epoch_us(DEADLINE)) == ["a", "b"]  # b's deadline passed
    state.put("work_items", "a", replace(state.work_items["a"], state=W.VERIFIED))
    agenda.update(index.items(state, "m"), index)
    assert agenda.due(0) == ["b"]
    state.put("work_items", "b", replace(state.work_items["b"], state=W.SUBMITTED))
    agenda.update(index.items(state, "m"), index)
    assert agenda.due(0) == [] and agenda.submitted == {"b"}


def test_open_offers_are_the_pending_ones() -> None:
    state, offers = _state(), OpenOffers()

    def offer(oid: str) -> OfferRecord:
        return OfferRecord(
            offer_id=oid,
            work_item_id="a",
            group_id="g",
            agent_id="x",
            agent_card_version=1,
            contract_version=1,
            expires_at=DEADLINE,
            expires_us=epoch_us(DEADLINE),
        )

    state.put("offers", "o1", offer("o1"))
    state.put("offers", "o2", offer("o2"))
    assert [o.offer_id for o in offers.pending(state)] == ["o1", "o2"]
    state.put("offers", "o1", replace(state.offers["o1"], status="accepted"))
    state.put("offers", "o3", offer("o3"))
    assert [o.offer_id for o in offers.pending(state)] == ["o2", "o3"]
