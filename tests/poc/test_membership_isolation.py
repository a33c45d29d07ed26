"""Delivery by Membership (§8, §13.3, §17.2; MWP-WRK-028), judged from what agents received.

The three-Group proof of concept (billing, checkout and its child ledger-export) runs in step
and in threads mode; every frame each receiver was handed (``poc/frames.jsonl``) and every
agent's local file (``agents/*.duckdb``) is read back and held against the Memberships folded
here, independently, from the Group log: no agent holds or was handed an Event of a Group it
was never granted a Membership in, nor one after its Membership ended. The same holds without
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

from ..delivery.helpers import SAMPLES, sample

pytestmark = pytest.mark.req("MWP-WRK-028")


def _log_events(directory: Path) -> list[dict[str, Any]]:
    store = DuckDBLogStore(directory / "group.duckdb", read_only=True)
    try:
        return [json.loads(e.document) for e in store.events()]
    finally:
        store.close()


def _owed(events: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(Principal, Group) → the last sequence delivery may hand it, folded from the log."""
    heads: dict[str, int] = {}
    ended: dict[tuple[str, str], int | None] = {}
    for e in events:
        group = e.get("groupId")
        if group is None:
            continue
        heads[group] = max(heads.get(group, 0), int(e["sequence"]))
        if e["kind"] in ("membership.changed", "membership.ended"):
            doc = e["payload"]["membership"]
            key = (doc["member"]["id"], doc["groupId"])
            ended[key] = int(e["sequence"]) if doc["state"] == "ended" else None
    return {k: heads[k[1]] if v is None else v for k, v in ended.items()}


def _agent_files(directory: Path) -> dict[str, list[tuple[str, int]]]:
    """Each agent file's Group Events as (Group, sequence)."""
    out: dict[str, list[tuple[str, int]]] = {}
    for path in sorted((directory / "agents").glob("*.duckdb")):
        con = duckdb.connect(str(path), read_only=True)
        try:
            rows = con.execute(
                "SELECT group_id, sequence FROM local_events WHERE group_id LIKE 'urn:%'"
            ).fetchall()
        finally:
            con.close()
        out[path.stem] = [(str(g), int(s)) for g, s in rows]
    return out


def _principal(events: list[dict[str, Any]], name: str) -> str:
    for e in events:
        doc = (e.get("payload") or {}).get("membership")
        if doc and doc["member"]["id"].rsplit(":", 1)[-1] == name:
            return str(doc["member"]["id"])
    return f"urn:missionweaveprotocol:agent:{name}"


def _leaks(directory: Path) -> tuple[list[Any], list[Any], int, int]:
    events = _log_events(directory)
    owed = _owed(events)
    frames = [
        json.loads(line)
        for line in (directory / "poc" / "frames.jsonl").read_text().splitlines()
        if line
    ]
    got = [f for f in frames if f["frameType"] == "EVENT" and f.get("groupId")]
    frame_leaks = [
        (f["agent"], f["groupId"], f["sequence"])
        for f in got
        if f["sequence"] > owed.get((f["agent"], f["groupId"]), 0)
    ]
    files = _agent_files(directory)
    file_leaks = [
        (name, g, s)
        for name, rows in files.items()
        for g, s in rows
        if s > owed.get((_principal(events, name), g), 0)
    ]
    return frame_leaks, file_leaks, len(got), sum(len(r) for r in files.values())


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
    for replica in replicas:
        held = {g for g, c in replica["cursors"].items() if c and g.startswith("urn:")}
        assert held <= {g for (p, g) in owed if p == replica["agent"]}, replica["agent"]
        assert set(replica["workItems"]) <= {
            e["workItemId"]
            for e in _log_events(directory)
            if e.get("workItemId") and (replica["agent"], e["groupId"]) in owed
        }
    # somebody really was kept out of a Group
    assert any((r["agent"], g) not in owed for r in replicas for g in groups)


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
    """The POC's own isolation check looks at the frames agents were handed."""
    _, results = step_run
    check = next(r for r in results if r.name == "received_only_member_groups")
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
    files = _agent_files(tmp_path / "run")
    leaks = [
        (n, g, s)
        for n, rows in files.items()
        for g, s in rows
        if s > owed.get((_principal(events, n), g), 0)
    ]
    assert leaks == []
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
