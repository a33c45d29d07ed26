"""Test helper: forge a finished sandbox log as an attacker holding every key would.

``rewrite(directory, edit)`` reads the log, lets ``edit`` change the Event documents and
receipts (``Log.resign_event`` / ``Log.resign_command`` sign them again with the right keys),
and writes a brand-new DuckDB log from them through the store's own commit, so the hash chain
is recomputed and every signature stays valid: only the invariant under test can notice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mwp_local.authority.organization import Organization
from mwp_local.authority.pipeline import event_record
from mwp_local.authority.records import ReceiptRecord
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.signing import signing_hash
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import PROJECTION_BY_NAME, Batch, ProjectionDelta
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization


@dataclass
class Log:
    """The editable contents of a log."""

    org: Organization
    #: [document, from_state, to_state] per Event, in log order.
    events: list[list[Any]]
    receipts: list[ReceiptRecord]
    rejections: list[Any]
    projections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def docs(self, kind: str) -> list[dict[str, Any]]:
        """The documents of every Event of ``kind``, in log order."""
        return [e[0] for e in self.events if e[0]["kind"] == kind]

    def index(self, doc: dict[str, Any]) -> int:
        """Where ``doc`` is in the log."""
        return next(i for i, e in enumerate(self.events) if e[0] is doc)

    def resign_event(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` signed again by the Group Authority, replacing it in place."""
        unsigned = {k: v for k, v in doc.items() if k != "signature"}
        signed = self.org.sign("event", self.org.authority, unsigned)
        doc.clear()
        doc.update(signed)
        return doc

    def receipt_of(self, event: dict[str, Any]) -> int:
        """The index of the receipt of the Command that caused ``event``."""
        return next(
            i
            for i, r in enumerate(self.receipts)
            if r.action_id == event["cause"]["id"] and r.actor_id == event["actor"]["id"]
        )

    def resign_command(
        self, event: dict[str, Any], change: Callable[[dict[str, Any]], None]
    ) -> None:
        """Change the Command behind ``event``, sign it again as its actor, and bind the
        receipt and the Event to it."""
        i = self.receipt_of(event)
        command = parse_strict(self.receipts[i].command_document)
        unsigned = {k: v for k, v in command.items() if k != "signature"}
        change(unsigned)
        signed = self.org.sign("command", unsigned["actor"]["id"], unsigned)
        self.receipts[i] = dataclasses.replace(
            self.receipts[i],
            command_document=canonicalize(signed).decode(),
            command_hash=signing_hash(signed),
        )
        event["commandHash"] = signing_hash(signed)
        self.resign_event(event)


def rewrite(directory: Path, edit: Callable[[Log], None]) -> None:
    """Replace ``directory``'s log by an edited copy."""
    path = directory / LOG_FILE
    store = DuckDBLogStore(path, read_only=True)
    log = Log(
        org=load_organization(directory),
        events=[
            [parse_strict(e.event.document), e.event.from_state, e.event.to_state]
            for e in store.entries()
        ],
        receipts=list(store.receipts()),
        rejections=list(store.rejections()),
        projections={name: store.projection_rows(name) for name in PROJECTION_BY_NAME},
    )
    store.close()
    edit(log)
    for leftover in (path, path.with_name(path.name + ".wal")):
        leftover.unlink(missing_ok=True)
    fresh = DuckDBLogStore(path)
    fresh.commit(
        Batch(
            events=tuple(event_record(d, f, t) for d, f, t in log.events),
            receipts=tuple(log.receipts),
            rejections=tuple(log.rejections),
            projections=ProjectionDelta(upserts={n: tuple(r) for n, r in log.projections.items()}),
        )
    )
    fresh.close()
