"""Forged and stale Commands are refused with the section-19 code of the one thing that is wrong,
and change nothing in the log (§6.3, §6.4, §8, §7.2, §11.3, §15.1, §19)."""

from __future__ import annotations

import random
from pathlib import Path

from mwp_local.authority import Rejected
from mwp_local.campaign.forgery import FORGED, STALE, Forger
from mwp_local.drivers.clock import timestamp
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict

REPO = Path(__file__).resolve().parents[2]


def test_every_forgery_is_refused_with_its_code_and_changes_nothing(tmp_path: Path) -> None:
    # retries.toml: a paused Worker's item is reassigned (Ownership Epoch 2), a Coordinator is
    # replaced (Coordinator Epoch 2): every variant finds something to forge from.
    sandbox = Sandbox(
        tmp_path / "run", REPO / "sample_missions" / "retries.toml", worker_files=False
    )
    rng = random.Random(4)
    refused: dict[str, int] = {}
    while sandbox.step() is not None:
        if sandbox.steps % 4:
            continue
        store = sandbox.log.store
        templates = [parse_strict(r.command_document) for r in store.receipts()]
        now = sandbox.clock.now_us()
        for variant in FORGED + STALE:
            forgery = Forger(sandbox.log.org, sandbox.log.state, templates, now, rng).make(
                (variant,)
            )
            if forgery is None:
                continue
            before = store.chain_head()
            rejections = len(store.rejections())
            outcome = sandbox.log.submit(forgery.data, timestamp(now))
            assert isinstance(outcome, Rejected), f"{variant} was accepted"
            assert outcome.error.code is forgery.expected, (variant, outcome.error.explanation)
            assert store.chain_head() == before
            stored = store.rejections()
            assert len(stored) == rejections + 1 and stored[-1].code == forgery.expected.value
            refused[variant] = refused.get(variant, 0) + 1
        if set(refused) == set(FORGED + STALE):
            break
    sandbox.close()
    assert set(refused) == set(FORGED + STALE), refused


def test_a_stale_work_start_is_refused_for_its_stale_ownership_epoch(tmp_path: Path) -> None:
    """The documented pipeline order puts Ownership Epochs before the state tables; a delayed
    ``work.start`` of a replaced owner is refused as stale, whatever state the item is in."""
    sandbox = Sandbox(
        tmp_path / "run", REPO / "sample_missions" / "retries.toml", worker_files=False
    )
    while sandbox.step() is not None:
        stale = [
            (item, receipt)
            for receipt in sandbox.log.store.receipts()
            if receipt.kind == "work.start"
            and (
                item := sandbox.log.state.work_items[
                    parse_strict(receipt.command_document)["payload"]["workItemId"]
                ]
            ).ownership_epoch
            > parse_strict(receipt.command_document)["payload"]["ownershipEpoch"]
            and str(item.state) != "queued"
        ]
        if stale:
            break
    assert stale, "the mission reassigns a WorkItem"
    item, receipt = stale[0]
    command = parse_strict(receipt.command_document)
    now = sandbox.clock.now_us()
    command.pop("signature")
    command["actionId"] = "urn:uuid:00000000-0000-4000-8000-000000000001"
    command["issuedAt"] = timestamp(now).text
    data = sandbox.log.org.command(
        command["actor"]["id"],
        "work.start",
        command["payload"],
        issued_at=command["issuedAt"],
        group_id=command["groupId"],
        session_epoch=sandbox.log.state.agents[command["actor"]["id"]].session_epoch,
        membership_epoch=command["membershipEpoch"],
        action_id=command["actionId"],
    )
    outcome = sandbox.log.submit(data, timestamp(now))
    sandbox.close()
    assert isinstance(outcome, Rejected)
    assert outcome.error.code.value == "WORK_STALE_OWNERSHIP", outcome.error
