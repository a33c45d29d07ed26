"""An offer of a second WorkItem to a Worker already in the Group, sent by hand (§8, §13.3): the
Membership's scopes grow under the next Membership Epoch with a signed Context Package; an offer
that would widen them without one is refused and changes nothing; the Worker's Commands about
its first WorkItem carry the new epoch."""

from __future__ import annotations

import pytest

from mwp_local.client import Workbench
from mwp_local.protocol.jsontext import parse_strict

from ..official_schemas import embedded_problems, problems
from .test_client import refused, signed

FIRST, SECOND = "urn:mwp-local:work:first", "urn:mwp-local:work:second"


@pytest.fixture
def wb() -> Workbench:
    bench = Workbench()
    bench.create_mission()
    bench.authorize(FIRST)
    bench.offer(FIRST)
    bench.take(FIRST)
    bench.authorize(SECOND)
    return bench


def _membership(wb: Workbench) -> dict[str, object]:
    worker = wb.org.get("worker-a").id
    return dict(wb.state.memberships[(wb.group, worker)].document)


@pytest.mark.req("MWP-WRK-028")
def test_an_offer_of_a_second_work_item_widens_the_scopes_under_the_next_epoch(
    wb: Workbench,
) -> None:
    before = _membership(wb)
    assert before["scopes"] == ["work:" + FIRST] and before["state"] == "active"
    receipt = wb.offer(SECOND)
    events = [parse_strict(r.document) for r in receipt.events]
    changed = [e for e in events if e["kind"] == "membership.changed"]
    assert len(changed) == 1
    doc = changed[0]["payload"]["membership"]
    assert doc["scopes"] == ["work:" + FIRST, "work:" + SECOND]
    assert doc["membershipEpoch"] == before["membershipEpoch"] + 1  # type: ignore[operator]
    assert doc["state"] == "active" and doc["membershipId"] == before["membershipId"]
    assert doc["visibilityStartSequence"] == before["visibilityStartSequence"]
    package = changed[0]["payload"]["contextPackage"]
    assert (
        package["workItemId"] == SECOND and doc["contextPackageId"] == package["contextPackageId"]
    )
    assert problems("event", changed[0]) == [] and embedded_problems(changed[0]) == []
    assert problems("membership", doc) == [] and problems("context-package", package) == []
    # a re-offer of a covered WorkItem changes no Membership
    assert _membership(wb)["membershipEpoch"] == doc["membershipEpoch"]


def test_widening_without_a_context_package_is_refused_and_changes_nothing(
    wb: Workbench,
) -> None:
    payload = {**wb.offer_payload(SECOND, "worker-a", 300), "contextPackage": None}
    reply = refused(wb, "INVALID_COMMAND", "coordinator", "work.offer", payload)
    assert reply.error is not None
    assert "does not cover WorkItem" in reply.error.explanation
    assert "contextPackage" in reply.error.explanation


def test_the_worker_carries_the_new_epoch_for_its_first_work_item(wb: Workbench) -> None:
    wb.offer(SECOND)
    epoch = _membership(wb)["membershipEpoch"]
    assert wb.client("worker-a").epochs()["membership_epoch"] == epoch
    item = wb.state.work_items[FIRST]
    payload = {"workItemId": FIRST, "ownershipEpoch": item.ownership_epoch}
    started = signed(wb, "worker-a", "work.start", payload)
    assert started.ok, repr(started)
    stale = refused(wb, "MEMBERSHIP_STALE", "worker-a", "message.post",
                    {"content": [{"type": "text", "text": "hi"}]}, stale=("membership",))  # fmt: skip
    assert stale.error is not None


@pytest.mark.req("MWP-WRK-028")
def test_a_widening_drops_the_scopes_of_finished_work_items(wb: Workbench) -> None:
    """Just in time (§8, step 4): a Worker whose first WorkItem is verified is offered a second;
    its Membership then covers the second only, so a Worker doing many WorkItems one after the
    other carries no growing list of finished ones."""
    wb.start(FIRST)
    wb.submit(FIRST)
    wb.ok("coordinator", "work.accept_result",
          {"workItemId": FIRST, **wb.review(FIRST).accept_result_payload()})  # fmt: skip
    assert str(wb.state.work_items[FIRST].state) == "verified"
    receipt = wb.offer(SECOND)
    changed = [parse_strict(r.document) for r in receipt.events]
    doc = next(e for e in changed if e["kind"] == "membership.changed")["payload"]["membership"]
    assert doc["scopes"] == ["work:" + SECOND]
    assert problems("membership", doc) == []
    assert _membership(wb)["scopes"] == ["work:" + SECOND]
