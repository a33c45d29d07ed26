"""What the proof-of-concept checks may read: one sandbox directory, opened read-only.

``Evidence`` holds the Group log (Events, receipts with the signed Commands, rejections, the SQL
views) through ``mwp_local.campaign.logdir``, and the side files the scenario recorded under
``DIR/poc/`` (frames, snapshots, offline buffers, replicas, the restart, the probes). Missing side
files read as empty, so a check on a directory that lacks the behaviour fails rather than
crashing. Helpers here derive facts from Events (owners, state intervals) and never decide a
verdict.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from ..campaign.logdir import LogView, open_log_view
from ..delivery.snapshots import SnapshotBundle, verify_snapshot
from ..protocol.errors import ProtocolError
from ..protocol.signing import profile_for, verify_parsed
from ..protocol.timestamps import parse_timestamp
from ..store.views import sql as run_sql
from .scenario import POC_DIR


def micros(text: str) -> int:
    """A protocol timestamp as epoch microseconds."""
    return parse_timestamp(text).epoch_micros


def _loads(line: str) -> Any:
    """One JSON value: orjson where it accepts the text, else the standard library, which also
    takes what orjson refuses (integers beyond 64 bits, lone surrogates, NaN) or raises."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [_loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


class SideFiles(Mapping[str, list[dict[str, Any]]]):
    """The side files the scenario recorded under ``DIR/poc/`` by name, each read the first time
    a check asks for it (a process that runs only some checks reads only what they need)."""

    NAMES = ("frames", "snapshots", "offline", "replicas", "restart", "probes")

    def __init__(self, directory: Path) -> None:
        self._directory = directory / POC_DIR
        self._read: dict[str, list[dict[str, Any]]] = {}

    def __getitem__(self, name: str) -> list[dict[str, Any]]:
        rows = self._read.get(name)
        if rows is None:
            if name not in self.NAMES:
                raise KeyError(name)
            rows = self._read[name] = _jsonl(self._directory / f"{name}.jsonl")
        return rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)


@dataclass
class Evidence:
    """A read-only picture of one proof-of-concept directory."""

    directory: Path
    view: LogView
    side: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: ``(snapshot ID, referenced hash)`` → what ``verify_snapshot`` returned or raised.
    _snapshots: dict[tuple[str, Any], list[dict[str, Any]] | ProtocolError] = field(
        default_factory=dict, repr=False
    )

    @classmethod
    def open(cls, directory: Path | str) -> Evidence:
        """Open ``directory`` (close it with ``close``)."""
        path = Path(directory)
        return cls(directory=path, view=open_log_view(path), side=SideFiles(path))

    def close(self) -> None:
        """Close the log."""
        self.view.close()

    # ------------------------------------------------------------------ the log

    @cached_property
    def events(self) -> list[dict[str, Any]]:
        """Every Event document in log order (each with its log position as ``_position``), with
        the typed ``mission_id``, ``from_state`` and ``to_state`` columns of its log row (what
        the ``events`` view shows)."""
        return [
            {
                **e.doc,
                "_position": e.position,
                "_mission": e.entry.event.mission_id,
                "fromState": e.entry.event.from_state,
                "toState": e.entry.event.to_state,
            }
            for e in self.view.events
        ]

    def of(self, *kinds: str) -> list[dict[str, Any]]:
        """The Events of these kinds, in log order."""
        return [e for e in self.events if e["kind"] in kinds]

    def sql(self, query: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Rows of a read-only query over the documented views."""
        rows: list[dict[str, Any]] = run_sql(self.view.store, query, params).to_pylist()
        return rows

    @cached_property
    def rejections(self) -> list[dict[str, Any]]:
        """The rejections in log order, with the columns of the ``rejections`` view the checks
        read: the same rows and values the view returns, built from the records the ``LogView``
        read at open (which saves a query)."""
        return [
            {
                "code": r.code,
                "kind": r.kind,
                "actor_id": r.actor_id,
                "action_id": r.action_id,
                "group_id": r.group_id,
                "work_item_id": r.work_item_id,
                "explanation": r.explanation,
                "command_text": r.command_text,
            }
            for r in self.view.rejections
        ]

    def rejected(self, code: str) -> list[dict[str, Any]]:
        """The rejections with this section-19 code."""
        return [r for r in self.rejections if r["code"] == code]

    def command(self, event: dict[str, Any]) -> dict[str, Any] | None:
        """The accepted Command that caused ``event``."""
        return self.view.command_of(event)

    @cached_property
    def commands(self) -> list[dict[str, Any]]:
        """Every accepted Command document, in receipt order."""
        return [self.view.commands[(r.actor_id, r.action_id)] for r in self.view.receipts]

    @cached_property
    def heads(self) -> dict[str, int]:
        """Each Group's last sequence."""
        out: dict[str, int] = {}
        for e in self.events:
            if e.get("groupId"):
                out[e["groupId"]] = max(out.get(e["groupId"], 0), int(e["sequence"]))
        return out

    @cached_property
    def member_ranges(self) -> dict[tuple[str, str], int]:
        """(Principal, Group) → the last sequence delivery owes that Principal: the Group's
        head while its Membership is live, the sequence of the Event that ended it otherwise;
        Groups it was never granted are absent (folded from the log, apart from the bus)."""
        out: dict[tuple[str, str], int] = {}
        for e in self.of("membership.changed", "membership.ended"):
            doc = e["payload"]["membership"]
            key = (doc["member"]["id"], doc["groupId"])
            out[key] = int(e["sequence"]) if doc["state"] == "ended" else 0
        return {k: v or self.heads[k[1]] for k, v in out.items()}

    @cached_property
    def visible_spans(self) -> dict[tuple[str, str], list[tuple[int, int]]]:
        """(Principal, Group) → the sequence spans delivery may hand it: each from the
        ``visibilityStartSequence`` of a Membership granted while none was live (the grant
        included) through the Event that ended it, or the Group's head (folded from the log,
        apart from the bus's Audience)."""
        spans: dict[tuple[str, str], list[list[int]]] = {}
        live: set[tuple[str, str]] = set()
        for e in self.of("membership.changed", "membership.ended"):
            doc = e["payload"]["membership"]
            key = (doc["member"]["id"], doc["groupId"])
            sequence = int(e["sequence"])
            if doc["state"] == "ended":
                if key in live:
                    spans[key][-1][1] = sequence
                    live.discard(key)
            elif key not in live:
                start = max(1, min(int(doc["visibilityStartSequence"] or 1), sequence))
                spans.setdefault(key, []).append([start, 0])
                live.add(key)
        return {k: [(a, b or self.heads[k[1]]) for a, b in v] for k, v in spans.items()}

    def visible(self, principal_id: str, group_id: str, sequence: int) -> bool:
        """Whether delivery may hand ``principal_id`` that Event of ``group_id``."""
        spans = self.visible_spans.get((principal_id, group_id), ())
        return any(a <= sequence <= b for a, b in spans)

    @cached_property
    def packages_for(self) -> dict[str, set[str]]:
        """Principal → the Event IDs cited by the Context Packages addressed to it (in the
        Membership Event granting it one, or in an offer to it)."""
        out: dict[str, set[str]] = {}
        for e in self.of("membership.changed", "work.offer.created"):
            package = e["payload"].get("contextPackage")
            if not isinstance(package, dict):
                continue
            if e["kind"] == "membership.changed":
                to = [e["payload"]["membership"]["member"]["id"]]
            else:
                to = [o["agentId"] for o in e["payload"]["offers"]]
            cited = set(package["sourceEventRange"]["eventIds"])
            for decision in package["decisions"]:
                cited.update(decision["sourceEventIds"])
            for principal in to:
                out.setdefault(principal, set()).update(cited)
        return out

    def heads_of(self, principal_id: str) -> dict[str, int]:
        """The Groups ``principal_id`` receives, each with the last sequence it is owed."""
        return {g: v for (p, g), v in self.member_ranges.items() if p == principal_id}

    @cached_property
    def roots(self) -> list[dict[str, Any]]:
        """``mission.created`` Events of root Missions (no parent)."""
        return [e for e in self.of("mission.created") if not e["payload"]["mission"].get("parent")]

    def work_payloads(self, work_item_id: str) -> Iterator[dict[str, Any]]:
        """Events that name ``work_item_id``."""
        return (e for e in self.events if e.get("workItemId") == work_item_id)

    @cached_property
    def owners(self) -> dict[str, list[tuple[int, str]]]:
        """WorkItem → ``(position, Agent)`` of each accepted offer, in order."""
        out: dict[str, list[tuple[int, str]]] = {}
        for e in self.of("work.offer.accepted"):
            out.setdefault(e["workItemId"], []).append((e["_position"], e["actor"]["id"]))
        return out

    def owner_at(self, work_item_id: str, position: int) -> str | None:
        """The owner of a WorkItem just after log position ``position``."""
        current = None
        for at, agent in self.owners.get(work_item_id, []):
            if at <= position:
                current = agent
        return current

    @cached_property
    def active_spans(self) -> list[tuple[str, str, str, int, int]]:
        """``(agent, Group, WorkItem, from µs, to µs)`` for every stretch a WorkItem was active."""
        spans = []
        open_: dict[str, tuple[str, str, int]] = {}
        for e in self.events:
            wid = e.get("workItemId")
            to_state = e.get("toState")
            if wid is None or to_state is None:
                continue
            at = micros(e["occurredAt"])
            if wid in open_ and to_state != "active":
                agent, group, since = open_.pop(wid)
                spans.append((agent, group, wid, since, at))
            if to_state == "active" and e["kind"] == "work.started":
                open_[wid] = (e["actor"]["id"], e["groupId"], at)
        return spans

    @cached_property
    def coordinators(self) -> set[str]:
        """Agents that ever coordinated a Mission."""
        out = {
            e["payload"]["mission"]["coordinator"]["agentId"] for e in self.of("mission.created")
        }
        out |= {
            e["payload"]["coordinator"]["agentId"]
            for e in self.of("mission.coordinator.assigned")
            if "coordinator" in e["payload"]
        }
        return out

    @cached_property
    def registry(self) -> Any:
        """The signing-key Registry as the whole log leaves it, from a replay of the log (taken
        from the verify-log pass when that ran first, else one fold without re-checking the
        signatures, a small part of the pass). A signature checked against it is
        only as good as the log's own signatures, which ``log_verifies`` checks in the same
        report."""
        return self.view.replayed().registry

    # ------------------------------------------------------------------ side files

    @cached_property
    def event_frames(self) -> list[dict[str, Any]]:
        """The ``EVENT`` frames sessions received for a Group, in the order recorded."""
        return [f for f in self.side["frames"] if f["frameType"] == "EVENT" and f.get("groupId")]

    @cached_property
    def snapshot_bundles(self) -> dict[str, SnapshotBundle]:
        """Snapshot ID → the Group Snapshot and body the bus served (the last one recorded)."""
        return {
            s["snapshotId"]: SnapshotBundle(snapshot=s["snapshot"], body=s["body"])
            for s in self.side["snapshots"]
        }

    def verified_snapshot(
        self, snapshot_id: str, reference: dict[str, Any]
    ) -> list[dict[str, Any]]:
        """``verify_snapshot`` of the served snapshot ``snapshot_id`` against ``reference``
        (which it reads only for ``snapshotHash``) and the log's Registry: its Events, or the
        ``ProtocolError`` it raised. Each snapshot is verified once per reference hash."""
        key = (snapshot_id, reference.get("snapshotHash"))
        if key not in self._snapshots:
            try:
                bundle = self.snapshot_bundles[snapshot_id]
                self._snapshots[key] = verify_snapshot(bundle, reference, self.registry)
            except ProtocolError as exc:
                self._snapshots[key] = exc
        outcome = self._snapshots[key]
        if isinstance(outcome, ProtocolError):
            raise outcome
        return list(outcome)

    def probes(self, name: str) -> list[dict[str, Any]]:
        """The probes named ``name`` (or starting with ``name:``)."""
        return [
            p
            for p in self.side["probes"]
            if p["probe"] == name or p["probe"].startswith(name + ":")
        ]

    def probe_outcome(self, probe: dict[str, Any]) -> tuple[str, str | None]:
        """What the log holds for a probe: ``("accepted", None)``, ``("rejected", code)`` or
        ``("absent", None)`` (matched on actor and Action ID; the last rejection wins)."""
        key = (probe["actor"], probe["actionId"])
        codes = [
            r["code"]
            for r in self.rejections
            if (r["actor_id"], r["action_id"]) == key and r["command_text"] == probe["command"]
        ]
        if codes:
            return "rejected", codes[-1]
        if key in self.view.commands:
            return "accepted", None
        return "absent", None


__all__ = ["Evidence", "micros"]


def signature_ok(ev: Evidence, doc: dict[str, Any], profile: str = "command") -> bool:
    """Whether ``doc`` verifies (six stages of §6.4) against the log's Registry."""
    try:
        verify_parsed(profile_for(profile), doc, ev.registry)
    except ProtocolError:
        return False
    return True
