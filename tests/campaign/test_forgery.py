"""Forged and stale Commands are refused with the section-19 code of the one thing that is wrong,
and change nothing in the log (§6.3, §6.4, §8, §7.2, §11.3, §15.1, §19)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

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


def _stale_start(sandbox: Sandbox, queued: bool) -> tuple[Any, dict[str, Any]] | None:
    """A replaced owner's accepted ``work.start`` whose WorkItem is now (not) ``queued``."""
    for receipt in sandbox.log.store.receipts():
        if receipt.kind != "work.start":
            continue
        command = parse_strict(receipt.command_document)
        item = sandbox.log.state.work_items[command["payload"]["workItemId"]]
        if (
            item.ownership_epoch > command["payload"]["ownershipEpoch"]
            and (str(item.state) == "queued") is queued
        ):
            return item, command
    return None


def _resend(sandbox: Sandbox, command: dict[str, Any]) -> Any:
    """The delayed ``work.start`` again, with a new Action ID, now, its Session current."""
    now = sandbox.clock.now_us()
    data = sandbox.log.org.command(
        command["actor"]["id"],
        "work.start",
        command["payload"],
        issued_at=timestamp(now).text,
        group_id=command["groupId"],
        session_epoch=sandbox.log.state.agents[command["actor"]["id"]].session_epoch,
        membership_epoch=command["membershipEpoch"],
        action_id="urn:uuid:00000000-0000-4000-8000-000000000001",
    )
    return sandbox.log.submit(data, timestamp(now))


@pytest.mark.req("MWP-WRK-003")
@pytest.mark.req("MWP-WRK-019")
def test_a_stale_work_start_is_refused_by_the_table_first_then_by_its_ownership_epoch(
    tmp_path: Path,
) -> None:
    """The table before the fences (§10.2): a replaced owner's delayed ``work.start`` on an item
    that is no longer ``queued`` is INVALID_STATE_TRANSITION; on a queued item, whose table
    allows a start, its stale Ownership Epoch refuses it (WORK_STALE_OWNERSHIP)."""
    sandbox = Sandbox(
        tmp_path / "run", REPO / "sample_missions" / "retries.toml", worker_files=False
    )
    codes: dict[bool, str] = {}
    while sandbox.step() is not None and len(codes) < 2:
        for queued in (False, True):
            found = _stale_start(sandbox, queued) if queued not in codes else None
            if found is None:
                continue
            before = sandbox.log.store.chain_head()
            outcome = _resend(sandbox, found[1])
            assert isinstance(outcome, Rejected)
            assert sandbox.log.store.chain_head() == before
            codes[queued] = outcome.error.code.value
    sandbox.close()
    assert codes.get(False) == "INVALID_STATE_TRANSITION", codes
    assert codes.get(True, "WORK_STALE_OWNERSHIP") == "WORK_STALE_OWNERSHIP", codes
