"""Figures 1, 2 and 3: the Group Authority's throughput, its growth with the log, and replay.

Owns the measurements and their same-run ceilings:

* figure 1, Commands/s through ``GroupLog`` on a DuckDB file for the nine-Command WorkItem cycle,
  with group commit and with one durable commit per Command. The ceiling re-does, with the raw
  building blocks only, what any Authority must do for the same Commands: RFC 8785 of each
  Event the run produced, an Ed25519 signature (pynacl), and a batched DuckDB append of the
  signed documents (one commit per batch, or per Command for the durable ceiling);
* figure 2, the cost of a Command (group commit) with ~1k and with ~100k Events in the log (the
  log is checkpointed after it is filled, as an idle moment would: a checkpoint is a stall of
  its own, not a cost of the log's size);
* figure 3, Events/s rebuilding every projection from a ~20k-Event log (``rebuild_projections``),
  without and with signature verification; the verify ceiling is raw pynacl verification of the
  same Events, the plain one's reference is reading and parsing the documents (``orjson``). The
  same log then grows to ~100k Events for figure 2.

Only ``GroupLog`` calls are timed; signing the Commands is client work and is not.
"""

from __future__ import annotations

import base64
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import orjson
import pyarrow as pa
from harness import Entry, Measure, Target
from nacl.signing import SigningKey, VerifyKey
from workload import Timed, Workload

from mwp_local.authority import Accepted
from mwp_local.authority.pipeline import Outcome
from mwp_local.protocol.jcs import canonicalize
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.store import state_snapshot
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import GroupLog, fold


@dataclass(frozen=True, slots=True)
class Sizes:
    """How much work each figure does (``QUICK``: smoke test; ``FULL``: ``make bench``)."""

    reps: int
    group_items: int
    group_batch: int
    durable_items: int
    growth_small: int
    growth_large: int
    growth_window: int
    replay_events: int
    prefill_batch: int
    replay_reps: int
    verify_sample: int
    snapshot_tail: int


FULL = Sizes(
    reps=5,
    group_items=600,
    group_batch=200,
    durable_items=40,
    growth_small=1_000,
    growth_large=100_000,
    growth_window=100,
    replay_events=20_000,
    prefill_batch=500,
    replay_reps=3,
    verify_sample=20_000,
    snapshot_tail=1_000,
)
QUICK = Sizes(
    reps=1,
    group_items=4,
    group_batch=2,
    durable_items=2,
    growth_small=60,
    growth_large=300,
    growth_window=4,
    replay_events=150,
    prefill_batch=10,
    replay_reps=1,
    verify_sample=100,
    snapshot_tail=20,
)

#: What a WorkItem cycle commits, for the ceilings: the signed Event documents of each commit
#: and how many Commands that commit carried.
Commits = list[tuple[int, list[dict[str, Any]]]]


def _collector(into: Commits) -> Any:
    def collect(outcomes: list[Outcome]) -> None:
        docs = [d for o in outcomes if isinstance(o, Accepted) for d in o.event_documents]
        into.append((len(outcomes), docs))

    return collect


def _raw_ceiling(commits: Commits, workdir: Path) -> float:
    """Commands/s doing only RFC 8785, an Ed25519 signature and a batched DuckDB append (one
    transaction per commit) for the same Event documents."""
    key = SigningKey(b"\x07" * 32)
    con = duckdb.connect(str(workdir / "raw.duckdb"), config={"checkpoint_threshold": "256MB"})
    con.execute(
        "CREATE TABLE raw_events (position BIGINT, event_id VARCHAR, kind VARCHAR, "
        "document VARCHAR, signature VARCHAR)"
    )
    writer = con.cursor()
    position = 0
    commands = 0
    unsigned = [
        (n, [{k: v for k, v in d.items() if k != "signature"} for d in docs]) for n, docs in commits
    ]
    began = time.perf_counter()
    for count, docs in unsigned:
        texts, signatures = [], []
        for doc in docs:
            message = canonicalize(doc)
            signature = key.sign(message).signature
            texts.append(message.decode("utf-8"))
            signatures.append(base64.urlsafe_b64encode(signature).rstrip(b"=").decode("ascii"))
        rows = pa.table(
            {
                "position": pa.array(range(position + 1, position + len(docs) + 1), pa.int64()),
                "event_id": [d["eventId"] for d in docs],
                "kind": [d["kind"] for d in docs],
                "document": texts,
                "signature": signatures,
            }
        )
        writer.begin()
        writer.from_arrow(rows).insert_into("raw_events")
        writer.commit()
        position += len(docs)
        commands += count
    seconds = time.perf_counter() - began
    con.close()
    return commands / seconds


def _time_catch_up(workload: Workload, timed: Timed) -> None:
    """Add the writing of the projection rows still pending to the run's time: the store
    writes them after the commits (``DuckDBLogStore``), and the figure counts that work."""
    store = workload.log.store
    assert isinstance(store, DuckDBLogStore)
    began = time.perf_counter()
    store.catch_up()
    timed.seconds += time.perf_counter() - began


def figure_1(sizes: Sizes) -> list[Entry]:
    """Authority throughput with group commit and with one durable commit per Command."""
    group, group_ceiling, durable, durable_ceiling = [], [], [], []
    events_per_command = 0.0
    for _ in range(sizes.reps):
        with tempfile.TemporaryDirectory(prefix="mwp-bench-") as tmp:
            work = Path(tmp)
            commits: Commits = []
            workload = Workload.open(DuckDBLogStore(work / "group.duckdb"))
            timed = workload.run_cycles(
                range(sizes.group_items),
                batch=sizes.group_batch,
                on_outcomes=_collector(commits),
            )
            _time_catch_up(workload, timed)
            workload.log.store.close()
            group.append(timed.commands / timed.seconds)
            events_per_command = timed.events / timed.commands
            group_ceiling.append(_raw_ceiling(commits, work))

            commits = []
            workload = Workload.open(DuckDBLogStore(work / "durable.duckdb"))
            timed = workload.run_cycles(
                range(sizes.durable_items), batch=None, on_outcomes=_collector(commits)
            )
            _time_catch_up(workload, timed)
            workload.log.store.close()
            durable.append(timed.commands / timed.seconds)
            (work / "raw.duckdb").unlink()
            durable_ceiling.append(_raw_ceiling(commits, work))
    cycle = "authorize, offer, accept, start, checkpoint, start, publish Artifact, submit, accept"
    return [
        Entry(
            figure="1a",
            name="Authority, group commit",
            unit="Commands/s",
            values=group,
            ceiling=Measure(
                "raw JCS + Ed25519 sign + DuckDB batched append", "Commands/s", tuple(group_ceiling)
            ),
            ratio_meaning="share of the same-run ceiling reached",
            target=Target(text="≥ 0.25 of ceiling (issue 25)", ratio_at_least=0.25),
            parameters={
                "work_items": sizes.group_items,
                "commands_per_commit": sizes.group_batch,
                "events_per_command": round(events_per_command, 3),
                "cycle": cycle,
            },
            notes=(
                "Full path: parse, six-stage verification of the Command (and of the Artifact "
                "and Evidence it carries), freshness, fences, handler, signed Events, evolve, "
                "projection rows, one DuckDB transaction per batch (projection rows written "
                "in bulk behind it, the last of them timed)."
            ),
        ),
        Entry(
            figure="1b",
            name="Authority, one durable commit per Command",
            unit="Commands/s",
            values=durable,
            ceiling=Measure(
                "raw JCS + Ed25519 sign + DuckDB append, one commit per Command",
                "Commands/s",
                tuple(durable_ceiling),
            ),
            ratio_meaning="share of the same-run ceiling reached",
            target=Target(text="≥ 0.5 of ceiling (issue 25)", ratio_at_least=0.5),
            parameters={"work_items": sizes.durable_items, "cycle": cycle},
            notes=(
                "Each Command committed (Events, receipt) before the next; projection rows "
                "merged per key and written in bulk behind the commits, the last of them timed."
            ),
        ),
    ]


def _prefill(workload: Workload, events: int, batch: int, first: int) -> int:
    """Run cycles (untimed) until the log holds at least ``events`` Events; the next item."""
    store = workload.log.store
    n = first
    while store.event_count() < events:
        need = events - store.event_count()
        items = max(1, min(batch, need // 9 + 1))
        workload.run_cycles(range(n, n + items), batch=items)
        n += items
    return n


def _checkpoint(workload: Workload) -> DuckDBLogStore:
    store = workload.log.store
    assert isinstance(store, DuckDBLogStore)
    store.checkpoint()
    return store


def _window_cost(workload: Workload, first: int, items: int) -> tuple[float, int]:
    """µs per Command of one group-committed window of ``items`` WorkItems; the next item."""
    timed = workload.run_cycles(range(first, first + items), batch=items, timed=Timed())
    return timed.seconds / timed.commands * 1e6, first + items


def figure_2_and_3(sizes: Sizes) -> list[Entry]:
    """Growth (cost per Command at a small and a large log) and replay on a mid-sized log.

    The windows on the small and the large log alternate, so that both see the same share of
    whatever else the machine is doing.
    """
    small: list[float] = []
    large: list[float] = []
    small_events = 0
    with tempfile.TemporaryDirectory(prefix="mwp-bench-") as tmp:
        workload = Workload.open(DuckDBLogStore(Path(tmp) / "large.duckdb"))
        nxt = _prefill(workload, sizes.replay_events, sizes.prefill_batch, 0)
        store = _checkpoint(workload)
        replay_entries = _figure_3(workload.log, store, sizes)
        nxt = _prefill(workload, sizes.growth_large, sizes.prefill_batch, nxt)
        large_events = store.event_count()
        _checkpoint(workload)
        for rep in range(sizes.reps):
            small_workload = Workload.open(DuckDBLogStore(Path(tmp) / f"small-{rep}.duckdb"))
            first = _prefill(small_workload, sizes.growth_small, sizes.prefill_batch, 0)
            small_events = small_workload.log.store.event_count()
            _checkpoint(small_workload)
            small.append(_window_cost(small_workload, first, sizes.growth_window)[0])
            small_workload.log.store.close()
            cost, nxt = _window_cost(workload, nxt, sizes.growth_window)
            large.append(cost)
        store.close()

    def label(n: int) -> str:
        return f"{n // 1000}k" if n >= 1000 else str(n)

    growth = [
        Entry(
            figure="2a",
            name=f"cost per Command, {label(small_events)} Events in the log",
            unit="µs/Command",
            values=small,
            parameters={"events_in_log": small_events, "window_work_items": sizes.growth_window},
            notes="Group commit; a window of WorkItem cycles on a fresh log per repetition.",
        ),
        Entry(
            figure="2b",
            name=f"cost per Command, {label(large_events)} Events in the log",
            unit="µs/Command",
            values=large,
            ceiling=Measure(
                f"cost per Command at {label(small_events)} Events", "µs/Command", tuple(small)
            ),
            ratio_meaning="cost at the large log / cost at the small log",
            target=Target(text="≤ 1.2 × the cost at 1k", ratio_at_most=1.2),
            parameters={"events_in_log": large_events, "window_work_items": sizes.growth_window},
            notes=(
                "Group commit; consecutive windows on one large log, alternating with the "
                "small-log windows."
            ),
        ),
    ]
    return growth + replay_entries


def _figure_3(log: GroupLog, store: DuckDBLogStore, sizes: Sizes) -> list[Entry]:
    events = store.event_count()

    def rebuild(verify: bool) -> float:
        began = time.perf_counter()
        log.rebuild_projections(verify_signatures=verify)
        return events / (time.perf_counter() - began)

    plain: list[float] = []
    verified: list[float] = []
    for _ in range(sizes.replay_reps):  # alternating, so both see the same machine
        plain.append(rebuild(False))
        verified.append(rebuild(True))

    # Reference for the plain rebuild: read every document and parse it (orjson), nothing else.
    def read_and_parse() -> float:
        began = time.perf_counter()
        count = 0
        for text in store.event_documents():
            orjson.loads(text)
            count += 1
        return count / (time.perf_counter() - began)

    reads = [read_and_parse() for _ in range(sizes.replay_reps)]

    # Ceiling for the verified rebuild: raw pynacl verification of the same Events' signatures.
    key = VerifyKey(log.org.authority.key_pair.public_key)
    sample = []
    for text in store.event_documents():
        doc = orjson.loads(text)
        envelope = doc.pop("signature")
        value = envelope["value"]
        signature = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        sample.append((canonicalize(doc), signature))
        if len(sample) >= sizes.verify_sample:
            break

    def raw_verify() -> float:
        began = time.perf_counter()
        for message, signature in sample:
            key.verify(message, signature)
        return len(sample) / (time.perf_counter() - began)

    raw = [raw_verify() for _ in range(sizes.replay_reps)]
    return [*_rebuild_entries(events, plain, reads, verified, raw, len(sample)), _open(log, sizes)]


def _parse_ceiling(reads: Sequence[float]) -> Measure:
    """Figure 3a's reference: reading and parsing every document (orjson), nothing else."""
    return Measure("read + parse the documents (orjson)", "Events/s", tuple(reads))


def _snapshot_before_tail(log: GroupLog, store: DuckDBLogStore, tail: int) -> int:
    """Write the state snapshot of the log's first ``head - tail`` Events (untimed); return its
    position. Its receipts are those of the Commands whose Events all lie before it."""
    entries = list(store.entries())
    cut = len(entries) - tail
    position_of = {e.event.event_id: e.position for e in entries}
    receipts = []
    for receipt in store.receipts():
        if any(position_of[i] > cut for i in receipt.event_ids):
            break
        receipts.append(receipt)
    state = fold(log.org, (parse_strict(e.event.document) for e in entries[:cut]), receipts)
    path = state_snapshot.snapshot_path(store)
    assert path is not None
    state_snapshot.write_file(
        path, state, position=cut, chain=bytes(entries[cut - 1].chain), receipts=len(receipts)
    )
    return cut


def _open(log: GroupLog, sizes: Sizes) -> Entry:
    """Figure 3a's second target: open a GroupLog from a snapshot plus its tail, interleaved
    with the plain open (full replay) and the parse ceiling."""
    store = log.store
    assert isinstance(store, DuckDBLogStore)
    events = store.event_count()
    position = _snapshot_before_tail(log, store, sizes.snapshot_tail)

    def opened(snapshot: bool) -> float:
        began = time.perf_counter()
        other = GroupLog(log.org, store, snapshot=snapshot)
        seconds = time.perf_counter() - began
        assert (other.snapshot_reason is None) == snapshot, other.snapshot_reason
        return events / seconds

    def read_and_parse() -> float:
        began = time.perf_counter()
        for text in store.event_documents():
            orjson.loads(text)
        return events / (time.perf_counter() - began)

    fast: list[float] = []
    plain: list[float] = []
    reads: list[float] = []
    for _ in range(sizes.replay_reps):  # alternating, so all three see the same machine
        fast.append(opened(True))
        plain.append(opened(False))
        reads.append(read_and_parse())
    path = state_snapshot.snapshot_path(store)
    assert path is not None
    size = path.stat().st_size
    path.unlink()  # the growth figure goes on with this log
    return Entry(
        figure="3a",
        name="open from a state snapshot plus its tail",
        unit="Events/s",
        values=fast,
        ceiling=_parse_ceiling(reads),
        ratio_meaning="Events in the log / seconds to open it, against merely parsing the log",
        target=Target(text="≥ 1.0 of the parse ceiling (issue 25)", ratio_at_least=1.0),
        parameters=dict(
            events=events,
            snapshot_position=position,
            tail_events=events - position,
            snapshot_bytes=size,
            plain_open_events_per_s=round(sorted(plain)[len(plain) // 2], 1),
        ),
        notes=(
            "GroupLog(org, store): the state snapshot beside the log (store/state_snapshot.py: "
            "checked against its digest, the log's chain value at its position and the code "
            "version, then decoded) plus the tail folded through evolve; the plain open "
            "(full replay) was measured interleaved."
        ),
    )


def _rebuild_entries(
    events: int,
    plain: list[float],
    reads: list[float],
    verified: list[float],
    raw: list[float],
    sample: int,
) -> list[Entry]:
    return [
        Entry(
            figure="3a",
            name="rebuild all projections, no signature check",
            unit="Events/s",
            values=plain,
            ceiling=_parse_ceiling(reads),
            ratio_meaning="share of the rate of merely reading and parsing the log",
            target=Target(text="≥ 0.2 of the parse ceiling (issue 25)", ratio_at_least=0.2),
            parameters={"events": events},
            notes=(
                "GroupLog.rebuild_projections(): the store's own texts decoded by orjson "
                "(store/trusted_replay.py), evolve, write every projection."
            ),
        ),
        Entry(
            figure="3b",
            name="rebuild all projections, every signature verified",
            unit="Events/s",
            values=verified,
            ceiling=Measure("raw pynacl Ed25519 verify", "Events/s", tuple(raw)),
            ratio_meaning="share of the same-run raw verification rate",
            target=Target(text="≥ 0.5 of ceiling", ratio_at_least=0.5),
            parameters={"events": events, "ceiling_sample": sample},
            notes=(
                "rebuild_projections(verify_signatures=True): the store's own texts decoded "
                "by orjson, stages 3-6 of §6.4 per Event (the schema was checked when written), "
                "signing bytes cut from the stored text, the equations on two threads "
                "(store/verified_replay.py)."
            ),
        ),
    ]


def all_figures(sizes: Sizes, only: Sequence[str] = ()) -> list[Entry]:
    """Figures 1 to 3 (or those named in ``only``)."""
    out: list[Entry] = []
    if not only or "1" in only:
        out += figure_1(sizes)
    if not only or "2" in only or "3" in only:
        out += figure_2_and_3(sizes)
    return out
