"""Read a sandbox directory into a ``LogView``: everything the invariant checker may look at.

The checker reads only what a directory holds: the DuckDB Group log (Events in log order with
their chain values and typed columns, receipts with the signed Commands, rejections, stored
projections), ``organization.json`` (the keys the signatures are checked against), the blob
store, and two optional side files written by the campaign tools: ``external-calls.jsonl`` (the
simulated external service's record of calls) and ``acks.jsonl`` (Commands acknowledged to a
client, written after the durable commit returned).

A ``LogView`` also keeps, once computed, what several checks derive from the same log: the
stored rows of each projection table, one full ``verify-log`` pass (``verification``) and the
state a clean replay of the log builds (``replayed``, taken from that pass when it found nothing
wrong with the Events). Each is computed from the directory the first time it is asked for and
never outlives the view.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..authority import AuthorityState
from ..authority.organization import Organization
from ..authority.records import ReceiptRecord, RejectionRecord
from ..protocol.jsontext import parse_strict
from ..store.base import LogEntry
from ..store.blobs import BlobStore
from ..store.duckdb_log import DuckDBLogStore
from ..store.group_log import fold
from ..store.sandbox_dir import LOG_FILE, load_organization
from ..store.verify import ReadLog, VerifyReport, verify_read

EXTERNAL_FILE = "external-calls.jsonl"
ACKS_FILE = "acks.jsonl"


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One Event: its log entry (position, chain, typed columns) and its parsed document."""

    entry: LogEntry
    doc: dict[str, Any]

    @property
    def position(self) -> int:
        """1-based place in the whole log."""
        return self.entry.position


@dataclass(slots=True)
class Derived:
    """What a ``LogView`` has derived from its log so far (each computed once, when asked)."""

    #: Projection table → its stored rows.
    projections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    verification: VerifyReport | None = None
    replayed: AuthorityState | None = None


@dataclass(frozen=True, slots=True)
class LogView:
    """A read-only picture of one sandbox directory."""

    directory: Path
    org: Organization
    store: DuckDBLogStore
    events: tuple[LoggedEvent, ...]
    receipts: tuple[ReceiptRecord, ...]
    rejections: tuple[RejectionRecord, ...]
    #: ``(actor ID, Action ID)`` → the accepted Command document.
    commands: dict[tuple[str, str], dict[str, Any]]
    #: The external service's record (``None`` when the directory has none).
    external_calls: tuple[dict[str, Any], ...] | None
    #: Acknowledged Commands (``None`` when the directory has no record of them).
    acks: tuple[dict[str, Any], ...] | None
    #: What has been derived from the log so far (see the module docstring).
    derived: Derived = field(default_factory=Derived, compare=False, repr=False)

    def command_of(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The accepted Command an Event was caused by, if it was caused by one."""
        cause = event.get("cause") or {}
        if cause.get("type") != "command":
            return None
        return self.commands.get((event["actor"]["id"], cause["id"]))

    def close(self) -> None:
        """Close the log."""
        self.store.close()

    def stored_projection(self, table: str) -> list[dict[str, Any]]:
        """The stored rows of a projection table, sorted by key (do not change them)."""
        rows = self.derived.projections.get(table)
        if rows is None:
            rows = self.derived.projections[table] = self.store.projection_rows(table)
        return rows

    def verification(self) -> VerifyReport:
        """What ``verify-log`` finds in this directory, blobs included (one pass per view)."""
        derived = self.derived
        if derived.verification is None:
            read = ReadLog(
                events=[(ev.entry, ev.doc) for ev in self.events],
                receipts=[(r, self.commands[(r.actor_id, r.action_id)]) for r in self.receipts],
                projection_rows=self.stored_projection,
                projections_behind=self.store.projections_behind,
            )
            report, state = verify_read(self.org, read, BlobStore(self.directory / "blobs"))
            derived.verification = report
            if state is not None and derived.replayed is None:
                state.take_touched()
                derived.replayed = state
        return derived.verification

    def replayed(self) -> AuthorityState:
        """The state a clean replay of the log builds, as ``group_log.replay`` makes it (folded
        once per view, or taken from ``verification``; read it, never change it)."""
        derived = self.derived
        if derived.replayed is None:
            derived.replayed = fold(self.org, (ev.doc for ev in self.events), self.receipts)
        return derived.replayed


def read_jsonl(path: Path) -> tuple[dict[str, Any], ...] | None:
    """The complete JSON lines of ``path`` (a torn last line is ignored); None if absent."""
    if not path.exists():
        return None
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line torn by a kill: never acknowledged
    return tuple(out)


def open_log_view(directory: Path | str, *, acks: Path | None = None) -> LogView:
    """Open ``directory`` read-only (the caller closes the view). ``acks`` overrides where the
    record of acknowledged Commands is read from (default ``DIR/acks.jsonl``)."""
    path = Path(directory)
    org = load_organization(path)
    store = DuckDBLogStore(path / LOG_FILE, read_only=True)
    try:
        events = tuple(LoggedEvent(e, parse_strict(e.event.document)) for e in store.entries())
        receipts = tuple(store.receipts())
        rejections = tuple(store.rejections())
    except BaseException:
        store.close()
        raise
    commands = {(r.actor_id, r.action_id): parse_strict(r.command_document) for r in receipts}
    return LogView(
        directory=path,
        org=org,
        store=store,
        events=events,
        receipts=receipts,
        rejections=rejections,
        commands=commands,
        external_calls=read_jsonl(path / EXTERNAL_FILE),
        acks=read_jsonl(acks if acks is not None else path / ACKS_FILE),
    )
