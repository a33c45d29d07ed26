"""The hand-signing client used as a hostile or careless sender would use it: stale epochs,
Principals outside the Group or the Organization, deliberate mistakes. Every refusal carries its
section-19 code and leaves the log (length, chain head, receipts) and the projections (the
Authority's and the DuckDB tables) exactly as they were; the official schemas judge the signed
Command bytes the client produces; receipts and refusals are drawn from what the log holds."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mwp_local.client import Client, Reply, UnexpectedReply, Workbench
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.store.projection_rows import projection_rows

from ..official_schemas import problems

ROOT = Path(__file__).resolve().parents[2]
LEARN = ROOT / "sample_missions" / "learn.toml"
DOC = ROOT / "docs" / "prototyping.md"
WID = "urn:mwp-local:work:impl"
POST = {"content": [{"type": "text", "text": "hello"}]}
#: The projection tables a refusal must leave alone (read through SQL, as a user reads them).
TABLES = ("work_items", "memberships", "missions", "leases", "offers", "agents", "budgets")


def untouched(log: Any) -> tuple[Any, ...]:
    """What a refusal must not change: the log's length, chain head and receipts, the
    Authority's projection rows, and the DuckDB projection tables."""
    from mwp_local.store.views import sql

    store = log.store
    rows = {t: sorted(map(str, v)) for t, v in projection_rows(log.state).items()}
    tables = {t: sorted(map(str, sql(store, f"SELECT * FROM {t}").to_pylist())) for t in TABLES}
    return store.event_count(), store.chain_head(), len(list(store.receipts())), rows, tables


def signed(wb: Workbench, who: str, kind: str, payload: dict[str, Any], **over: Any) -> Any:
    """Sign ``kind`` as ``who``, check its bytes against the official Command schema, then
    submit those very bytes; the Authority's answer as a ``Reply``."""
    data = wb.command(who, kind, payload, **over)
    document = parse_strict(data)
    assert problems("command", document) == [], kind
    return Reply(kind=kind, sender=who, outcome=wb.log.submit(data, wb.now()))


def refused(
    wb: Workbench, code: str, who: str, kind: str, payload: dict[str, Any], **over: Any
) -> Reply:
    """The Command is refused with ``code`` and nothing changed."""
    before = untouched(wb.log)
    reply = signed(wb, who, kind, payload, **over)
    assert not reply.ok and reply.code == code, repr(reply)
    assert untouched(wb.log) == before
    return reply


@pytest.fixture
def wb() -> Workbench:
    bench = Workbench()
    bench.create_mission()
    return bench


# ---------------------------------------------------------------------- stale epochs


@pytest.mark.req("MWP-WRK-014")
def test_a_stale_session_epoch_is_refused_and_changes_nothing(wb: Workbench) -> None:
    wb.active(WID)
    worker = wb.org.get("worker-a").id
    wb.ok(
        "control-plane",
        "ext.missionweaveprotocol.identity.session_open",
        {"agentId": worker},
        group=None,
    )
    assert wb.client("worker-a").epochs()["session_epoch"] == 2
    reply = refused(wb, "AUTH_STALE_SESSION", "worker-a", "work.authorize",
                    {"workItemId": "urn:mwp-local:work:late", "contract": wb.contract()},
                    stale=("session",))  # fmt: skip
    assert reply.error is not None and "Session Epoch" in reply.error.explanation


def test_a_stale_membership_epoch_is_refused_and_changes_nothing(wb: Workbench) -> None:
    member = {"type": "agent", "id": wb.org.get("worker-b").id}
    for scopes in (["read"], ["read", "post"]):  # a Membership change: the next epoch
        wb.ok("mission-owner", "membership.change",
              {"member": member, "role": "observer", "state": "active", "scopes": scopes})  # fmt: skip
    assert wb.client("worker-b").epochs()["membership_epoch"] == 2
    reply = refused(wb, "MEMBERSHIP_STALE", "worker-b", "message.post", POST, stale=("membership",))
    assert reply.error is not None and "Membership Epoch 1" in reply.error.explanation
    assert signed(wb, "worker-b", "message.post", POST).ok  # the current epoch is accepted


def test_a_stale_coordinator_epoch_is_refused_and_changes_nothing(wb: Workbench) -> None:
    for who in ("reviewer", "coordinator"):  # away and back: Coordinator Epoch 3
        wb.ok("mission-owner", "mission.assign_coordinator",
              {"coordinatorAgentId": wb.org.get(who).id})  # fmt: skip
    assert wb.client("coordinator").epochs()["coordinator_epoch"] == 3
    authorize = {"workItemId": WID, "contract": wb.contract()}
    refused(wb, "AUTH_STALE_COORDINATOR", "coordinator", "work.authorize", authorize,
            stale=("coordinator",))  # fmt: skip
    assert signed(wb, "coordinator", "work.authorize", authorize).ok


def test_an_explicit_epoch_override_is_sent_as_written(wb: Workbench) -> None:
    data = wb.command("mission-owner", "message.post", POST, membership_epoch=7)
    assert parse_strict(data)["membershipEpoch"] == 7
    refused(wb, "MEMBERSHIP_STALE", "mission-owner", "message.post", POST, membership_epoch=7)


# ---------------------------------------------------------------------- Principals


def test_a_principal_without_a_membership_is_refused(wb: Workbench) -> None:
    # the reviewer is a Principal of the Organization but no member of the Mission's Group;
    # a well-behaved client carries no Membership Epoch it does not hold, so this one forges 1
    assert "membership_epoch" not in wb.client("reviewer").epochs()
    reply = refused(wb, "MEMBERSHIP_REQUIRED", "reviewer", "message.post", POST, membership_epoch=1)
    assert reply.error is not None and reply.error.rule


def test_a_principal_of_another_organization_is_refused(wb: Workbench) -> None:
    wb.active(WID)  # worker-a is a member: the stranger carries worker-a's current epochs
    stranger = Workbench(seed=8).org.get("worker-a")  # same name, another Organization's key
    assert stranger.id == wb.org.get("worker-a").id
    client = Client(wb.log, stranger, group=wb.group, clock=wb.now, shared_ids=True)
    before = untouched(wb.log)
    reply = client.send("message.post", POST)
    assert reply.code == "AUTH_INVALID_SIGNATURE"
    assert untouched(wb.log) == before


def test_an_unknown_principal_is_named_with_the_ones_there_are(wb: Workbench) -> None:
    with pytest.raises(KeyError, match=r"no Principal 'wroker-a'.*worker-a"):
        wb.client("wroker-a")


# ---------------------------------------------------------------------- API mistakes


def test_asking_for_a_stale_epoch_the_sender_cannot_have_says_why(wb: Workbench) -> None:
    before = untouched(wb.log)
    with pytest.raises(ValueError, match=r"stale='ownership'.*'session', 'membership'"):
        wb.send("worker-a", "message.post", POST, stale=("ownership",))
    with pytest.raises(ValueError, match=r"carries no coordinator epoch.*coordinator_epoch="):
        wb.send("worker-a", "message.post", POST, stale=("coordinator",))
    with pytest.raises(ValueError, match=r"current session epoch is 1.*no older one"):
        wb.send("coordinator", "message.post", POST, stale=("session",))
    assert untouched(wb.log) == before  # nothing was sent


def test_a_client_without_a_clock_asks_for_now(wb: Workbench) -> None:
    client = Client(wb.log, wb.org.get("mission-owner"), group=wb.group)
    with pytest.raises(
        ValueError, match=r"mission-owner\.send: this client has no clock; pass now="
    ):
        client.send("message.post", POST)
    assert client.send("message.post", POST, now=wb.now()).ok


def test_an_expected_answer_that_does_not_come_names_what_came(wb: Workbench) -> None:
    with pytest.raises(UnexpectedReply, match=r"message\.post from reviewer was refused: "):
        wb.ok("reviewer", "message.post", POST, membership_epoch=1)
    with pytest.raises(UnexpectedReply, match=r"was accepted \(message\.posted\), expected AUTH"):
        wb.must_refuse("AUTH_FORBIDDEN", "mission-owner", "message.post", POST)


# ---------------------------------------------------------------------- what is drawn


def test_a_receipt_is_drawn_with_the_events_the_log_holds(wb: Workbench) -> None:
    reply = wb.send("mission-owner", "message.post", POST)
    assert reply.ok and reply.code is None and reply.error is None
    last = json.loads(list(wb.log.store.events(wb.group))[-1].document)
    html = reply._repr_html_()
    assert "<code>message.post</code> from <b>mission-owner</b>" in html and "ACCEPTED" in html
    assert f"#{last['sequence']} {last['kind']}" in html
    assert [e["eventId"] for e in reply.events] == [last["eventId"]]
    assert repr(reply) == "<Reply message.post from mission-owner: ACCEPTED (message.posted)>"


def test_a_refusal_is_drawn_with_its_code_explanation_and_rule(wb: Workbench) -> None:
    reply = wb.must_refuse(
        "MEMBERSHIP_STALE", "mission-owner", "message.post", POST, membership_epoch=7
    )
    record = list(wb.log.store.rejections())[-1]  # what the log keeps, apart from the reply
    html = reply._repr_html_()
    assert record.code == "MEMBERSHIP_STALE"
    assert "REJECTED MEMBERSHIP_STALE" in html and "rule: §8" in html
    assert "Membership Epoch 7" in html and reply.events == ()


# ---------------------------------------------------------------------- schemas


def test_every_command_a_mission_takes_by_hand_is_an_official_command(wb: Workbench) -> None:
    """A whole WorkItem by hand, each Command's bytes judged by the official schema, and the
    documents it embeds by theirs (Context Package, Artifact manifest, Evidence)."""
    kinds: list[str] = []
    submit = wb.log.submit

    def judged(data: bytes, now: Any) -> Any:
        document = parse_strict(data)
        assert problems("command", document) == [], document["kind"]
        payload = document["payload"]
        for member, schema in (("contextPackage", "context-package"), ("artifact", "artifact")):
            if member in payload:
                assert problems(schema, payload[member]) == [], member
        for evidence in payload.get("evidence", ()):
            assert problems("evidence", evidence) == []
        kinds.append(document["kind"])
        return submit(data, now)

    wb.log.submit = judged  # type: ignore[method-assign]
    wb.active(WID)
    wb.submit(WID)
    wb.ok(
        "coordinator",
        "work.accept_result",
        {"workItemId": WID, **wb.review(WID).accept_result_payload()},
    )
    assert kinds == ["work.authorize", "work.offer", "work.accept_offer", "work.start",
                     "artifact.publish", "work.submit", "work.accept_result"]  # fmt: skip
    assert str(wb.state.work_items[WID].state) == "verified"


# ---------------------------------------------------------------------- on a Sandbox


def _active_sandbox(tmp_path: Path) -> tuple[Sandbox, Any]:
    sandbox = Sandbox(tmp_path / "s", LEARN, worker_files=False)
    for _ in range(400):
        active = [i for i in sandbox.log.state.work_items.values() if str(i.state) == "active"]
        if active:
            return sandbox, active[0]
        sandbox.step()
    raise AssertionError("no WorkItem became active")


def test_a_client_for_a_sandbox_sends_as_its_principals_and_its_agents_see_it(
    tmp_path: Path,
) -> None:
    sandbox, item = _active_sandbox(tmp_path)
    owner = Client.for_sandbox(sandbox, "mission-owner")
    assert owner.group == item.group_id  # the sandbox's one Group
    reply = owner.send("message.post", POST)
    assert reply.ok and [e["kind"] for e in reply.events] == ["message.posted"]
    last = sandbox.log.state.groups[item.group_id].last_sequence
    # the sandbox handed the new Event to its agents, as it hands its own steps' Events
    assert sandbox.runtime("coordinator").replica.groups[item.group_id].last_sequence == last
    sandbox.step()  # and the run goes on


def test_a_stale_command_to_a_sandbox_changes_nothing_there(tmp_path: Path) -> None:
    sandbox, item = _active_sandbox(tmp_path)
    worker = item.owner["agentId"].rsplit(":", 1)[-1]
    bench = Workbench.for_sandbox(sandbox)
    replica = sandbox.runtime(worker).replica
    before = untouched(sandbox.log), projection_rows(replica)
    reply = bench.must_refuse(
        "WORK_LEASE_EXPIRED", worker, "ext.missionweaveprotocol.core.work_execution_lease_renew",
        {"workItemId": item.work_item_id, "ownershipEpoch": item.ownership_epoch,
         "leaseId": "urn:uuid:00000000-0000-4000-8000-0000000000ff"},
    )  # fmt: skip
    assert "REJECTED WORK_LEASE_EXPIRED" in reply._repr_html_()
    assert (untouched(sandbox.log), projection_rows(replica)) == before


def test_two_clients_on_one_sandbox_never_repeat_an_action_id(tmp_path: Path) -> None:
    sandbox, _ = _active_sandbox(tmp_path)
    first, second = (Client.for_sandbox(sandbox, "mission-owner") for _ in range(2))
    ids = [parse_strict(c.command("message.post", POST))["actionId"] for c in (first, second)]
    assert ids[0] != ids[1]  # same Principal, same instant, two clients
    assert first.send("message.post", POST).ok and second.send("message.post", POST).ok
    assert Workbench.for_sandbox(sandbox).send("mission-owner", "message.post", POST).ok


def test_a_sandbox_group_that_does_not_exist_is_named(tmp_path: Path) -> None:
    sandbox, item = _active_sandbox(tmp_path)
    with pytest.raises(ValueError, match=r"no Group 'urn:x'.*" + item.group_id):
        Client.for_sandbox(sandbox, "mission-owner", group="urn:x")


# ---------------------------------------------------------------------- the documented example


def test_the_documented_example_prints_what_its_comments_say(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    section = DOC.read_text().split("\n## Send Commands by hand\n", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    monkeypatch.chdir(ROOT)  # the example names sample_missions/learn.toml from the checkout
    namespace: dict[str, Any] = {}
    exec(compile(block.group(1), str(DOC), "exec"), namespace)
    said = [
        line.split("  # ", 1)[1]
        for line in block.group(1).splitlines()
        if line.startswith("print(")
    ]
    assert capsys.readouterr().out.splitlines() == said
    sandbox, asked = namespace["sandbox"], namespace["asked"]
    group = asked.events[0]["groupId"]
    assert (
        sandbox.runtime("coordinator").replica.groups[group].last_sequence
        == asked.events[0]["sequence"]
    )
