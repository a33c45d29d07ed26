"""The provenance graph: the ``artifact_edges`` view, recursive lineage and descendants, the same
answers on every store, and provenance that must resolve (MWP-WRK-024)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.artifacts.provenance import (
    DESCENDANTS_SQL,
    EDGE_COLUMNS,
    LINEAGE_SQL,
    descendants,
    edges,
    edges_from_events,
    lineage,
)
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.views import VIEW_DOCS, sql

from .scene import GROUP, MISSION, Scene

W1, W2 = "urn:mwp-local:work:analysis", "urn:mwp-local:work:build"


def _graph(scene: Scene) -> dict[str, str]:
    """A → B → C ← D, and an unrelated E; A and D from W1, the rest from W2."""
    scene.to_active(W1)
    a = scene.publish(W1, b"requirements")["contentHash"]
    d = scene.publish(W1, b"constraints")["contentHash"]
    scene.to_active(W2, agent="worker-b")
    b = scene.publish(W2, b"design", "worker-b", sources=[a])["contentHash"]
    c = scene.publish(W2, b"patch", "worker-b", sources=[b, d])["contentHash"]
    e = scene.publish(W2, b"notes", "worker-b")["contentHash"]
    return {"A": a, "B": b, "C": c, "D": d, "E": e}


def _walk(nodes: list[Any]) -> list[tuple[str, int]]:
    return [(n.artifact_hash, n.depth) for n in nodes]


@pytest.mark.req("MWP-WRK-024")
def test_lineage_walks_every_source_transitively_with_its_work_item_and_mission(
    logged: Scene,
) -> None:
    h = _graph(logged)
    store = logged.w.log.store
    found = lineage(store, h["C"])
    assert _walk(found) == sorted(
        [(h["C"], 0), (h["B"], 1), (h["D"], 1), (h["A"], 2)], key=lambda x: (x[1], x[0])
    )
    by_hash = {n.artifact_hash: n for n in found}
    assert by_hash[h["A"]].work_item_id == W1 and by_hash[h["C"]].work_item_id == W2
    assert {n.mission_id for n in found} == {MISSION} and {n.group_id for n in found} == {GROUP}
    assert h["E"] not in by_hash


@pytest.mark.req("MWP-WRK-024")
def test_descendants_walk_every_derived_artifact(logged: Scene) -> None:
    h = _graph(logged)
    store = logged.w.log.store
    assert _walk(descendants(store, h["A"])) == [(h["A"], 0), (h["B"], 1), (h["C"], 2)]
    assert _walk(descendants(store, h["D"])) == [(h["D"], 0), (h["C"], 1)]
    assert _walk(descendants(store, h["E"])) == [(h["E"], 0)]


@pytest.mark.req("MWP-WRK-024")
def test_an_unknown_artifact_has_no_lineage(logged: Scene) -> None:
    _graph(logged)
    assert lineage(logged.w.log.store, "sha256:" + "4" * 64) == []
    assert descendants(logged.w.log.store, "sha256:" + "4" * 64) == []


@pytest.mark.req("MWP-WRK-024")
def test_the_view_and_the_python_reading_agree(logged: Scene) -> None:
    h = _graph(logged)
    store = logged.w.log.store
    found = edges(store)
    events = [(e.position, json.loads(e.event.document)) for e in store.entries()]
    assert found == edges_from_events(events)
    derived = {(e.from_id, e.to_id) for e in found if e.edge == "derived_from"}
    assert derived == {(h["B"], h["A"]), (h["C"], h["B"]), (h["C"], h["D"])}
    assert {(e.from_id, e.to_id) for e in found if e.edge == "part_of"} == {
        (W1, MISSION),
        (W2, MISSION),
    }
    assert len([e for e in found if e.edge == "produced_for"]) == 5


@pytest.mark.req("MWP-WRK-024")
def test_the_documented_lineage_queries_run_on_the_view(tmp_path: Path) -> None:
    from ..authority.world import LoggedWorld

    store = DuckDBLogStore(tmp_path / "lineage.duckdb")
    scene = Scene(LoggedWorld(store), tmp_path / "blobs")
    h = _graph(scene)
    table = sql(store, "SELECT * FROM artifact_edges ORDER BY position")
    assert tuple(table.column_names) == EDGE_COLUMNS
    rows = sql(store, LINEAGE_SQL, {"artifact": h["C"]}).to_pylist()
    assert {r["artifact_hash"] for r in rows} == {h["A"], h["B"], h["C"], h["D"]}
    rows = sql(store, DESCENDANTS_SQL, {"artifact": h["A"]}).to_pylist()
    assert [r["artifact_hash"] for r in rows] == [h["A"], h["B"], h["C"]]
    example = sql(store, VIEW_DOCS["artifact_edges"].example).to_pylist()
    assert {r["source"]: r["derived"] for r in example} == {h["A"]: 1, h["B"]: 1, h["D"]: 1}
    store.close()


@pytest.mark.req("MWP-WRK-024")
def test_a_manifest_citing_an_unpublished_source_is_refused_and_the_graph_is_unchanged(
    scene: Scene,
) -> None:
    scene.to_active(W1)
    scene.publish(W1, b"requirements")
    before = edges_from_events(enumerate(scene.w.events, start=1))
    manifest = scene.manifest(W1, b"derived", sources=["sha256:" + "5" * 64])
    rejected = scene.refuse(
        "INVALID_COMMAND",
        "worker-a",
        "artifact.publish",
        {**scene.w.lease(W1), "artifact": manifest},
    )
    assert "provenance must resolve" in rejected.error.explanation
    assert edges_from_events(enumerate(scene.w.events, start=1)) == before


def test_a_child_mission_links_to_its_parent_work_item() -> None:
    doc = {
        "kind": "mission.created",
        "eventId": "urn:x:e",
        "groupId": "urn:x:child-group",
        "sequence": 1,
        "payload": {
            "missionId": "urn:x:child",
            "mission": {"parent": {"missionId": "urn:x:parent", "workItemId": "urn:x:w"}},
        },
    }
    (edge,) = edges_from_events([(7, doc)])
    assert (edge.edge, edge.from_id, edge.to_id) == ("child_of", "urn:x:child", "urn:x:w")


ARTIFACTS_DOC = Path(__file__).resolve().parents[2] / "docs" / "artifacts.md"


@pytest.mark.req("MWP-WRK-024")
def test_the_documented_lineage_queries_run(tmp_path: Path) -> None:
    from ..authority.world import LoggedWorld

    text = ARTIFACTS_DOC.read_text()
    section = text[text.index("## Provenance in SQL") :]
    section = section[: section.index("\n## ", 1)]
    queries = [block.split("```", 1)[0] for block in section.split("```sql\n")[1:]]
    assert len(queries) == 2
    with DuckDBLogStore(tmp_path / "readme.duckdb") as store:
        scene = Scene(LoggedWorld(store), tmp_path / "blobs")
        h = _graph(scene)
        up = sql(store, queries[0], {"artifact": h["C"]}).to_pylist()
        assert [(r["artifact_hash"], r["depth"]) for r in up] == [
            (n.artifact_hash, n.depth) for n in lineage(store, h["C"])
        ]
        assert sql(store, queries[1], {"artifact": h["C"]}).to_pylist() == [{"mission_id": MISSION}]
