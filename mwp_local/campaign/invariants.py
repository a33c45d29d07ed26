"""The invariants of the log itself: sequences, identifiers, chain, signatures, projections,
rejections, external operations and acknowledgements, each reading only a ``LogView``.

``projections_replay`` compares the stored tables with the view's clean replay
(``LogView.replayed``), which a ``verify-log`` pass over the same view may already have built.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..authority import AuthorityState
from ..authority.evolve import evolve
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for, verify_parsed
from ..store.base import coerce_row
from ..store.blobs import BlobStore
from ..store.chain import GENESIS, link
from ..store.projection_rows import projection_rows
from ..store.records import PROJECTION_BY_NAME
from .logdir import LogView
from .registry import Tally, invariant
from .work_invariants import lease_intervals

# ---------------------------------------------------------------------- the log itself


@invariant(
    "contiguous_sequences",
    "log positions run 1..N and every Group's sequence runs 1, 2, 3 … with no gap or repeat",
)
def _sequences(view: LogView, tally: Tally) -> None:
    last: dict[str, int] = {}
    for index, ev in enumerate(view.events, start=1):
        tally.check(ev.position == index, f"log position {ev.position} where {index} was expected")
        group = ev.doc.get("groupId")
        if group is None:
            continue
        seq = ev.doc.get("sequence")
        tally.check(
            seq == last.get(group, 0) + 1,
            f"Group {group}: sequence {seq} follows {last.get(group, 0)} "
            f"(position {ev.position}, {ev.doc['kind']})",
        )
        tally.check(
            ev.entry.event.sequence == seq,
            f"position {ev.position}: typed sequence column {ev.entry.event.sequence} "
            f"disagrees with the signed document's {seq}",
        )
        last[group] = seq if isinstance(seq, int) else last.get(group, 0)


@invariant("unique_event_ids", "no Event ID appears twice in the log")
def _unique_ids(view: LogView, tally: Tally) -> None:
    seen: dict[str, int] = {}
    for ev in view.events:
        eid = ev.doc["eventId"]
        tally.check(
            eid not in seen,
            f"Event ID {eid} at position {ev.position} was already used at position "
            f"{seen.get(eid)}",
        )
        seen.setdefault(eid, ev.position)


@invariant("hash_chain", "every Event's BLAKE3 chain value links it to the one before")
def _chain(view: LogView, tally: Tally) -> None:
    chain = GENESIS
    for ev in view.events:
        chain = link(chain, ev.entry.event.document)
        tally.check(
            chain == ev.entry.chain,
            f"position {ev.position} ({ev.doc['kind']}): the chain breaks here",
        )
        chain = ev.entry.chain


@invariant(
    "signatures",
    "every Event is signed by the Group Authority, every receipt's Command by its actor and "
    "every published Artifact manifest by its producer, under the Registry as it stood; "
    "every Artifact blob re-hashes to its manifest",
)
def _signatures(view: LogView, tally: Tally) -> None:
    state = AuthorityState(registry=view.org.registry(), organization_id=view.org.organization_id)
    authority = view.org.authority.id
    blobs = BlobStore(view.directory / "blobs")
    for ev in view.events:
        where = f"position {ev.position} ({ev.doc['kind']}, {ev.doc['eventId']})"
        try:
            verified = verify_parsed(profile_for("event"), ev.doc, state.registry)
            tally.check(
                verified.principal.id == authority,
                f"{where}: signed by {verified.principal.id}, not the Group Authority",
            )
        except ProtocolError as exc:
            tally.check(False, f"{where}: stage {exc.stage}: {exc.explanation}")
        if ev.doc["kind"] == "artifact.published":
            tally.check(*_artifact(ev.doc["payload"]["artifact"], state, blobs, where))
        with contextlib.suppress(Exception):  # replay is judged by other invariants
            evolve(state, ev.doc)  # the Registry grows through Agent Card Events
    for receipt in view.receipts:
        try:
            verify_parsed(
                profile_for("command"), parse_strict(receipt.command_document), state.registry
            )
            tally.check(True, "")
        except ProtocolError as exc:
            tally.check(False, f"receipt {receipt.action_id}: Command: {exc.explanation}")


def _artifact(
    manifest: dict[str, Any], state: AuthorityState, blobs: BlobStore, where: str
) -> tuple[bool, str]:
    try:
        verify_parsed(profile_for("artifact"), manifest, state.registry)
        ref = blobs.verify(manifest["contentHash"], name=manifest["artifactId"])
    except ProtocolError as exc:
        return False, f"{where}: Artifact {manifest.get('artifactId')}: {exc.explanation}"
    return ref.size == manifest["sizeBytes"], f"{where}: Artifact size differs from its blob"


@invariant(
    "projections_replay",
    "every stored projection table equals the one a clean replay of the log rebuilds",
)
def _projections(view: LogView, tally: Tally) -> None:
    rebuilt = projection_rows(view.replayed())
    for name, table in PROJECTION_BY_NAME.items():

        def rows(items: Any, t: Any = table) -> list[dict[str, Any]]:
            out = [coerce_row(t, r) for r in items if not isinstance(r, tuple)]
            return sorted(out, key=lambda r: tuple(str(r[k]) for k in t.key))

        fresh, stored = rows(rebuilt.get(name, [])), rows(view.stored_projection(name))
        lagging = getattr(view.store, "projections_behind", False)
        tally.check(
            fresh == stored,
            f"projection {name}: {len(stored)} stored rows differ from the {len(fresh)} a "
            "replay rebuilds"
            + (
                " (a writer crashed with projection rows unwritten: opening the directory for "
                "writing re-renders them)"
                if lagging
                else ""
            ),
        )


@invariant(
    "rejections_coded",
    "every refused Command is recorded with a section-19 code and nothing in the log",
)
def _rejections(view: LogView, tally: Tally) -> None:
    codes = {c.value for c in ErrorCode}
    caused = {(ev.doc["actor"]["id"], (ev.doc.get("cause") or {}).get("id")) for ev in view.events}
    accepted = set(view.commands)
    for r in view.rejections:
        tally.check(
            r.code in codes, f"rejection of {r.action_id}: {r.code!r} is no section-19 code"
        )
        key = (r.actor_id, r.action_id)
        if r.actor_id and r.action_id and key not in accepted:
            tally.check(
                key not in caused,
                f"rejected Command {r.action_id} of {r.actor_id} has Events in the log",
            )


# ---------------------------------------------------------------------- side records


@invariant(
    "external_effect_once",
    "the external service performed each operation at most once per idempotency key (WorkItem, "
    "Ownership Epoch, operation), and only for the holder of a live Execution Lease",
)
def _external(view: LogView, tally: Tally) -> None:
    if view.external_calls is None:
        return

    intervals = lease_intervals(view)
    done: dict[str, int] = {}
    for call in view.external_calls:
        if call["outcome"] != "performed":
            continue
        key = call["idempotency_key"]
        if call["ok"]:
            done[key] = done.get(key, 0) + 1
            tally.check(done[key] == 1, f"{key}: performed successfully {done[key]} times")
        live = any(
            start <= call["at_us"] <= end
            for start, end in intervals.get((call["agent_id"], call["work_item_id"]), ())
        )
        tally.check(
            live,
            f"{key}: performed for {call['agent_id']} at {call['at_us']} µs without a live "
            "Execution Lease",
        )


@invariant(
    "acknowledged_present",
    "every Command acknowledged to a client after its commit returned is in the log (its "
    "receipt if it was accepted, its rejection if it was refused); of those acknowledged under "
    "write-behind with a bound of N, at most N are missing",
)
def _acks(view: LogView, tally: Tally) -> None:
    if view.acks is None:
        return
    rejected = {(r.actor_id, r.action_id) for r in view.rejections}
    missing = 0
    for ack in view.acks:
        key = (ack["actor"], ack["action"])
        where = view.commands if ack["outcome"] == "accepted" else rejected
        bound = ack.get("write_behind")
        what = f"{ack['outcome']} Command {ack['action']} of {ack['actor']}"
        if bound is None:
            tally.check(key in where, f"{what} was acknowledged but is not in the log")
            continue
        present = key in where
        missing += not present
        tally.check(
            present or missing <= bound,
            f"{what} was acknowledged under write-behind and is not in the log: {missing} such "
            f"Commands are missing, more than the {bound} a crash may lose",
        )
