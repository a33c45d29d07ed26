"""``mwp-local import`` and ``verify-log`` as a user runs them (issue 26 point 5).

A sandbox's own export imports into a fresh sandbox of the same Organization (the bootstrap
Events that sandbox already wrote are recognized and skipped) and ``verify-log`` finds no
duplicate; imported into the sandbox it came from, or into a sandbox whose bootstrap differs, it
is refused naming the line and Event, and the log, its projections and the blobs are unchanged.
``verify-log`` re-verifies every Signed Document an Event embeds: a tampered Agent Card in a
stored log is reported with its Event and the reason.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority.pipeline import event_record
from mwp_local.cli import main
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import PROJECTIONS, Batch
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization

from . import test_cli
from .test_cli import LATER, NOW, _create, _sign

sandbox = test_cli.sandbox  # the same fresh sandbox fixture


def _contents(directory: Path) -> Any:
    """Everything an import could change: the log, its chain, receipts, every projection
    table, and each blob's bytes."""
    store = DuckDBLogStore(directory / LOG_FILE, read_only=True)
    try:
        log = (
            [e.document for e in store.events()],
            store.chain_head(),
            sorted(r.receipt_json for r in store.receipts()),
            {t.name: store.projection_rows(t.name) for t in PROJECTIONS},
        )
    finally:
        store.close()
    blobs = {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted((directory / "blobs").rglob("*"))
        if p.is_file()
    }
    return log, blobs


def _exported(sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    signed = _sign(sandbox, "mission-owner", _create(tmp_path / "create.json"), capsys)
    assert main(["submit", str(sandbox), str(signed), "--now", LATER]) == 0
    jsonl = tmp_path / "events.jsonl"
    assert main(["export", str(sandbox), "--jsonl", str(jsonl)]) == 0
    capsys.readouterr()
    return jsonl


def _fresh(tmp_path: Path, capsys: pytest.CaptureFixture[str], now: str = NOW) -> Path:
    other = tmp_path / "other"
    assert main(["init", str(other), "--seed", "5", "--now", now]) == 0
    capsys.readouterr()
    return other


def test_a_sandbox_export_imports_into_a_fresh_sandbox_without_duplicates(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _exported(sandbox, tmp_path, capsys)
    other = _fresh(tmp_path, capsys)
    bootstrap = len(_contents(other)[0][0])
    total = len(jsonl.read_text().splitlines())
    assert main(["import", str(other), str(jsonl)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Imported {total - bootstrap} Events (the file's first {bootstrap}")
    assert main(["verify-log", str(other)]) == 0, capsys.readouterr().out
    assert "duplicate" not in capsys.readouterr().out
    assert _contents(other)[0][0] == _contents(sandbox)[0][0]  # the same signed history


def test_a_sandbox_export_imported_into_itself_is_refused_and_changes_nothing(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jsonl = _exported(sandbox, tmp_path, capsys)
    before = _contents(sandbox)
    assert main(["import", str(sandbox), str(jsonl)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REJECTED (nothing imported) PROTOCOL_VIOLATION: line 1: every Event")
    assert "already in this log" in out
    assert _contents(sandbox) == before


def test_an_export_into_a_sandbox_with_another_bootstrap_is_refused_by_event(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fresh sandbox of the seed made at another time holds bootstrap Events with the same IDs
    and other content: the first of them in the file is refused as a duplicate, by line and ID."""
    jsonl = _exported(sandbox, tmp_path, capsys)
    other = _fresh(tmp_path, capsys, now="2026-07-16T00:00:00Z")
    before = _contents(other)
    first = json.loads(jsonl.read_text().splitlines()[0])
    assert main(["import", str(other), str(jsonl)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        f"REJECTED (nothing imported) PROTOCOL_VIOLATION: line 1 (Event {first['eventId']}, "
        f"{first['kind']}): Event ID {first['eventId']} is already in this log"
    )
    assert _contents(other) == before


def test_a_tampered_agent_card_is_refused_on_import_and_reported_by_verify_log(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Agent Card upgrade whose card no longer matches its signature, carried by an Event
    the Group Authority's key signed: ``import`` refuses it; in a log written without the check,
    ``verify-log`` reports it with its Event and the reason."""
    org = load_organization(sandbox)
    jsonl = tmp_path / "events.jsonl"
    main(["export", str(sandbox), "--jsonl", str(jsonl)])
    first = json.loads(jsonl.read_text().splitlines()[0])
    card = copy.deepcopy(first["payload"]["agentCard"])
    card.update(cardVersion=2, maxConcurrency=99)  # the card's signature covers neither
    upgrade = {k: v for k, v in first.items() if k != "signature"}
    upgrade.update(
        eventId="urn:uuid:00000000-0000-4000-8000-0000000000c2",
        payload={**first["payload"], "agentCard": card, "agentCardVersion": 2},
    )
    forged = org.sign("event", org.authority, upgrade)
    part = tmp_path / "upgrade.jsonl"
    part.write_text(json.dumps(forged) + "\n")
    before = _contents(sandbox)
    capsys.readouterr()
    assert main(["import", str(sandbox), str(part)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        "REJECTED (nothing imported) AUTH_INVALID_SIGNATURE: line 1 (Event "
        "urn:uuid:00000000-0000-4000-8000-0000000000c2, "
        "ext.missionweaveprotocol.registry.agent_card_registered): The agent-card document at "
        "payload/agentCard does not verify"
    )
    assert _contents(sandbox) == before
    store = DuckDBLogStore(sandbox / LOG_FILE)
    store.commit(Batch(events=(event_record(forged, None, None),)))  # no check on this path
    store.close()
    assert main(["verify-log", str(sandbox)]) == 1
    out = capsys.readouterr().out
    assert (
        "(ext.missionweaveprotocol.registry.agent_card_registered, "
        "urn:uuid:00000000-0000-4000-8000-0000000000c2): the Signed Document at payload/agentCard "
        "is refused: AUTH_INVALID_SIGNATURE"
    ) in out


def test_a_run_of_another_organization_imports_into_a_sandbox_made_like_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The path of notebook 08: a sandbox of one Organization (here one named for its seed's
    mission, as a run's is) exported. Into a bootstrapped sandbox of another Organization the
    export is refused (its Agent Cards are of another Organization: the live Authority refuses
    them); into ``init --like`` it imports whole and verifies."""
    source = tmp_path / "run"
    other_org = "urn:mwp-local:organization:learn-run"
    assert (
        main(["init", str(source), "--seed", "1", "--organization", other_org, "--now", NOW]) == 0
    )
    signed = _sign(source, "mission-owner", _create(tmp_path / "create.json"), capsys)
    assert main(["submit", str(source), str(signed), "--now", LATER]) == 0
    jsonl = tmp_path / "events.jsonl"
    assert main(["export", str(source), "--jsonl", str(jsonl)]) == 0
    default = tmp_path / "default"
    assert main(["init", str(default), "--seed", "1", "--now", NOW]) == 0
    before = _contents(default)
    capsys.readouterr()
    assert main(["import", str(default), str(jsonl)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("REJECTED (nothing imported) INVALID_COMMAND: line 1 (Event ")
    assert f"belongs to Organization {other_org}, not to urn:mwp-local:organization:seed-1" in out
    assert _contents(default) == before
    like = tmp_path / "like"
    assert main(["init", str(like), "--like", str(source)]) == 0
    assert "with an empty log" in capsys.readouterr().out
    assert _contents(like)[0][0] == []
    assert main(["import", str(like), str(jsonl)]) == 0
    assert main(["verify-log", str(like)]) == 0
    assert _contents(like)[0][0] == _contents(source)[0][0]
    assert (like / "organization.json").read_text() == (source / "organization.json").read_text()


def test_init_like_refuses_the_options_it_takes_from_the_other_sandbox(
    sandbox: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", str(tmp_path / "x"), "--like", str(sandbox), "--seed", "3"]) == 2
    assert "leave out --seed" in capsys.readouterr().err
    assert not (tmp_path / "x" / "organization.json").exists()
