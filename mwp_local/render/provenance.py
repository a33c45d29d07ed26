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
from .html import STYLE
from .svg import STATE_COLOURS, dag_svg

#: Fill colour of each node type (WorkItems are filled by their state instead).
TYPE_COLOURS: Mapping[str, str] = {**STATE_COLOURS, "mission": "#e5d8f0", "artifact": "#ffe9a8"}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProvenanceNode:
    """A Mission, WorkItem or Artifact (named by ``sha256:`` content hash)."""

    node_id: str
    node_type: str
    label: str
    #: The WorkItem's or Mission's state, or ``"artifact"``.
    state: str


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
        state (from the ``work_items`` view or the Authority's state) for its fill colour."""
        nodes: dict[str, ProvenanceNode] = {}
        edges: list[tuple[str, str]] = []
        manifests: dict[str, Mapping[str, Any]] = {}
        evidence: dict[str, list[Mapping[str, Any]]] = {}
        for doc in documents:
            kind, payload = doc["kind"], doc["payload"]
            if kind == "mission.created":
                mid = payload["missionId"]
                nodes[mid] = ProvenanceNode(
                    node_id=mid, node_type="mission", label=_short(mid), state="mission"
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
                    state=(states or {}).get(wid, "open"),
                )
                edges.append((payload["missionId"], wid))
            elif kind == "artifact.published":
                manifest = payload["artifact"]
                digest = manifest["contentHash"]
                manifests[digest] = manifest
                nodes[digest] = ProvenanceNode(
                    node_id=digest, node_type="artifact", label=digest[7:19], state="artifact"
                )
                edges.append((payload["workItemId"], digest))
                edges.extend((source, digest) for source in manifest["sourceArtifactHashes"])
            elif kind == "work.submitted":
                for record in payload.get("evidence", []):
                    for digest in record.get("artifactHashes", []):
                        evidence.setdefault(digest, []).append(record)
        return cls(
            nodes=tuple(nodes.values()),
            edges=tuple(edges),
            manifests=manifests,
            evidence={k: tuple(v) for k, v in evidence.items()},
        )

    def node(self, node_id: str) -> ProvenanceNode:
        """The node ``node_id`` (``KeyError`` if the graph has none)."""
        for node in self.nodes:
            if node.node_id == node_id:
                return node
        raise KeyError(node_id)

    def svg(self, selected: str | None = None) -> str:
        """The graph drawn in layers; every node is a clickable ``<g data-id=…>``."""
        return dag_svg(
            [(n.node_id, n.label, n.state) for n in self.nodes],
            self.edges,
            selected=selected,
            colours=TYPE_COLOURS,
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
    verdict = f'<div class="{"ok" if ok else "no"}">hash check: {escape(message)}</div>'
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
