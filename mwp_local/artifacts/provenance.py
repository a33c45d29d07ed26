"""The provenance graph of Artifacts (§13.1, MWP-WRK-024), derived from the Group log only.

Owns the edge set and its two readings: the SQL view ``artifact_edges`` (registered in
``mwp_local.store.views``) and the same edges computed in Python from Event documents, so the
graph can be queried on a DuckDB log, on its Parquet export, or on any ``LogStore``. Edges, each
from the Event that proves it:

* ``derived_from``: Artifact → source Artifact (``artifact.published``, ``sourceArtifactHashes``);
* ``produced_for``: Artifact → the WorkItem it was published for (``artifact.published``);
* ``part_of``: WorkItem → its Mission (``work.authorized``);
* ``child_of``: child Mission → the parent WorkItem it was promoted from (``mission.created``).

Nodes are named by identity only: Artifacts by ``sha256:`` content hash (never a URI), WorkItems
and Missions by ID. ``lineage`` walks ``derived_from`` upstream and ``descendants`` downstream
with the recursive queries ``LINEAGE_SQL`` / ``DESCENDANTS_SQL`` (``docs/artifacts.md`` shows
them). Nothing here writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from ..store.base import LogStore
from ..store.duckdb_log import DuckDBLogStore
from ..store.views import sql, view_sql

__all__ = [
    "ARTIFACT_EDGES_SQL",
    "DESCENDANTS_SQL",
    "EDGE_COLUMNS",
    "LINEAGE_SQL",
    "Edge",
    "LineageNode",
    "descendants",
    "edges",
    "edges_from_events",
    "lineage",
]

#: The ``SELECT`` behind the ``artifact_edges`` view, over ``log_events`` (defined with the other
#: views in ``mwp_local.store.views``).
ARTIFACT_EDGES_SQL = view_sql("artifact_edges")

#: The columns of ``artifact_edges``, in order.
EDGE_COLUMNS = (
    "edge",
    "from_type",
    "from_id",
    "to_type",
    "to_id",
    "mission_id",
    "group_id",
    "work_item_id",
    "event_id",
    "sequence",
    "position",
)

#: Every Artifact an Artifact was derived from, transitively (``$artifact``: its content hash),
#: with the WorkItem and Mission that produced each; depth 0 is the Artifact itself.
LINEAGE_SQL = """
WITH RECURSIVE lineage(artifact_hash, depth) AS (
    SELECT CAST($artifact AS VARCHAR), 0
    UNION
    SELECT e.to_id, l.depth + 1
    FROM artifact_edges e JOIN lineage l ON e.from_id = l.artifact_hash
    WHERE e.edge = 'derived_from' AND l.depth < 10000
)
SELECT l.artifact_hash, min(l.depth) AS depth, p.work_item_id, p.mission_id, p.group_id
FROM lineage l
JOIN artifact_edges p ON p.edge = 'produced_for' AND p.from_id = l.artifact_hash
GROUP BY l.artifact_hash, p.work_item_id, p.mission_id, p.group_id
ORDER BY depth, l.artifact_hash
""".strip()

#: Every Artifact derived from an Artifact, transitively; depth 0 is the Artifact itself.
DESCENDANTS_SQL = """
WITH RECURSIVE descendants(artifact_hash, depth) AS (
    SELECT CAST($artifact AS VARCHAR), 0
    UNION
    SELECT e.from_id, d.depth + 1
    FROM artifact_edges e JOIN descendants d ON e.to_id = d.artifact_hash
    WHERE e.edge = 'derived_from' AND d.depth < 10000
)
SELECT d.artifact_hash, min(d.depth) AS depth, p.work_item_id, p.mission_id, p.group_id
FROM descendants d
JOIN artifact_edges p ON p.edge = 'produced_for' AND p.from_id = d.artifact_hash
GROUP BY d.artifact_hash, p.work_item_id, p.mission_id, p.group_id
ORDER BY depth, d.artifact_hash
""".strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """One row of ``artifact_edges``."""

    edge: str
    from_type: str
    from_id: str
    to_type: str
    to_id: str
    mission_id: str
    group_id: str
    work_item_id: str | None
    event_id: str
    sequence: int
    position: int

    def sort_key(self) -> tuple[int, str, str]:
        """Log order, then edge kind and target (how both readings are ordered)."""
        return (self.position, self.edge, self.to_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class LineageNode:
    """An Artifact reached from the start of a lineage walk, at its shortest distance."""

    artifact_hash: str
    depth: int
    work_item_id: str
    mission_id: str
    group_id: str


def _event_edges(position: int, doc: Mapping[str, Any]) -> list[Edge]:
    kind, payload = doc["kind"], doc["payload"]
    common = {
        "group_id": doc.get("groupId"),
        "event_id": doc["eventId"],
        "sequence": doc.get("sequence"),
        "position": position,
    }
    out: list[Edge] = []
    if kind == "artifact.published":
        manifest = payload["artifact"]
        mine = {
            "from_type": "artifact",
            "from_id": manifest["contentHash"],
            "mission_id": payload["missionId"],
            "work_item_id": payload["workItemId"],
            **common,
        }
        for source in manifest["sourceArtifactHashes"]:
            out.append(Edge(edge="derived_from", to_type="artifact", to_id=source, **mine))
        out.append(
            Edge(edge="produced_for", to_type="work_item", to_id=payload["workItemId"], **mine)
        )
    elif kind == "work.authorized":
        wid = payload["workItem"]["workItemId"]
        out.append(
            Edge(
                edge="part_of",
                from_type="work_item",
                from_id=wid,
                to_type="mission",
                to_id=payload["missionId"],
                mission_id=payload["missionId"],
                work_item_id=wid,
                **common,
            )
        )
    elif kind == "mission.created" and (payload["mission"].get("parent") or {}).get("workItemId"):
        out.append(
            Edge(
                edge="child_of",
                from_type="mission",
                from_id=payload["missionId"],
                to_type="work_item",
                to_id=payload["mission"]["parent"]["workItemId"],
                mission_id=payload["missionId"],
                work_item_id=None,
                **common,
            )
        )
    return out


def edges_from_events(documents: Iterable[tuple[int, Mapping[str, Any]]]) -> list[Edge]:
    """The edges proven by ``(log position, Event document)`` pairs, in log order (pure)."""
    found = [edge for position, doc in documents for edge in _event_edges(position, doc)]
    return sorted(found, key=Edge.sort_key)


_KINDS = ("artifact.published", "work.authorized", "mission.created")


def _has_view(store: LogStore) -> TypeGuard[DuckDBLogStore]:
    """Whether ``store`` is a DuckDB log with the view (a file written by an older version and
    opened read-only may lack it; it is then read Event by Event)."""
    if not isinstance(store, DuckDBLogStore):
        return False
    found = sql(
        store, "SELECT count(*) AS n FROM duckdb_views() WHERE view_name = 'artifact_edges'"
    )
    return bool(found.column("n")[0].as_py())


def edges(store: LogStore) -> list[Edge]:
    """Every edge of the provenance graph of ``store``'s log, in log order.

    A DuckDB log answers from the ``artifact_edges`` view; any other store is read Event by
    Event (same rows, same order).
    """
    if _has_view(store):
        rows = sql(store, "SELECT * FROM artifact_edges").to_pylist()
        return sorted((Edge(**row) for row in rows), key=Edge.sort_key)
    return edges_from_events(
        (entry.position, json.loads(entry.event.document))
        for entry in store.entries()
        if entry.event.kind in _KINDS
    )


def _walk(store: LogStore, artifact_hash: str, query: str, upstream: bool) -> list[LineageNode]:
    if _has_view(store):
        rows = sql(store, query, {"artifact": artifact_hash}).to_pylist()
        return [LineageNode(**row) for row in rows]
    graph = edges(store)
    produced = {e.from_id: e for e in graph if e.edge == "produced_for"}
    links: dict[str, list[str]] = {}
    for e in graph:
        if e.edge == "derived_from":
            a, b = (e.from_id, e.to_id) if upstream else (e.to_id, e.from_id)
            links.setdefault(a, []).append(b)
    depth = {artifact_hash: 0}
    frontier = [artifact_hash]
    while frontier:
        following: list[str] = []
        for node in frontier:
            for nxt in links.get(node, ()):
                if nxt not in depth:
                    depth[nxt] = depth[node] + 1
                    following.append(nxt)
        frontier = following
    return sorted(
        (
            LineageNode(
                artifact_hash=h,
                depth=d,
                work_item_id=produced[h].to_id,
                mission_id=produced[h].mission_id,
                group_id=produced[h].group_id,
            )
            for h, d in depth.items()
            if h in produced
        ),
        key=lambda n: (n.depth, n.artifact_hash),
    )


def lineage(store: LogStore, artifact_hash: str) -> list[LineageNode]:
    """The Artifact (depth 0) and every Artifact it was derived from, transitively, each with
    the WorkItem, Mission and Group that produced it; empty if the log has no such Artifact."""
    return _walk(store, artifact_hash, LINEAGE_SQL, upstream=True)


def descendants(store: LogStore, artifact_hash: str) -> list[LineageNode]:
    """The Artifact (depth 0) and every Artifact derived from it, transitively; empty if the log
    has no such Artifact."""
    return _walk(store, artifact_hash, DESCENDANTS_SQL, upstream=False)
