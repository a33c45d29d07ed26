"""Helpers for the delivery tests: mission files with a ``[delivery]`` table, projections in a
comparable form, a clean replay, the gap invariant, and "nothing changed" snapshots."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from mwp_local.agents.runtime import AgentRuntime
from mwp_local.agents.specs import MissionFile
from mwp_local.authority.evolve import evolve
from mwp_local.authority.state import AuthorityState
from mwp_local.delivery.bus import DeliveryBus
from mwp_local.delivery.by_hand import Slow
from mwp_local.drivers.mission_file import parse
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.group_log import replay
from mwp_local.store.projection_rows import comparable_rows

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


def sample(name: str) -> dict[str, Any]:
    """A sample mission file as a TOML table."""
    return tomllib.loads((SAMPLES / f"{name}.toml").read_text())


def with_delivery(raw: dict[str, Any], **delivery: Any) -> MissionFile:
    """``raw`` with ``delivery`` as its ``[delivery]`` table."""
    table = copy.deepcopy(raw)
    table["delivery"] = delivery
    return parse(table, name="delivery-test")


#: Every projection row of a state, order-free (two replicas compare equal through it).
projections = comparable_rows


def clean(sandbox: Sandbox) -> dict[str, list[str]]:
    """The projections of a clean replay of the whole Group log."""
    return projections(replay(sandbox.log.org, sandbox.log.store))


def clean_for(sandbox: Sandbox, principal_id: str) -> dict[str, list[str]]:
    """The projections of a clean fold of what ``principal_id`` may receive: the
    Organization's Events and those of the Groups it was granted a Membership in (through
    its end), folded here from the log apart from the delivery code."""
    events = [json.loads(e.document) for e in sandbox.log.store.events()]
    ended: dict[str, int | None] = {}
    for e in events:
        if e["kind"] in ("membership.changed", "membership.ended"):
            doc = e["payload"]["membership"]
            if doc["member"]["id"] == principal_id:
                ended[doc["groupId"]] = int(e["sequence"]) if doc["state"] == "ended" else None
    org = sandbox.log.org
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    mine = [e for e in events if e.get("groupId") is None]
    for group in sorted(ended):
        through = ended[group]
        mine += sorted(
            (
                e
                for e in events
                if e.get("groupId") == group and (through is None or e["sequence"] <= through)
            ),
            key=lambda e: int(e["sequence"]),
        )
    for e in mine:
        evolve(state, e)
    return projections(state)


def assert_replica_clean(sandbox: Sandbox, runtime: AgentRuntime) -> None:
    """A member of its Groups from sequence 1 holds exactly the clean fold of what it may
    receive (``clean_for``). A late joiner's replica is partial by design (it started from its
    Context Packages): every WorkItem and Mission it holds is exactly as the log has it at the
    end of its last Membership span, folded here from the whole log prefix, and it holds none
    of a Group it is no member of."""
    events = [json.loads(e.document) for e in sandbox.log.store.events()]
    spans = {g: v for (p, g), v in visible_spans(events).items() if p == runtime.member.id}
    if all(v == [(1, v[0][1])] for v in spans.values()):
        assert projections(runtime.replica) == clean_for(sandbox, runtime.member.id), runtime.name
        return
    org = sandbox.log.org
    state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
    for e in events:
        group = e.get("groupId")
        if group is None or group not in spans or int(e["sequence"]) <= spans[group][-1][1]:
            evolve(state, e)
    for wid, item in runtime.replica.work_items.items():
        assert item.group_id in spans, (runtime.name, wid)
        ref = state.work_items[wid]
        assert (item.state, item.revision) == (ref.state, ref.revision), (runtime.name, wid)
    for mid, mission in runtime.replica.missions.items():
        assert mission.state == state.missions[mid].state, (runtime.name, mid)


def untouched(sandbox: Sandbox) -> tuple[int, int, dict[str, list[str]]]:
    """What a rejection must leave unchanged: Event count, receipts, Authority projections."""
    store = sandbox.log.store
    return store.event_count(), len(list(store.receipts())), projections(sandbox.log.state)


def contiguous(sequences: set[int], start: int = 1) -> int:
    """The highest n with start..n all in ``sequences`` (start - 1 when none)."""
    n = start - 1
    while n + 1 in sequences:
        n += 1
    return n


def acks_never_pass_a_gap(bus: DeliveryBus, restored: dict[str, dict[str, int]]) -> None:
    """Every ACK's Cursor is covered by sequences actually handed to that receiver (or restored
    from a snapshot through some sequence), from the start of its Membership's span (its
    visibility start, folded here from the published Membership Events)."""
    spans = visible_spans([json.loads(text) for text in bus.texts.values()])
    for agent, group, cursor in bus.acks:
        handed = set(bus.handed.get(agent, {}).get(group, set()))
        handed |= set(range(1, restored.get(agent, {}).get(group, 0) + 1))
        starts = [a for a, _ in spans.get((agent, group), [(1, 0)]) if a <= cursor]
        start = max(starts) if starts else 1
        assert cursor <= contiguous(handed, start), (agent, group, cursor)


def stored_cursors_never_pass_a_gap(sandbox: Sandbox) -> None:
    """Each Worker's durable Cursor has every sequence up to it stored with it, from the start
    of its Membership's span (its visibility start, folded here from the Group log)."""
    spans = visible_spans([json.loads(e.document) for e in sandbox.log.store.events()])
    for runtime in sandbox.runtimes:
        if runtime.local is None:
            continue
        snapshot = runtime.local.load()
        by_group: dict[str, set[int]] = {}
        for row in snapshot.events:
            by_group.setdefault(row.group_id, set()).add(row.sequence)
        for group, cursor in snapshot.cursors.items():
            if group != "__organization__":
                mine = spans.get((runtime.member.id, group), [(1, 0)])
                start = max([a for a, _ in mine if a <= cursor] or [1])
                held = by_group.get(group, set())
                assert cursor == contiguous(held, start), (runtime.name, group)


def restored_through(sandbox: Sandbox) -> dict[str, dict[str, int]]:
    """Per agent and Group, the highest snapshot sequence it restored."""
    assert sandbox.delivery is not None
    out: dict[str, dict[str, int]] = {}
    for agent, client in sandbox.delivery.clients.items():
        for r in client.restorations:
            if r.refused is None:
                mine = out.setdefault(agent, {})
                mine[r.group_id] = max(mine.get(r.group_id, 0), r.through_sequence)
    return out


def effects_once_per_epoch(sandbox: Sandbox) -> dict[str, int]:
    """Each logical external operation took effect at most once per key, and every key is
    derived from Mission, WorkItem, Ownership Epoch and operation; returns effects per key."""
    effects: dict[str, int] = {}
    for call in sandbox.external.calls:
        mission, work_item, epoch, operation = call.idempotency_key.split("|")
        assert work_item == call.work_item_id and int(epoch) >= 1 and operation
        assert mission.startswith("urn:mwp-local:mission:")
        if call.outcome == "performed" and call.ok:
            effects[call.idempotency_key] = effects.get(call.idempotency_key, 0) + 1
    assert all(n == 1 for n in effects.values()), effects
    return effects


#: A receiver that records frames and acknowledges nothing (a slow consumer).
SlowReceiver = Slow


def visible_spans(events: list[dict[str, Any]]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """(Principal, Group) → the sequence spans delivery may hand it, folded from the log: from
    the visibility start of a Membership granted while none was live (its grant included)
    through the Event that ended it, or the Group's head."""
    heads: dict[str, int] = {}
    spans: dict[tuple[str, str], list[list[int]]] = {}
    live: set[tuple[str, str]] = set()
    for e in events:
        group = e.get("groupId")
        if group is None:
            continue
        heads[group] = max(heads.get(group, 0), int(e["sequence"]))
        if e["kind"] in ("membership.changed", "membership.ended"):
            doc = e["payload"]["membership"]
            key = (doc["member"]["id"], doc["groupId"])
            if doc["state"] == "ended":
                if key in live:
                    spans[key][-1][1] = int(e["sequence"])
                    live.discard(key)
            elif key not in live:
                start = min(max(1, int(doc["visibilityStartSequence"])), int(e["sequence"]))
                spans.setdefault(key, []).append([start, 0])
                live.add(key)
    return {k: [(a, b or heads[k[1]]) for a, b in v] for k, v in spans.items()}


def visible_to(principal_id: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of ``events`` (in log order), the ones delivery may hand ``principal_id``: Organization
    Events, and each Group's Events inside its spans (``visible_spans``), in log order."""
    spans = visible_spans(events)
    return [
        e
        for e in events
        if e.get("groupId") is None
        or any(a <= int(e["sequence"]) <= b for a, b in spans.get((principal_id, e["groupId"]), ()))
    ]
