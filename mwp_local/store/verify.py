"""``verify-log``: prove a Group log whole, signed, chained, ordered and consistent.

One pass over the log: every Event's signature is verified again against the Registry as it
stood (Agent keys enter it through Agent Card registration Events), every typed column is
compared with the signed document it came from, the BLAKE3 chain is recomputed, every Group's
sequence is checked contiguous from 1, every Event is replayed through ``evolve`` (which
re-checks the state tables), and every document it embeds, with the WorkItem document it leaves,
is judged against its schema (``authority.embedded``); every Signed Document an Event embeds (an
Agent Card, an Artifact manifest, Evidence, an Approval, a Context Package, a Group Snapshot) is
verified by its expected signer against the Registry as it stood
(``authority.embedded_signatures``, the check the live Authority makes), and an Event kind this
code cannot fold, a critical extension it cannot interpret, or a Group Snapshot that would not
have archived its Group (``archive.attested``), is reported. Then the stored
projections are compared with a fresh rebuild, and every receipt's Command is verified and its
Events found. Given the sandbox's blob store, the content of every Artifact an
``artifact.published`` Event publishes is re-hashed (SHA-256 and BLAKE3) at the declared size
(§13.1). Nothing is modified.

A caller that has read and parsed the log already (the invariant checker's ``LogView``) hands it
over as a ``ReadLog`` so nothing is read or parsed twice, and ``verify_read`` also returns the
state the Events folded into: when nothing was wrong with them, a clean replay it may reuse.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..authority import AuthorityState, archive, embedded, embedded_signatures
from ..authority.evolve import evolve
from ..authority.extensions import EVENT_PROFILES, uninterpretable, unknown_event
from ..authority.organization import Organization
from ..authority.pipeline import event_record
from ..authority.records import ReceiptRecord
from ..authority.reducers import ReplayError
from ..protocol.errors import ProtocolError
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for, verify_parsed
from .base import LogEntry, LogStore, coerce_row
from .blobs import BlobStore
from .chain import GENESIS, link
from .projection_rows import projection_rows
from .records import PROJECTION_BY_NAME


@dataclass
class VerifyReport:
    """What ``verify_log`` checked and every problem it found."""

    events: int = 0
    groups: int = 0
    receipts: int = 0
    projections_compared: int = 0
    #: Artifact blobs re-hashed (0 when no blob store was given).
    blobs: int = 0
    #: Whether the projections were left uncompared because the store says they lag its log (a
    #: writer crashed with rows unwritten; the next writable open re-renders them).
    projections_behind: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether no problem was found."""
        return not self.problems


#: One Event read from the log: its entry and, when the caller parsed it already, its document.
ReadEvent = tuple[LogEntry, dict[str, Any] | None]
#: One receipt and, when the caller parsed it already, its Command document.
ReadReceipt = tuple[ReceiptRecord, dict[str, Any] | None]


@dataclass(frozen=True, slots=True)
class ReadLog:
    """A log a caller has read (and maybe parsed) already, so ``verify_log`` reads none of it
    again: the Events in log order, the receipts in commit order, and the stored rows of a
    projection table. Documents given as ``None`` are parsed here; a given document must be
    what ``parse_strict`` made of the stored text, unchanged."""

    events: Sequence[ReadEvent]
    receipts: Sequence[ReadReceipt]
    projection_rows: Callable[[str], list[dict[str, Any]]]
    #: The store's ``projections_behind`` (``DuckDBLogStore``): the tables are not compared.
    projections_behind: bool = False


def read_store(store: LogStore) -> ReadLog:
    """What ``verify_log`` reads from ``store`` when no ``ReadLog`` is given."""
    return ReadLog(
        events=[(entry, None) for entry in store.entries()],
        receipts=[(receipt, None) for receipt in store.receipts()],
        projection_rows=store.projection_rows,
        projections_behind=getattr(store, "projections_behind", False),
    )


def verify_log(
    org: Organization,
    store: LogStore,
    *,
    blobs: BlobStore | None = None,
    limit: int = 50,
    read: ReadLog | None = None,
) -> VerifyReport:
    """Check everything ``verify-log`` promises; stop listing after ``limit`` problems.

    With ``blobs`` (the sandbox's ``DIR/blobs``) every published Artifact's content is checked
    too; without it Artifacts are not looked at beyond their Events. With ``read`` (the same
    log, already read from ``store``) nothing is read again: every check is made all the same.
    """
    return verify_read(org, read if read is not None else read_store(store), blobs, limit)[0]


def verify_read(
    org: Organization, log: ReadLog, blobs: BlobStore | None = None, limit: int = 50
) -> tuple[VerifyReport, AuthorityState | None]:
    """``verify_log`` over a log already read, with the state its Events folded into.

    The state is what a clean replay of the log builds (receipts included), given only when
    every Event parsed, verified and folded without a problem; otherwise it is ``None``.
    """
    report = VerifyReport()
    found = [0]

    def problem(text: str) -> None:
        found[0] += 1
        if len(report.problems) < limit:
            report.problems.append(text)

    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    event_ids = _verify_events(org, log.events, state, blobs, report, problem)
    clean = found[0] == 0
    _verify_receipts(log.receipts, event_ids, state, report, problem)
    # If every Event verified and folded without a problem, ``state`` is exactly what a replay
    # of the log builds (``replay`` folds the same Events in the same order), receipts included.
    for receipt, _ in log.receipts:
        state.receipts[(receipt.actor_id, receipt.action_id)] = receipt
    report.projections_behind = log.projections_behind
    if not report.problems and not log.projections_behind:
        _compare_projections(state, log.projection_rows, report, problem)
    return report, (state if clean else None)


def _verify_events(
    org: Organization,
    events: Sequence[ReadEvent],
    state: AuthorityState,
    blobs: BlobStore | None,
    report: VerifyReport,
    problem: Callable[[str], None],
) -> set[str]:
    """Check every Event (chain, signature, typed columns, IDs, sequences, Artifacts) and fold
    it into ``state``; return the Event IDs seen."""
    chain = GENESIS
    last_sequence: dict[str, int] = {}
    event_ids: set[str] = set()
    authority = {"type": "service", "id": org.authority.id}
    identity = org.identity()
    profile = profile_for("event")
    for entry, parsed in events:
        report.events += 1
        record = entry.event
        where = f"position {entry.position} ({record.kind}, {record.event_id})"
        chain = link(chain, record.document)
        if chain != entry.chain:
            problem(f"{where}: the hash chain breaks here (the document or an earlier one changed)")
        try:
            doc = parsed if parsed is not None else parse_strict(record.document)
            verified = verify_parsed(profile, doc, state.registry)
        except ProtocolError as exc:
            problem(f"{where}: signature check failed at stage {exc.stage}: {exc.explanation}")
            continue
        if doc.get("acceptedBy") != authority or verified.principal.id != org.authority.id:
            problem(f"{where}: not accepted and signed by the Group Authority")
        if event_record(doc, record.from_state, record.to_state) != record:
            problem(f"{where}: a typed column disagrees with the signed document")
        if record.event_id in event_ids:
            problem(f"{where}: duplicate Event ID")
        event_ids.add(record.event_id)
        if record.group_id is not None:
            previous = last_sequence.get(record.group_id, 0)
            if record.sequence != previous + 1:
                problem(f"{where}: sequence {record.sequence} follows {previous} in its Group")
            last_sequence[record.group_id] = record.sequence or previous
        if blobs is not None and record.kind == "artifact.published":
            report.blobs += 1
            for text in _artifact_problems(doc["payload"]["artifact"], blobs):
                problem(f"{where}: {text}")
        unknown = unknown_event(record.kind)
        if unknown is not None:
            problem(f"{where}: {unknown.code.value}: {unknown.explanation}")
        needs = uninterpretable(doc, EVENT_PROFILES.get(record.kind, frozenset()))
        if needs is not None:
            problem(f"{where}: it depends on {needs}, which this code cannot interpret (§18)")
        for at, text in embedded_signatures.problems(doc, state, identity):
            problem(f"{where}: the Signed Document at {at} is refused: {text}")
        try:
            archive.attested(doc, state, identity)
        except (ProtocolError, KeyError, TypeError) as exc:
            problem(f"{where}: the archival it records would have been refused: {exc}")
        try:
            evolve(state, doc)
        except (ReplayError, KeyError, ValueError) as exc:
            problem(f"{where}: replay through the state tables failed: {exc}")
            continue
        for at, schema, text in embedded.problems(doc, state):
            problem(f"{where}: {at} does not conform to {schema}.schema.json: {text}")
    report.groups = len(last_sequence)
    return event_ids


def _verify_receipts(
    receipts: Sequence[ReadReceipt],
    event_ids: set[str],
    state: AuthorityState,
    report: VerifyReport,
    problem: Callable[[str], None],
) -> None:
    """Verify every receipt's Command against the final Registry and find its Events."""
    profile = profile_for("command")
    for receipt, parsed in receipts:
        report.receipts += 1
        try:
            command = parsed if parsed is not None else parse_strict(receipt.command_document)
            verify_parsed(profile, command, state.registry)
        except ProtocolError as exc:
            problem(f"receipt {receipt.action_id}: its Command does not verify: {exc.explanation}")
        missing = [e for e in receipt.event_ids if e not in event_ids]
        if missing:
            problem(f"receipt {receipt.action_id}: its Events are missing: {', '.join(missing)}")


def _compare_projections(
    state: AuthorityState,
    stored_rows: Callable[[str], list[dict[str, Any]]],
    report: VerifyReport,
    problem: Callable[[str], None],
) -> None:
    """Compare every stored projection table with the one ``state`` rebuilds."""
    rebuilt = projection_rows(state)
    for name, table in PROJECTION_BY_NAME.items():
        fresh = sorted(
            (coerce_row(table, r) for r in rebuilt.get(name, []) if not isinstance(r, tuple)),
            key=lambda r: tuple(str(r[k]) for k in table.key),
        )
        stored = sorted(
            (coerce_row(table, r) for r in stored_rows(name)),
            key=lambda r: tuple(str(r[k]) for k in table.key),
        )
        report.projections_compared += len(fresh)
        if _normal(fresh) != _normal(stored):
            problem(
                f"projection {name}: the stored rows differ from a rebuild by replay "
                f"({len(stored)} stored, {len(fresh)} rebuilt)"
            )


def _artifact_problems(manifest: dict[str, Any], blobs: BlobStore) -> list[str]:
    """What is wrong with one published Artifact's stored content (its manifest's signature is
    checked with every embedded Signed Document, ``embedded_signatures``)."""
    name = f"Artifact {manifest.get('artifactId')} ({manifest.get('contentHash')})"
    try:
        ref = blobs.verify(manifest["contentHash"], name=manifest["artifactId"])
    except ProtocolError as exc:
        return [exc.explanation]  # it names the Artifact already
    if ref.size != manifest["sizeBytes"]:
        return [
            f"{name}: the manifest declares {manifest['sizeBytes']} bytes, the blob has {ref.size}"
        ]
    return []


def _normal(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items()} for r in rows]
