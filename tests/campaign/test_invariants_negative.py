"""The invariant checker can fail: each invariant catches a log forged to break it.

Every forgery keeps the log otherwise whole (re-signed with the real keys, the hash chain
recomputed by the store's own commit) unless the point is to break the signature or the chain,
so the invariant under test is what notices.
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pytest

from mwp_local.authority.records import RejectionRecord
from mwp_local.campaign import runner
from mwp_local.campaign.checker import check_directory
from mwp_local.campaign.logdir import ACKS_FILE, EXTERNAL_FILE
from mwp_local.campaign.runner import run_trial
from mwp_local.cli import main as cli
from mwp_local.drivers.sandbox import Sandbox

from .forge import Log, rewrite

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished, clean run of the campaign mission."""
    directory = tmp_path_factory.mktemp("pristine") / "run"
    sandbox = Sandbox(
        directory, REPO / "sample_missions" / "campaign.toml", seed=1, worker_files=False
    )
    summary = sandbox.run()
    assert summary.finished
    sandbox.close()
    return directory


@pytest.fixture
def copy(pristine: Path, tmp_path: Path) -> Path:
    target = tmp_path / "forged"
    shutil.copytree(pristine, target)
    return target


def _violations(directory: Path) -> dict[str, int]:
    report = check_directory(directory)
    return {name: t.violations for name, t in report.tallies.items() if t.violations}


def _item(doc: dict[str, Any]) -> str:
    return str(doc.get("workItemId") or doc["payload"].get("workItemId"))


def _append_copy(log: Log, doc: dict[str, Any], *, same_id: bool = False) -> dict[str, Any]:
    """A copy of ``doc`` appended as the next Event of its Group, re-signed."""
    group = doc["groupId"]
    last = max(e[0]["sequence"] for e in log.events if e[0].get("groupId") == group)
    new = json.loads(json.dumps(doc))
    new["sequence"] = last + 1
    if not same_id:
        new["eventId"] = f"urn:uuid:{uuid.uuid4()}"
    log.resign_event(new)
    return new


def test_the_clean_log_passes_every_invariant(copy: Path) -> None:
    report = check_directory(copy)
    assert report.ok, report.problems()
    side = ("acknowledged_present", "external_effect_once", "rejections_coded")  # none here
    assert all(t.checks > 0 for n, t in report.tallies.items() if n not in side)
    assert cli(["campaign", "--check", str(copy)]) == 0


def test_a_transition_not_in_the_table_is_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        started = log.docs("work.started")[-1]  # its item is verified by now
        log.events.append([_append_copy(log, started), "verified", "active"])

    rewrite(copy, edit)
    found = _violations(copy)
    assert found.get("work_item_paths", 0) >= 1, found
    assert cli(["campaign", "--check", str(copy)]) == 1


def test_a_duplicated_event_id_is_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        progressed = log.docs("work.progressed")[-1]
        log.events.append([_append_copy(log, progressed, same_id=True), None, None])

    rewrite(copy, edit)
    assert _violations(copy).get("unique_event_ids", 0) == 1


def test_a_transition_citing_a_stale_lease_id_is_caught(copy: Path) -> None:
    """A submission re-signed to cite the item's earlier, released Execution Lease."""

    def edit(log: Log) -> None:
        for submitted in log.docs("work.submitted"):
            wid = _item(submitted)
            leases = [
                d["payload"]["executionLeaseId"]
                for d in log.docs("work.started")
                if _item(d) == wid
            ]
            if len(leases) > 1:
                log.resign_command(
                    submitted, lambda c, old=leases[0]: c["payload"].update(leaseId=old)
                )
                return
        raise AssertionError("no item with two Execution Leases in this run")

    rewrite(copy, edit)
    found = _violations(copy)
    assert found.get("fencing", 0) >= 1, found
    assert found.get("no_late_completion", 0) >= 1, found
    assert "signatures" not in found  # the forgery is properly signed


@pytest.mark.parametrize("field", ["sessionEpoch", "ownershipEpoch"])
def test_a_transition_by_a_stale_epoch_is_caught(copy: Path, field: str) -> None:
    def edit(log: Log) -> None:
        checkpointed = log.docs("work.checkpointed")[0]

        def stale(command: dict[str, Any]) -> None:
            target = command if field == "sessionEpoch" else command["payload"]
            target[field] = target[field] + 1 if field == "sessionEpoch" else 0

        log.resign_command(checkpointed, stale)

    rewrite(copy, edit)
    found = _violations(copy)
    assert found.get("fencing", 0) == 1, found
    assert "signatures" not in found


def test_a_budget_overflow_is_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        usage = log.docs("ext.missionweaveprotocol.core.resource_usage_recorded")[0]
        usage["payload"]["delta"]["toolCalls"] = 10_000
        log.resign_event(usage)

    rewrite(copy, edit)
    assert _violations(copy).get("budgets", 0) >= 1


def test_a_result_submitted_after_its_lease_expired_is_caught(copy: Path) -> None:
    """The last renewal before a submission is re-signed to say the lease had expired."""

    def edit(log: Log) -> None:
        submitted = log.docs("work.submitted")[0]
        lease_id = log.receipts[log.receipt_of(submitted)].command_document
        lease_id = json.loads(lease_id)["payload"]["leaseId"]
        before = log.events[: log.index(submitted)]
        renewal = next(
            d
            for d, _, _ in reversed(before)
            if any(x["leaseId"] == lease_id for x in d["payload"].get("leases") or ())
        )
        for lease in renewal["payload"]["leases"]:
            if lease["leaseId"] == lease_id:
                lease["state"] = "expired"
        log.resign_event(renewal)

    rewrite(copy, edit)
    assert _violations(copy).get("no_late_completion", 0) >= 1


def test_two_live_owners_are_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        started = log.docs("work.started")[0]
        mine = started["payload"]["leases"][-1]
        other = dict(
            mine,
            leaseId=f"urn:uuid:{uuid.uuid4()}",
            holderAgentId="urn:missionweaveprotocol:agent:dev",
        )
        started["payload"]["leases"].append(other)
        log.resign_event(started)

    rewrite(copy, edit)
    assert _violations(copy).get("single_live_owner", 0) >= 1


def test_a_bad_signature_is_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        doc = log.docs("work.submitted")[0]
        value = doc["signature"]["value"]
        doc["signature"]["value"] = value[:20] + ("A" if value[20] != "A" else "B") + value[21:]

    rewrite(copy, edit)
    assert _violations(copy).get("signatures", 0) == 1


def test_a_broken_chain_and_a_stale_projection_are_caught(copy: Path) -> None:
    db = duckdb.connect(str(copy / "group.duckdb"))
    db.execute("UPDATE log_events SET chain = chain || 'x'::BLOB WHERE position = 20")
    db.execute("UPDATE proj_work_items SET state = 'open'")
    db.close()
    found = _violations(copy)
    assert found.get("hash_chain", 0) >= 1
    assert found.get("projections_replay", 0) >= 1


def test_a_sequence_gap_in_the_signed_documents_is_caught(copy: Path) -> None:
    """The store refuses gaps in its typed columns (``log_opens``); a gap in the documents
    themselves is this invariant's to find."""
    db = duckdb.connect(str(copy / "group.duckdb"))
    (sequence,) = db.execute("SELECT sequence FROM log_events WHERE position = 30").fetchall()[0]
    db.execute(
        "UPDATE log_events SET document = replace(document, $old, $new) WHERE position = 30",
        {"old": f'"sequence":{sequence},', "new": f'"sequence":{sequence + 1},'},
    )
    db.close()
    assert _violations(copy).get("contiguous_sequences", 0) >= 1


def test_a_rejection_without_a_section_19_code_is_caught(copy: Path) -> None:
    def edit(log: Log) -> None:
        log.rejections.append(
            RejectionRecord(
                received_at="2026-07-15T09:00:00Z",
                actor_id="a",
                action_id="b",
                kind="work.start",
                group_id=None,
                work_item_id=None,
                code="NOT_A_CODE",
                explanation="forged",
                rule=None,
                stage=None,
                reason=None,
                details_json="{}",
                command_text="{}",
            )
        )

    rewrite(copy, edit)
    assert _violations(copy).get("rejections_coded", 0) == 1


def test_an_external_effect_performed_twice_or_without_a_lease_is_caught(copy: Path) -> None:
    call = {
        "agent_id": "urn:missionweaveprotocol:agent:dev",
        "slot_id": "s",
        "attempt": 1,
        "work_item_id": "urn:mwp-local:work:export-button:tests",
        "operation": "write",
        "idempotency_key": "k|1|deliverable",
        "at_us": 0,
        "outcome": "performed",
        "ok": True,
        "code": None,
    }
    (copy / EXTERNAL_FILE).write_text(json.dumps(call) + "\n" + json.dumps(call) + "\n")
    found = check_directory(copy).tallies["external_effect_once"]
    assert found.violations == 3  # twice for one key; and both times without a live lease


def test_an_acknowledged_command_missing_from_the_log_is_caught(copy: Path) -> None:
    ack = {
        "actor": "urn:missionweaveprotocol:agent:dev",
        "action": "urn:uuid:0",
        "outcome": "accepted",
    }
    (copy / ACKS_FILE).write_text(json.dumps(ack) + "\n")
    assert _violations(copy).get("acknowledged_present", 0) == 1


def test_a_log_that_cannot_be_opened_fails_the_first_check(copy: Path) -> None:
    db = duckdb.connect(str(copy / "group.duckdb"))
    db.execute("DELETE FROM log_events WHERE position = 30")  # a hole the store refuses
    db.close()
    report = check_directory(copy)
    assert not report.ok and report.tallies["log_opens"].violations == 1


def test_more_write_behind_acknowledgements_missing_than_their_bound_is_caught(
    copy: Path,
) -> None:
    lost = [
        {"actor": "urn:missionweaveprotocol:agent:dev", "action": f"urn:uuid:{n}"} for n in (1, 2)
    ]
    for bound, violations in ((2, 0), (1, 1)):
        acks = [{**ack, "outcome": "accepted", "write_behind": bound} for ack in lost]
        (copy / ACKS_FILE).write_text("".join(json.dumps(ack) + "\n" for ack in acks))
        report = check_directory(copy)
        tally = report.tallies["acknowledged_present"]
        assert (tally.checks, tally.violations) == (2, violations), tally.examples


def test_a_crash_trial_checks_its_acknowledgements_and_a_broken_promise_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 3 crashes after step 10 with all ten of its acknowledged Commands still staged
    (nothing read the log or committed a Worker's file in between: a late joiner's Context
    Package is served from the index of committed Events, not by reading the log): within the
    write-behind bound, so no violation; had they been acknowledged as durable (the planted
    fault: the record drops the bound, so each line promises durability the log never had),
    each of the ten lost is reported."""
    mission = str(REPO / "sample_missions" / "campaign.toml")
    honest = run_trial(3, mission, tmp_path / "honest")
    assert honest.crash == {"at_step": 10, "acknowledged": 10, "lost": 10}
    assert honest.tallies["acknowledged_present"][:2] == (10, 0)
    assert honest.violations == 0

    real = runner.record_acknowledgements

    def promising_durability(log: Any, write: Any, *, write_behind: bool = False) -> None:
        def durable(line: str) -> None:
            record = json.loads(line.removeprefix("ACK "))
            record.pop("write_behind")
            write("ACK " + json.dumps(record) + "\n")

        real(log, durable, write_behind=write_behind)

    monkeypatch.setattr(runner, "record_acknowledgements", promising_durability)
    planted = run_trial(3, mission, tmp_path / "planted")
    assert planted.tallies["acknowledged_present"][:2] == (10, 10)
