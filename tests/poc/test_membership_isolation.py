"""Delivery by Membership (§8, §13.3, §17.2; MWP-WRK-027/028), judged from what agents received.

The three-Group proof of concept (billing, checkout and its child ledger-export) runs in step
and in threads mode; every frame each receiver was handed (``poc/frames.jsonl``, or recorded at
every ``BusClient``) and every agent's local file (``agents/*.duckdb``) is read back and held
against the Memberships folded here, independently, from the Group log: no agent holds or was
handed an Event of a Group it was never granted a Membership in, nor one from before its
Membership's visibility start, nor one after its Membership ended. What a late joiner holds
from before its start are Events a Context Package addressed to it cites (fetched through the
gate, never framed): counted apart, each checked against those packages. The same holds without
a bus (the direct path) and after a restart rebuilt the file from nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.poc.checks import Result
from mwp_local.poc.scenario import ScenarioRun
from mwp_local.store.duckdb_log import DuckDBLogStore

from ..delivery.helpers import SAMPLES, sample, visible_spans

pytestmark = pytest.mark.req("MWP-WRK-028")


def _log_events(directory: Path) -> list[dict[str, Any]]:
    store = DuckDBLogStore(directory / "group.duckdb", read_only=True)
    try:
        return [json.loads(e.document) for e in store.events()]
    finally:
        store.close()


def _owed(events: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(Principal, Group) → the last sequence delivery may hand it."""
    return {k: v[-1][1] for k, v in visible_spans(events).items()}


def _visible(spans: dict[tuple[str, str], list[tuple[int, int]]], who: str, g: str, s: int) -> bool:
    return any(a <= s <= b for a, b in spans.get((who, g), ()))


def _cited_for(events: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Principal → the Event IDs the Context Packages addressed to it cite (a Membership grant
    naming one, or an offer to it carrying one)."""
    out: dict[str, set[str]] = {}
    for e in events:
        package = (e.get("payload") or {}).get("contextPackage")
        if not isinstance(package, dict):
            continue
        if e["kind"] == "membership.changed":
            to = [e["payload"]["membership"]["member"]["id"]]
        else:
            to = [o["agentId"] for o in e["payload"]["offers"]]
        cited = set(package["sourceEventRange"]["eventIds"])
        for decision in package["decisions"]:
            cited |= set(decision["sourceEventIds"])
        for principal in to:
            out.setdefault(principal, set()).update(cited)
    return out


def _agent_files(directory: Path) -> dict[str, list[tuple[str, int, str]]]:
    """Each agent file's Group Events as (Group, sequence, Event ID)."""
    out: dict[str, list[tuple[str, int, str]]] = {}
    for path in sorted((directory / "agents").glob("*.duckdb")):
        con = duckdb.connect(str(path), read_only=True)
        try:
            rows = con.execute(
                "SELECT group_id, sequence, event_id FROM local_events WHERE group_id LIKE 'urn:%'"
            ).fetchall()
        finally:
            con.close()
        out[path.stem] = [(str(g), int(s), str(i)) for g, s, i in rows]
    return out


def _file_verdict(
    directory: Path, events: list[dict[str, Any]]
) -> tuple[list[tuple[str, str, int]], int, int]:
    """(leaks, Events held from before a start that a package to the agent cites, all rows)."""
    spans, cited = visible_spans(events), _cited_for(events)
    leaks, seeded, rows = [], 0, 0
    for name, held in _agent_files(directory).items():
        who = _principal(events, name)
        for g, s, event_id in held:
            rows += 1
            if _visible(spans, who, g, s):
                continue
            if event_id in cited.get(who, set()):
                seeded += 1
            else:
                leaks.append((name, g, s))
    return leaks, seeded, rows


def _principal(events: list[dict[str, Any]], name: str) -> str:
    for e in events:
        doc = (e.get("payload") or {}).get("membership")
        if doc and doc["member"]["id"].rsplit(":", 1)[-1] == name:
            return str(doc["member"]["id"])
    return f"urn:missionweaveprotocol:agent:{name}"


def _frame_leaks(frames: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[Any]:
    spans = visible_spans(events)
    return [
        (f["agent"], f["groupId"], f["sequence"])
        for f in frames
        if f["frameType"] == "EVENT"
        and f.get("groupId")
        and not _visible(spans, f["agent"], f["groupId"], f["sequence"])
    ]


def _leaks(directory: Path) -> tuple[list[Any], list[Any], int, int]:
    events = _log_events(directory)
    frames = [
        json.loads(line)
        for line in (directory / "poc" / "frames.jsonl").read_text().splitlines()
        if line
    ]
    got = [f for f in frames if f["frameType"] == "EVENT" and f.get("groupId")]
    file_leaks, _, rows = _file_verdict(directory, events)
    return _frame_leaks(got, events), file_leaks, len(got), rows


def _assert_isolated(run: tuple[ScenarioRun, list[Result]]) -> None:
    scenario, _ = run
    directory = scenario.directory
    groups = {e["groupId"] for e in _log_events(directory) if e.get("groupId")}
    assert len(groups) == 3
    frame_leaks, file_leaks, frames, _ = _leaks(directory)
    assert frames  # something was delivered
    assert frame_leaks == []
    assert file_leaks == []  # the POC keeps Workers in memory: its replicas are dumped instead
    owed = _owed(_log_events(directory))
    replicas = [
        json.loads(line)
        for line in (directory / "poc" / "replicas.jsonl").read_text().splitlines()
        if line
    ]
    assert replicas
    events = _log_events(directory)
    spans, cited = visible_spans(events), _cited_for(events)
    authorized = {
        e["payload"]["workItem"]["workItemId"]: e for e in events if e["kind"] == "work.authorized"
    }
    for replica in replicas:
        agent = replica["agent"]
        held = {g for g, c in replica["cursors"].items() if c and g.startswith("urn:")}
        assert held <= {g for (p, g) in owed if p == agent}, agent
        for wid in replica["workItems"]:
            # known from delivery (authorized inside its spans) or from a package to it
            e = authorized[wid]
            assert _visible(spans, agent, e["groupId"], e["sequence"]) or (
                e["eventId"] in cited.get(agent, set())
            ), (agent, wid)
    # somebody really was kept out of a Group, and somebody joined late from its package
    assert any((r["agent"], g) not in owed for r in replicas for g in groups)
    assert any(v[0][0] > 1 for v in spans.values())
    assert sum(n for r in replicas for _, n in r["seeded"]) > 0


def test_step_mode_no_agent_receives_a_group_it_is_not_a_member_of(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    _assert_isolated(step_run)


@pytest.mark.threads
def test_threads_mode_no_agent_receives_a_group_it_is_not_a_member_of(
    threads_run: tuple[ScenarioRun, list[Result]],
) -> None:
    _assert_isolated(threads_run)


def test_poc_checks_what_agents_received(step_run: tuple[ScenarioRun, list[Result]]) -> None:
    """The POC's own isolation checks look at the frames agents were handed and at what their
    replicas know."""
    _, results = step_run
    for name in ("received_only_member_groups", "late_joiners_start_from_their_package"):
        check = next(r for r in results if r.name == name)
        assert check.ok, check.evidence


def test_direct_path_and_restart_deliver_only_member_groups(tmp_path: Path) -> None:
    """Without a bus: a Worker's file holds only its Groups' Events, before and after a restart
    that rebuilt it from nothing; a non-member's replica knows nothing of the foreign Group."""
    raw = sample("poc")
    raw.pop("delivery", None)
    from mwp_local.drivers.mission_file import parse

    sb = Sandbox(tmp_path / "run", parse(raw, name="direct"), seed=7)
    try:
        sb.run(max_steps=2_000)
        assert sb.finished()
        events = [json.loads(e.document) for e in sb.log.store.events()]
        owed = _owed(events)
        for runtime in sb.runtimes:
            mine = {g for (p, g) in owed if p == runtime.member.id}
            assert set(runtime.replica.groups) <= mine, runtime.name
            for group, cursor in runtime.inbox.cursors.items():
                if group.startswith("urn:"):
                    assert cursor == owed[(runtime.member.id, group)], (runtime.name, group)
        worker = next(r for r in sb.runtimes if sb.is_worker(r.name))
        sb.restart_agent(worker.name, delete_local_file=True)
        sb.flush()
        rebuilt = sb.runtime(worker.name)
        assert set(rebuilt.replica.groups) <= {g for (p, g) in owed if p == worker.member.id}
    finally:
        sb.close()
    leaks, seeded, rows = _file_verdict(tmp_path / "run", events)
    assert leaks == []
    assert rows and seeded  # late joiners hold what their packages cite, nothing else earlier
    # and somebody really was kept out of a Group
    principals = {p for (p, _) in owed}
    groups = {g for (_, g) in owed}
    assert any((p, g) not in owed for p in principals for g in groups)


def test_a_coordinator_reads_no_other_groups_artifact_content(tmp_path: Path) -> None:
    """Artifact content by hash is gated like any read (§13.3): the Coordinator of checkout,
    through the very content source its policy reviews with, is refused billing's Artifact
    (``AUTH_FORBIDDEN``, naming no Group) and may read its own Group's."""
    from mwp_local.protocol.errors import ProtocolError

    sb = Sandbox(tmp_path / "run", SAMPLES / "flagship.toml", worker_files=False)
    try:
        assert sb.run(max_steps=5_000).finished
        policy = sb.runtime("coord-checkout").policy
        while not hasattr(policy, "content"):
            policy = policy.inner  # type: ignore[attr-defined]
        content = policy.content
        state = sb.log.state
        checkout = next(g for g in state.groups if g.endswith(":checkout"))
        own = next(m["contentHash"] for m in state.artifacts.values() if m["groupId"] == checkout)
        foreign = next(
            m["contentHash"] for m in state.artifacts.values() if m["groupId"] != checkout
        )
        assert content.get(own)  # its own Group's deliverable
        events_before = sb.log.store.event_count()
        with pytest.raises(ProtocolError) as refused:
            content.get(foreign)
        assert refused.value.code.value == "AUTH_FORBIDDEN"
        assert "billing" not in refused.value.explanation  # nothing said of where it is
        assert sb.log.store.event_count() == events_before
    finally:
        sb.close()


def _bus_run(directory: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The three-Group sample through the delivery bus with Workers' local files, every frame
    recorded where it is received (each ``BusClient``, restarted ones included)."""
    from mwp_local.agents.bus_client import BusClient
    from mwp_local.drivers.mission_file import parse

    received: list[dict[str, Any]] = []
    receive = BusClient.receive

    def recording(
        self: BusClient, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        if frame["frameType"] == "EVENT":
            event = json.loads(event_text) if event_text is not None else frame["event"]
            received.append(
                {
                    "frameType": "EVENT",
                    "agent": self.agent_id,
                    "groupId": event.get("groupId"),
                    "sequence": event.get("sequence"),
                }
            )
        return receive(self, frame, now_us, event_text)

    monkeypatch.setattr(BusClient, "receive", recording)
    sb = Sandbox(directory, parse(sample("poc"), name="bus"), seed=7, mode=mode)
    try:
        summary = sb.run(max_steps=5_000, timeout_s=240.0)
        assert summary.finished, summary
    finally:
        sb.close()
    return received


@pytest.mark.parametrize("mode", ["step", pytest.param("threads", marks=pytest.mark.threads)])
def test_no_file_or_frame_holds_an_event_from_before_a_visibility_start(
    tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the bus, in step and in threads mode: every frame received and every
    ``agents/*.duckdb`` read back; nothing of another Group, nothing from before a visibility
    start but what a Context Package addressed to that agent cites (fetched through the gate,
    never framed)."""
    received = _bus_run(tmp_path / "run", mode, monkeypatch)
    events = _log_events(tmp_path / "run")
    spans = visible_spans(events)
    assert len({e["groupId"] for e in events if e.get("groupId")}) == 3
    late = {k for k, v in spans.items() if v[0][0] > 1}
    assert late  # Workers join late: their visibility starts after the Group's start
    group_frames = [f for f in received if f["groupId"]]
    assert group_frames
    assert _frame_leaks(group_frames, events) == []
    early = [f for f in group_frames if (f["agent"], f["groupId"]) in late]
    assert early  # the late joiners were handed their tail
    leaks, seeded, rows = _file_verdict(tmp_path / "run", events)
    assert rows
    assert leaks == []
    assert seeded > 0  # and started from their packages' cited Events
