"""The provenance graph as a notebook sees it (§13.1, MWP-WRK-023/024): nodes, edges, and what
clicking a node shows.

``ProvenanceModel.from_events`` reads Event documents only (the log is the truth): Missions,
WorkItems (with their current state), Artifacts (with their signed manifests) and the Evidence
that cites each Artifact. ``inspect_html`` renders one node: an Artifact's manifest, the Evidence
citing it, and the result of re-hashing its content in the blob store (the hash is checked on
every retrieval; a URI is never identity). Pure functions, no widgets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from ..protocol.errors import ProtocolError
from ..store.blobs import BlobStore
from .graph_svg import GraphEdge, GraphNode, LegendEntry, graph_svg
from .html import STYLE
from .layout import natural_key
from .svg import STATE_COLOURS

#: Fill colour of each node type (WorkItems are filled by their state instead).
TYPE_COLOURS: Mapping[str, str] = {**STATE_COLOURS, "mission": "#e5d8f0", "artifact": "#ffe9a8"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenanceNode:
    """A Mission, WorkItem or Artifact (named by ``sha256:`` content hash)."""

    node_id: str
    node_type: str
    #: What the box says: a Mission's or WorkItem's name, an Artifact's media type.
    label: str
    #: The WorkItem's or Mission's state, or ``"artifact"``.
    state: str
    #: The Mission and Group the node belongs to (what the filters select on).
    mission_id: str = ""
    group_id: str = ""
    #: An Artifact's media type ("" for the others).
    media_type: str = ""


#: The edge kinds, as the legend names them (``(from, to)`` pairs by node types).
EDGE_KINDS: Mapping[tuple[str, str], str] = {
    ("mission", "work_item"): "plans",
    ("work_item", "artifact"): "produced",
    ("artifact", "artifact"): "derived into",
    ("work_item", "mission"): "child Mission of",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenanceModel:
    """A frozen picture of the provenance graph at one point of the log."""

    nodes: tuple[ProvenanceNode, ...]
    #: ``(from, to)`` in the direction work flows: Mission → WorkItem → Artifact → derived one.
    edges: tuple[tuple[str, str], ...]
    manifests: Mapping[str, Mapping[str, Any]]
    evidence: Mapping[str, tuple[Mapping[str, Any], ...]]

    @classmethod
    def from_events(
        cls, documents: Iterable[Mapping[str, Any]], states: Mapping[str, str] | None = None
    ) -> ProvenanceModel:
        """Build the graph from Event documents in log order; ``states`` gives each WorkItem's
        (and Mission's) state (from the ``work_items`` view, the Authority's state or a replay)
        for its fill colour; without it a WorkItem reads ``open``."""
        nodes: dict[str, ProvenanceNode] = {}
        edges: list[tuple[str, str]] = []
        manifests: dict[str, Mapping[str, Any]] = {}
        evidence: dict[str, list[Mapping[str, Any]]] = {}
        states = states or {}
        for doc in documents:
            kind, payload = doc["kind"], doc["payload"]
            group = str(doc.get("groupId") or "")
            if kind == "mission.created":
                mid = payload["missionId"]
                nodes[mid] = ProvenanceNode(
                    node_id=mid,
                    node_type="mission",
                    label=_short(mid),
                    state=states.get(mid, "active"),
                    mission_id=mid,
                    group_id=str((payload.get("group") or {}).get("groupId") or group),
                )
                parent = (payload["mission"].get("parent") or {}).get("workItemId")
                if parent:
                    edges.append((parent, mid))
            elif kind == "work.authorized":
                wid = payload["workItem"]["workItemId"]
                nodes[wid] = ProvenanceNode(
                    node_id=wid,
                    node_type="work_item",
                    label=_short(wid),
                    state=states.get(wid, "open"),
                    mission_id=payload["missionId"],
                    group_id=group,
                )
                edges.append((payload["missionId"], wid))
            elif kind == "artifact.published":
                manifest = payload["artifact"]
                digest = manifest["contentHash"]
                manifests[digest] = manifest
                nodes[digest] = ProvenanceNode(
                    node_id=digest,
                    node_type="artifact",
                    label=str(manifest.get("mediaType", "artifact")),
                    state="artifact",
                    mission_id=str(manifest.get("missionId", "")),
                    group_id=str(manifest.get("groupId", group)),
                    media_type=str(manifest.get("mediaType", "")),
                )
                edges.append((payload["workItemId"], digest))
                edges.extend((source, digest) for source in manifest["sourceArtifactHashes"])
            elif kind == "work.submitted":
                for record in payload.get("evidence", []):
                    for digest in record.get("artifactHashes", []):
                        evidence.setdefault(digest, []).append(record)
        return cls(
            nodes=tuple(nodes.values()),
            edges=tuple(dict.fromkeys(edges)),
            manifests=manifests,
            evidence={k: tuple(v) for k, v in evidence.items()},
        )

    def node(self, node_id: str) -> ProvenanceNode:
        """The node ``node_id`` (``KeyError`` if the graph has none)."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def filtered(
        self, *, mission: str | None = None, group: str | None = None, state: str | None = None
    ) -> ProvenanceModel:
        """The part of the graph in ``mission`` and ``group`` (None: every one); with
        ``state``, only the WorkItems in that state, with their Missions and the Artifacts they
        produced."""
        keep = [
            n
            for n in self.nodes
            if (mission is None or n.mission_id == mission)
            and (group is None or n.group_id == group)
        ]
        if state is not None:
            items = {n.node_id for n in keep if n.node_type == "work_item" and n.state == state}
            made = {b for a, b in self.edges if a in items}
            missions = {n.mission_id for n in keep if n.node_id in items}
            keep = [
                n
                for n in keep
                if n.node_id in items
                or (n.node_type == "artifact" and n.node_id in made)
                or (n.node_type == "mission" and n.node_id in missions)
            ]
        ids = {n.node_id for n in keep}
        return ProvenanceModel(
            nodes=tuple(keep),
            edges=tuple((a, b) for a, b in self.edges if a in ids and b in ids),
            manifests={k: v for k, v in self.manifests.items() if k in ids},
            evidence={k: v for k, v in self.evidence.items() if k in ids},
        )

    def choices(self) -> dict[str, list[str]]:
        """What the filters can select: Missions, Groups and WorkItem states present, in
        natural order."""
        return {
            "mission": sorted({n.mission_id for n in self.nodes if n.mission_id}, key=natural_key),
            "group": sorted({n.group_id for n in self.nodes if n.group_id}, key=natural_key),
            "state": sorted(
                {n.state for n in self.nodes if n.node_type == "work_item"}, key=natural_key
            ),
        }

    def svg(self, selected: str | None = None) -> str:
        """The graph drawn in layers, with arrowheads and a legend; every node is a clickable
        ``<g data-id=…>``. An empty graph is a sentence saying so."""
        if not self.nodes:
            return (
                '<div class="mwp-empty"><i>No provenance yet: the graph shows Missions, '
                "WorkItems and Artifacts once they are in the log.</i></div>"
            )
        types = {n.node_id: n.node_type for n in self.nodes}
        drawn = [_graph_node(n, self) for n in self.nodes]
        edges = [
            GraphEdge(
                source=a,
                target=b,
                kind=EDGE_KINDS.get((types[a], types[b]), ""),
                dashed=types[a] == "artifact",
            )
            for a, b in self.edges
            if a in types and b in types
        ]
        states = sorted(
            {n.state for n in self.nodes if n.node_type == "work_item"}, key=natural_key
        )
        legend = [
            LegendEntry(label="Mission", fill=TYPE_COLOURS["mission"]),
            *(LegendEntry(label=f"WorkItem {s}", fill=TYPE_COLOURS.get(s, "#fff")) for s in states),
            LegendEntry(label="Artifact", fill=TYPE_COLOURS["artifact"]),
            LegendEntry(label="plans / produced", arrow=True),
            LegendEntry(label="derived into", arrow=True, dashed=True),
        ]
        return graph_svg(
            drawn, edges, selected=selected, legend=legend, css_class="mwp-provenance-svg"
        )


def _graph_node(node: ProvenanceNode, model: ProvenanceModel) -> GraphNode:
    data = {"state": node.state, "mission": node.mission_id, "group": node.group_id}
    if node.node_type == "artifact":
        manifest = model.manifests.get(node.node_id, {})
        producer = _short(str(manifest.get("workItemId", "")))
        return GraphNode(
            node_id=node.node_id,
            title=node.media_type or "Artifact",
            subtitle=f"{node.node_id[:15]}…",
            fill=TYPE_COLOURS["artifact"],
            kind="artifact",
            tooltip=(
                f"Artifact {node.node_id}\n{node.media_type}, {manifest.get('sizeBytes', '?')} "
                f"bytes, produced by {producer or '?'}"
            ),
            data=data,
        )
    if node.node_type == "mission":
        return GraphNode(
            node_id=node.node_id,
            title=node.label,
            subtitle=f"Mission · {node.state}",
            fill=TYPE_COLOURS["mission"],
            kind="mission",
            tooltip=f"Mission {node.node_id} ({node.state})",
            data=data,
        )
    return GraphNode(
        node_id=node.node_id,
        title=node.label,
        subtitle=node.state.replace("_", " "),
        fill=TYPE_COLOURS.get(node.state, "#ffffff"),
        kind="work_item",
        tooltip=f"WorkItem {node.node_id} ({node.state})",
        data=data,
    )


def _short(identifier: str) -> str:
    return identifier.rsplit(":", 1)[-1]


def hash_check(blobs_dir: Path | str | None, digest: str) -> tuple[bool, str]:
    """Re-hash an Artifact's content in the blob store: ``(ok, what happened)``."""
    if blobs_dir is None:
        return False, "no blob store to check against"
    try:
        ref = BlobStore(blobs_dir).verify(digest, name=digest)
    except ProtocolError as error:
        return False, f"{error.code.value}: {error.explanation}"
    return True, f"content re-hashed: {ref.size} bytes match {digest} (and BLAKE3 {ref.b3[:16]}…)"


def inspect_html(model: ProvenanceModel, node_id: str, blobs_dir: Path | str | None) -> str:
    """What clicking a node shows: an Artifact's manifest, Evidence and hash check, or a
    WorkItem's/Mission's identity, state and neighbours."""
    node = model.node(node_id)
    if node.node_type != "artifact":
        near = [b for a, b in model.edges if a == node_id] + [
            a for a, b in model.edges if b == node_id
        ]
        items = "".join(f"<li><code>{escape(n)}</code></li>" for n in near)
        return (
            f'{STYLE}<div class="mwp mwp-inspect"><b>{escape(node.node_type)}</b> '
            f"<code>{escape(node_id)}</code> state <b>{escape(node.state)}</b>"
            f"<div>linked to:</div><ul>{items}</ul></div>"
        )
    ok, message = hash_check(blobs_dir, node_id)
    badge = '<span class="ok">✔ verified</span>' if ok else '<span class="no">✘ refused</span>'
    verdict = f"<div>{badge} hash check: {escape(message)}</div>"
    manifest = escape(json.dumps(model.manifests[node_id], indent=1))
    records = model.evidence.get(node_id, ())
    rows = "".join(
        f"<tr><td>{escape(str(r.get('type')))}</td><td>{escape(', '.join(r['criterionIds']))}"
        f"</td><td>{escape(str(r.get('method')))}</td><td>{escape(str(r.get('result')))}</td>"
        f"<td>{escape(_short(str(r.get('generatedBy', {}).get('id'))))}</td></tr>"
        for r in records
    )
    evidence = (
        "<table><tr><th>Evidence type</th><th>criteria</th><th>method</th><th>result</th>"
        f"<th>by</th></tr>{rows}</table>"
        if records
        else "<div><i>no Evidence cites it yet</i></div>"
    )
    return (
        f'{STYLE}<div class="mwp mwp-inspect"><b>Artifact</b> <code>{escape(node_id)}</code>'
        f"{verdict}<div><b>Evidence</b></div>{evidence}"
        f"<div><b>signed manifest</b></div><pre>{manifest}</pre></div>"
    )
