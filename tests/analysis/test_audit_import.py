"""Audit import of a log another Organization produced (issue 24, point 5).

A small, independent producer lives in this test: its own Ed25519 keys (pynacl), its own Group
Authority service, its own Registry fixture in the official registry-fixture format, and Event
documents in the official envelope, signed over their RFC 8785 form (for these documents,
ASCII keys with strings, integers and booleans only, sorted compact ``json.dumps`` is exactly
RFC 8785). None of the sandbox's signing code makes them. The audit import verifies each,
interprets what it can, keeps the rest, refuses what does not verify, and says so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from nacl.signing import SigningKey

from mwp_local.cli import main
from mwp_local.protocol.b64 import b64url_encode
from mwp_local.store.audit_import import AUDIT_REPORT, audit_import, load_registry

ORG = "urn:missionweaveprotocol:organization:acme-gateway"
GATEWAY = "urn:missionweaveprotocol:service:group-gateway"
ROGUE = "urn:missionweaveprotocol:service:rogue-relay"
COORD = "urn:missionweaveprotocol:agent:planner"
WORKER = "urn:missionweaveprotocol:agent:builder"
BUSY = "urn:missionweaveprotocol:agent:busy-builder"
GROUP = "urn:acme:group:launch"
MISSION = "urn:acme:mission:launch"
ITEM = "urn:acme:work:launch:site"
CONVERSATION = "urn:acme:conversation:site"
UNKNOWN_KIND = "ext.acme.gateway.audit_noted"


def _jcs(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class Producer:
    """Another Organization's Group service, reduced to what signs its log."""

    def __init__(self) -> None:
        self.keys = {
            GATEWAY: SigningKey(b"\x01" * 32),
            ROGUE: SigningKey(b"\x02" * 32),
        }
        self.sequence = 0
        self.count = 0

    def key_id(self, principal: str) -> str:
        return "urn:missionweaveprotocol:key:" + principal.rsplit(":", 1)[-1]

    def registry(self) -> dict[str, Any]:
        return {
            "organizationId": ORG,
            "bindings": [
                {
                    "keyId": self.key_id(principal),
                    "principal": {"type": "service", "id": principal},
                    "algorithm": "Ed25519",
                    "publicKey": b64url_encode(bytes(key.verify_key)),
                    "validFrom": "2026-01-01T00:00:00Z",
                    "validityHistory": [],
                }
                for principal, key in self.keys.items()
            ],
        }

    def event(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        minute: int,
        actor: str = COORD,
        signer: str = GATEWAY,
        work_item: str | None = None,
        sequence: int | None = None,
    ) -> dict[str, Any]:
        self.count += 1
        if sequence is None:
            self.sequence += 1
            sequence = self.sequence
        at = f"2026-09-01T10:{minute:02d}:00Z"
        doc: dict[str, Any] = {
            "protocolVersion": "0.1",
            "eventId": f"urn:uuid:00000000-0000-4000-8000-{self.count:012d}",
            "groupId": GROUP,
            "sequence": sequence,
            "aggregateRevision": sequence,
            "kind": kind,
            "actor": {"type": "agent", "id": actor},
            "cause": {
                "type": "command",
                "id": f"urn:uuid:00000000-0000-4000-9000-{self.count:012d}",
            },
            "correlationId": "urn:uuid:00000000-0000-4000-a000-000000000001",
            "occurredAt": at,
            "payload": payload,
            "acceptedBy": {"type": "service", "id": signer},
            "commandHash": "sha256:" + f"{self.count:064x}",
        }
        if work_item is not None:
            doc["workItemId"] = work_item
        signature = self.keys[signer].sign(_jcs(doc)).signature
        doc["signature"] = {
            "algorithm": "Ed25519",
            "keyId": self.key_id(signer),
            "createdAt": at,
            "value": b64url_encode(signature),
        }
        return doc


def _log(producer: Producer) -> list[dict[str, Any]]:
    p = producer
    offer = {"offerId": "urn:acme:offer:1", "agentId": BUSY, "expiresAt": "2026-09-01T10:30:00Z"}
    second = {"offerId": "urn:acme:offer:2", "agentId": WORKER, "expiresAt": "2026-09-01T11:00:00Z"}
    decline = {
        "offerId": "urn:acme:offer:1",
        "reason": "capacity",
        "reasons": ["capacity"],
        "details": {"capacity": "no free slot"},
    }
    lease = {
        "leaseId": "urn:acme:lease:1",
        "leaseType": "execution",
        "groupId": GROUP,
        "missionId": MISSION,
        "workItemId": ITEM,
        "holderAgentId": WORKER,
        "sessionEpoch": 1,
        "ownershipEpoch": 1,
        "state": "active",
        "issuedAt": "2026-09-01T10:20:00Z",
        "startsAt": "2026-09-01T10:20:00Z",
        "expiresAt": "2026-09-01T10:40:00Z",
        "renewalCount": 0,
    }
    closed = {
        **lease,
        "state": "released",
        "closedAt": "2026-09-01T10:35:00Z",
        "closureReason": "submitted",
    }
    return [
        p.event(
            "mission.created",
            {
                "missionId": MISSION,
                "mission": {
                    "missionId": MISSION,
                    "objective": "Launch the site",
                    "deadline": "2026-09-30T00:00:00Z",
                    "missionOwner": {"type": "human", "id": "urn:missionweaveprotocol:human:ada"},
                    "coordinator": {"agentId": COORD, "coordinatorEpoch": 1},
                    "budget": {"financialLimit": 100},
                },
            },
            minute=0,
        ),
        p.event(
            "work.authorized",
            {
                "missionId": MISSION,
                "workItem": {
                    "workItemId": ITEM,
                    "conversationId": CONVERSATION,
                    "exclusive": True,
                    "contract": {
                        "contractVersion": 1,
                        "requestedUrgency": "normal",
                        "deadline": "2026-09-10T00:00:00Z",
                        "budget": {"financialLimit": 10},
                    },
                },
            },
            minute=1,
        ),
        p.event(
            "work.offer.created",
            {
                "missionId": MISSION,
                "workItemId": ITEM,
                "contractVersion": 1,
                "urgent": False,
                "offers": [offer],
                "withdrawnOfferIds": [],
            },
            minute=2,
            work_item=ITEM,
        ),
        p.event(
            "message.posted",
            {
                "missionId": MISSION,
                "message": {
                    "author": {"type": "agent", "id": BUSY},
                    "conversationId": CONVERSATION,
                    "content": [
                        {"type": "text", "text": "No slot."},
                        {
                            "type": "data_ref",
                            "schema": "urn:mwp-local:schema:offer-decline",
                            "data": decline,
                        },
                    ],
                },
            },
            minute=3,
            actor=BUSY,
        ),
        p.event(UNKNOWN_KIND, {"missionId": MISSION, "note": "re-offer"}, minute=4),
        p.event(
            "work.offer.created",
            {
                "missionId": MISSION,
                "workItemId": ITEM,
                "contractVersion": 1,
                "urgent": False,
                "offers": [second],
                "withdrawnOfferIds": ["urn:acme:offer:1"],
            },
            minute=5,
            work_item=ITEM,
        ),
        p.event(
            "work.offer.accepted",
            {
                "missionId": MISSION,
                "workItemId": ITEM,
                "offerId": "urn:acme:offer:2",
                "lostOfferIds": [],
                "owner": {"agentId": WORKER, "ownershipEpoch": 1},
            },
            minute=10,
            actor=WORKER,
            work_item=ITEM,
        ),
        p.event(
            "work.started",
            {
                "missionId": MISSION,
                "workItemId": ITEM,
                "attempt": 1,
                "executionLeaseId": "urn:acme:lease:1",
                "leases": [lease],
            },
            minute=20,
            actor=WORKER,
            work_item=ITEM,
        ),
        p.event(
            "work.submitted",
            {"missionId": MISSION, "workItemId": ITEM, "leases": [closed]},
            minute=35,
            actor=WORKER,
            work_item=ITEM,
        ),
        p.event(UNKNOWN_KIND, {"missionId": MISSION, "note": "submitted"}, minute=36),
    ]


def _bad(producer: Producer) -> list[bytes]:
    """Lines that must be refused, each for its own reason."""
    forged = producer.event(UNKNOWN_KIND, {"note": "x"}, minute=40)
    forged["payload"]["note"] = "changed after signing"
    producer.sequence -= 1  # the forged one is not in the log: the next keeps its number
    rogue = producer.event(UNKNOWN_KIND, {"note": "y"}, minute=41, signer=ROGUE)
    producer.sequence -= 1
    gap = producer.event(UNKNOWN_KIND, {"note": "z"}, minute=42, sequence=99)
    return [
        json.dumps(forged).encode(),
        json.dumps(rogue).encode(),
        json.dumps(gap).encode(),
        b"{not json",
    ]


@pytest.fixture
def foreign(tmp_path: Path) -> tuple[Path, Path, list[dict[str, Any]]]:
    producer = Producer()
    events = _log(producer)
    lines = [json.dumps(e).encode() for e in events]
    lines[5:5] = _bad(producer)  # in the middle: the good ones after them still import
    source = tmp_path / "gateway.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps(producer.registry()))
    return source, registry, events


def _rows(directory: Path, query: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(directory / "group.duckdb"), read_only=True)
    try:
        result = con.execute(query)
        names = [d[0] for d in result.description]
        return [dict(zip(names, r, strict=True)) for r in result.fetchall()]
    finally:
        con.close()


def test_a_foreign_log_is_verified_interpreted_and_reported(
    foreign: tuple[Path, Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    source, registry, events = foreign
    out = tmp_path / "audit"
    report = audit_import(
        source.read_bytes().splitlines(),
        load_registry(registry),
        [GATEWAY],
        out,
        source=str(source),
    )
    assert report.lines == len(events) + 4
    assert report.imported == len(events)
    assert {r.code for r in report.refused} == {
        "AUTH_INVALID_SIGNATURE",
        "UNTRUSTED_ACCEPTOR",
        "SEQUENCE_GAP",
        "PROTOCOL_VIOLATION",
    }
    assert [r.line for r in report.refused] == [6, 7, 8, 9]
    assert report.not_interpreted == {UNKNOWN_KIND: 2}
    assert sum(report.interpreted.values()) == len(events) - 2
    written = json.loads((out / AUDIT_REPORT).read_text())
    assert written["imported"] == len(events) and written["organizationId"] == ORG
    # The exact signed documents are kept, in log order; the unknown kind among them.
    kept = _rows(out, "SELECT kind, document FROM events ORDER BY position")
    assert [json.loads(r["document"]) for r in kept] == events
    # What the sandbox interprets fills the views.
    (item,) = _rows(out, "SELECT state, owner_agent_id, attempts FROM work_items")
    assert item == {"state": "submitted", "owner_agent_id": WORKER, "attempts": 1}
    offers = _rows(out, "SELECT offer_id, status, decline_reason FROM offers ORDER BY offer_id")
    assert offers == [
        {"offer_id": "urn:acme:offer:1", "status": "declined", "decline_reason": "capacity"},
        {"offer_id": "urn:acme:offer:2", "status": "accepted", "decline_reason": None},
    ]
    states = _rows(out, "SELECT state FROM work_item_states ORDER BY entered_position")
    assert [s["state"] for s in states] == [
        "open",
        "offered",
        "offered",
        "queued",
        "active",
        "submitted",
    ]
    (lease,) = _rows(out, "SELECT state, held_for FROM leases")
    assert lease["state"] == "released" and lease["held_for"].total_seconds() == 15 * 60
    (mission,) = _rows(out, "SELECT state, objective FROM missions")
    assert mission == {"state": "active", "objective": "Launch the site"}


def test_the_command_line_imports_reports_and_queries(
    foreign: tuple[Path, Path, list[dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, registry, events = foreign
    out = tmp_path / "audit"
    argv = ["audit-import", str(out), str(source), "--registry", str(registry), "--trust", GATEWAY]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert f"Imported {len(events)} verified Events in 1 Groups" in text
    assert f"Not interpreted (kept; in the events view only): {UNKNOWN_KIND} × 2" in text
    assert "Refused 1 (UNTRUSTED_ACCEPTOR), e.g. line 7" in text
    assert "Traceback" not in text
    assert main(["sql", str(out), "SELECT status FROM offers ORDER BY offer_id", "--json"]) == 0
    assert [json.loads(x)["status"] for x in capsys.readouterr().out.splitlines()] == [
        "declined",
        "accepted",
    ]
    # A second import into the same directory is a usage error that changes nothing.
    before = (out / "group.duckdb").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "holds a log already" in capsys.readouterr().err
    assert (out / "group.duckdb").read_bytes() == before


def test_without_the_gateway_trusted_nothing_imports_and_every_line_says_why(
    foreign: tuple[Path, Path, list[dict[str, Any]]], tmp_path: Path
) -> None:
    source, registry, _ = foreign
    report = audit_import(
        source.read_bytes().splitlines(), load_registry(registry), [ROGUE], tmp_path / "a"
    )
    # The gateway's Events are untrusted; the rogue's one line then breaks its Group's sequence.
    assert report.imported == 0
    codes = [r.code for r in report.refused]
    assert codes.count("UNTRUSTED_ACCEPTOR") == 11 and "SEQUENCE_GAP" in codes
    assert all(r.reason for r in report.refused)


def test_a_file_that_is_no_registry_is_a_clear_usage_error(
    foreign: tuple[Path, Path, list[dict[str, Any]]],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    source, _, _ = foreign
    bad = tmp_path / "not-a-registry.json"
    bad.write_text('{"bindings": []}')
    out = tmp_path / "audit"
    assert (
        main(["audit-import", str(out), str(source), "--registry", str(bad), "--trust", GATEWAY])
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "not a Registry fixture" in err
    assert not out.exists()
