"""Audit import: any MWP Organization's signed Events into an analysis store of their own.

The strict import (``GroupLog.import_events``) trusts only the sandbox's own Registry and Group
Authority and replays every Event through the sandbox's state tables, so a log from another
implementation is refused. This module is the other door, for analysis: given a foreign
Organization's Registry fixture (the official registry-fixture format of the cryptography
bundle) and the Principal IDs of the services whose acceptance to trust, it

* verifies every Event with the six-stage Signed Document Verification Profile (§6.4) against
  that Registry, and requires its ``acceptedBy`` signer to be a trusted service;
* keeps each verified Event in log order in a new log file (``group.duckdb``, the documented
  views beside it), refusing, line by line and with a reason, what does not verify, what a
  trusted service did not accept, a repeated Event ID and a break in a Group's sequence;
* interprets what this code can: the typed columns the views read (the WorkItem an Event
  concerns, its Mission, and for the WorkItem Events of §10.2 the state before and after), so
  those Events fill the views; an Event of any other kind is kept all the same (the ``events``
  view shows it) and reported, kind by kind, as not interpreted;
* writes ``audit-report.json`` beside the log: what was read, verified, refused (why),
  interpreted and not.

Nothing here raises on bad input past the arguments (an unreadable Registry fixture, an
existing target): every line's problem is a refusal in the report. It never writes to the
sandbox's own log; the target directory is new. ``mwp-local audit-import`` is its command.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..authority.pipeline import event_record
from ..protocol.errors import ProtocolError
from ..protocol.jsontext import parse_strict
from ..protocol.registry import Registry
from ..protocol.signing import profile_for, verify_parsed
from . import view_kinds as k
from .duckdb_log import DuckDBLogStore
from .records import Batch

__all__ = ["AUDIT_REPORT", "AuditReport", "Refusal", "audit_import", "load_registry"]

#: The report written beside the log.
AUDIT_REPORT = "audit-report.json"
LOG_FILE = "group.duckdb"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """One line not imported, and why."""

    line: int
    event_id: str | None
    kind: str | None
    code: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditReport:
    """What an audit import verified, interpreted and not."""

    source: str
    organization_id: str
    trusted_services: tuple[str, ...]
    lines: int
    imported: int
    refused: tuple[Refusal, ...]
    #: Kind → count of imported Events this code interprets (they fill the views).
    interpreted: Mapping[str, int] = field(default_factory=dict)
    #: Kind → count of imported Events it does not (kept; only the ``events`` view shows them).
    not_interpreted: Mapping[str, int] = field(default_factory=dict)
    #: Group → imported Events.
    groups: Mapping[str | None, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON object (what ``audit-report.json`` holds)."""
        return {
            "format": "mwp_local audit import report",
            "version": 1,
            "source": self.source,
            "organizationId": self.organization_id,
            "trustedServices": list(self.trusted_services),
            "lines": self.lines,
            "verified": self.imported + sum(1 for r in self.refused if r.code == "DUPLICATE"),
            "imported": self.imported,
            "refused": [
                {
                    "line": r.line,
                    "eventId": r.event_id,
                    "kind": r.kind,
                    "code": r.code,
                    "reason": r.reason,
                }
                for r in self.refused
            ],
            "interpreted": dict(sorted(self.interpreted.items())),
            "notInterpreted": dict(sorted(self.not_interpreted.items())),
            "groups": {str(g): n for g, n in sorted(self.groups.items(), key=lambda i: str(i[0]))},
        }

    def summary(self) -> list[str]:
        """The report for a person, one fact a line."""
        out = [
            f"Read {self.lines} lines from {self.source} "
            f"(Organization {self.organization_id}; trusted: {', '.join(self.trusted_services)})",
            f"Imported {self.imported} verified Events in "
            f"{sum(1 for g in self.groups if g is not None)} Groups",
        ]
        if self.interpreted:
            total = sum(self.interpreted.values())
            out.append(
                f"Interpreted (fill the views): {total} Events of {len(self.interpreted)} kinds"
            )
        for kind, n in sorted(self.not_interpreted.items()):
            out.append(f"Not interpreted (kept; in the events view only): {kind} × {n}")
        by_code = Counter(r.code for r in self.refused)
        for code, n in sorted(by_code.items()):
            first = next(r for r in self.refused if r.code == code)
            out.append(f"Refused {n} ({code}), e.g. line {first.line}: {first.reason}")
        if not self.refused:
            out.append("Refused: none")
        return out


#: Event kinds whose typed columns and meaning this code reads (the views' kinds).
INTERPRETED: frozenset[str] = frozenset(
    value for name, value in vars(k).items() if name.isupper() and isinstance(value, str)
) - {k.DECLINE_SCHEMA} | frozenset(k.WORK_STATE_AFTER)


def load_registry(path: Path) -> Registry:
    """The Registry a fixture file holds (``ValueError`` with the reason when it is not one)."""
    try:
        value = parse_strict(path.read_bytes())
        return Registry.from_fixture(value)
    except ProtocolError as exc:
        raise ValueError(f"{path} is not JSON: {exc.explanation}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{path} is not a Registry fixture: {exc}") from None


def audit_import(
    lines: Iterable[bytes],
    registry: Registry,
    trusted: Iterable[str],
    target: Path,
    *,
    source: str = "",
) -> AuditReport:
    """Verify, interpret and keep the Events of ``lines`` in a new log under ``target``; write
    and return the report. ``FileExistsError`` when ``target`` holds a log already."""
    target = Path(target)
    if (target / LOG_FILE).exists() or (target / AUDIT_REPORT).exists():
        raise FileExistsError(f"{target} holds an import already; choose a new directory")
    trusted_ids = tuple(dict.fromkeys(trusted))
    refused: list[Refusal] = []
    records = []
    seen: set[str] = set()
    sequences: dict[str, int] = {}
    states: dict[str, str] = {}
    conversations: dict[str, str] = {}
    interpreted: Counter[str] = Counter()
    not_interpreted: Counter[str] = Counter()
    groups: Counter[str | None] = Counter()
    count = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        count += 1
        doc: Any = None
        try:
            doc = parse_strict(line)
            verified = verify_parsed(profile_for("event"), doc, registry)
        except ProtocolError as exc:
            refused.append(_refusal(number, doc, exc.code.value, _why(exc)))
            continue
        except Exception as exc:  # a value the verifier could not even read
            refused.append(_refusal(number, doc, "PROTOCOL_VIOLATION", str(exc)))
            continue
        signer = verified.principal
        if signer.type != "service" or signer.id not in trusted_ids:
            refused.append(
                _refusal(
                    number,
                    doc,
                    "UNTRUSTED_ACCEPTOR",
                    f"accepted by {signer.type} {signer.id}, not a trusted service "
                    f"({', '.join(trusted_ids) or 'none given'})",
                )
            )
            continue
        event_id, group = doc["eventId"], doc.get("groupId")
        if event_id in seen:
            refused.append(_refusal(number, doc, "DUPLICATE", f"Event {event_id} came before"))
            continue
        if group is not None:
            expected = sequences.get(group, 0) + 1
            if doc.get("sequence") != expected:
                refused.append(
                    _refusal(
                        number,
                        doc,
                        "SEQUENCE_GAP",
                        f"Group {group} is at sequence {expected - 1}; this Event has "
                        f"{doc.get('sequence')} (an audit import keeps each Group's log "
                        "contiguous from sequence 1)",
                    )
                )
                continue
            sequences[group] = expected
        seen.add(event_id)
        records.append(_interpret(doc, states, conversations))
        kind = doc["kind"]
        (interpreted if kind in INTERPRETED else not_interpreted)[kind] += 1
        groups[group] += 1
    target.mkdir(parents=True, exist_ok=True)
    with DuckDBLogStore(target / LOG_FILE) as store:
        if records:
            store.commit(Batch(events=tuple(records)))
    report = AuditReport(
        source=source,
        organization_id=registry.organization_id,
        trusted_services=trusted_ids,
        lines=count,
        imported=len(records),
        refused=tuple(refused),
        interpreted=dict(interpreted),
        not_interpreted=dict(not_interpreted),
        groups=dict(groups),
    )
    (target / AUDIT_REPORT).write_text(json.dumps(report.to_json(), indent=2) + "\n", "utf-8")
    return report


def _why(exc: ProtocolError) -> str:
    where = f" at stage {exc.stage}" if exc.stage else ""
    return f"{exc.explanation}{where}"


def _refusal(number: int, doc: Any, code: str, reason: str) -> Refusal:
    ok = isinstance(doc, dict)
    event_id = doc.get("eventId") if ok else None
    kind = doc.get("kind") if ok else None
    return Refusal(
        line=number,
        event_id=event_id if isinstance(event_id, str) else None,
        kind=kind if isinstance(kind, str) else None,
        code=code,
        reason=reason,
    )


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _interpret(doc: dict[str, Any], states: dict[str, str], conversations: dict[str, str]) -> Any:
    """The Event's log row, with the typed columns this code can read from it."""
    payload = _object(doc.get("payload"))
    kind = doc["kind"]
    work_item = _object(payload.get("workItem"))
    wid: Any = doc.get("workItemId") or payload.get("workItemId") or work_item.get("workItemId")
    conversation = work_item.get("conversationId")
    if kind == k.WORK_AUTHORIZED and isinstance(conversation, str) and isinstance(wid, str):
        conversations[conversation] = wid
    message = _object(payload.get("message"))
    if wid is None:
        wid = conversations.get(str(doc.get("conversationId") or message.get("conversationId")))
    before = after = None
    if isinstance(wid, str):
        after = k.WORK_STATE_AFTER.get(kind)
        if kind == k.WORK_UNBLOCKED and isinstance(payload.get("toState"), str):
            after = payload["toState"]
        if kind == k.LEASE_REVOKED and payload.get("reason") == "session_replaced":
            after = "queued"
        if after is not None:
            before = states.get(wid) or (
                "open_work_proposal" if payload.get("proposalId") else "none"
            )
            states[wid] = after
    record = event_record(doc, before, after)
    if record.work_item_id != wid:
        from dataclasses import replace

        record = replace(record, work_item_id=wid if isinstance(wid, str) else None)
    return record
