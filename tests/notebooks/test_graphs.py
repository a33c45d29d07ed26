"""The graph drawings, read back from their SVG with plain geometry (``geometry.py``): arrowheads
on every edge, no edge through a box, labels a person reads, natural order, a legend."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.render.graph_svg import GraphEdge, GraphNode, graph_svg
from mwp_local.render.layout import layered_layout, natural_key
from mwp_local.render.provenance import ProvenanceModel

from .geometry import crossings, parse

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


@pytest.fixture(scope="module")
def learn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict]]:
    """The Events of a finished learn.toml run: three WorkItems, each producing an Artifact
    derived from the one before."""
    sb = Sandbox(tmp_path_factory.mktemp("learn") / "s", SAMPLES / "learn.toml", seed=1)
    sb.run()
    yield [parse_strict(e.document) for e in sb.log.store.events()]
    sb.close()


def test_every_provenance_edge_has_an_arrowhead_at_its_target(learn: list[dict]) -> None:
    boxes, edges, _ = parse(ProvenanceModel.from_events(learn).svg())
    published = [e for e in learn if e["kind"] == "artifact.published"]
    expected = {(e["payload"]["workItemId"], e["payload"]["artifact"]["contentHash"])
                for e in published}  # fmt: skip
    expected |= {(s, e["payload"]["artifact"]["contentHash"]) for e in published
                 for s in e["payload"]["artifact"]["sourceArtifactHashes"]}  # fmt: skip
    expected |= {(e["payload"]["missionId"], e["payload"]["workItem"]["workItemId"])
                 for e in learn if e["kind"] == "work.authorized"}  # fmt: skip
    assert {(e.source, e.target) for e in edges} == expected
    for edge in edges:
        tip = edge.points[-1]
        assert len(edge.arrowhead) == 3 and edge.arrowhead[0] == tip
        target = boxes[edge.target]
        assert tip[0] == pytest.approx(target.x, abs=0.2)  # on the target's left side
        assert target.y <= tip[1] <= target.y + target.height
        assert all(x < tip[0] for x, _ in edge.arrowhead[1:])  # pointing into the box


def test_no_edge_passes_through_a_box_in_a_three_work_item_mission(learn: list[dict]) -> None:
    boxes, edges, _ = parse(ProvenanceModel.from_events(learn).svg())
    assert len([b for b in boxes if b.startswith("urn:mwp-local:work:")]) == 3
    assert any(len(e.points) > 3 for e in edges)  # some edge spans several layers
    assert crossings(boxes, edges) == []


@pytest.mark.parametrize("seed", range(6))
def test_no_edge_passes_through_a_box_in_a_random_dag(seed: int) -> None:
    rng = random.Random(seed)
    names = [f"n-{i}" for i in range(rng.randint(20, 70))]
    pairs = {(names[rng.randrange(i)], names[i]) for i in range(1, len(names))
             for _ in range(rng.randint(1, 3))}  # fmt: skip
    svg = graph_svg(
        [GraphNode(node_id=n, title=n) for n in names],
        [GraphEdge(source=a, target=b) for a, b in sorted(pairs)],
    )
    boxes, edges, _ = parse(svg)
    assert len(boxes) == len(names) and len(edges) == len(pairs)
    assert crossings(boxes, edges) == []
    assert all(len(e.arrowhead) == 3 for e in edges)


def test_nodes_read_as_names_media_types_and_short_hashes_full_hash_on_hover(
    learn: list[dict],
) -> None:
    _, _, texts = parse(ProvenanceModel.from_events(learn).svg())
    for event in learn:
        if event["kind"] == "artifact.published":
            manifest = event["payload"]["artifact"]
            title, subtitle, hover = texts[manifest["contentHash"]]
            assert title == manifest["mediaType"]
            assert subtitle.startswith(manifest["contentHash"][:12]) and len(subtitle) < 20
            assert manifest["contentHash"] in hover
        if event["kind"] == "work.authorized":
            wid = event["payload"]["workItem"]["workItemId"]
            assert texts[wid][0] == wid.rsplit(":", 1)[-1]
            assert wid in texts[wid][-1]


def test_nodes_sort_naturally_service_2_before_service_10() -> None:
    names = [f"service-{i}" for i in (10, 1, 12, 2, 11, 3)]
    layout = layered_layout(["root", *names], [("root", n) for n in names])
    ys = sorted(names, key=lambda n: layout.boxes[n].y)
    assert ys == sorted(names, key=natural_key) == [f"service-{i}" for i in (1, 2, 3, 10, 11, 12)]


def test_the_provenance_graph_has_a_legend_of_what_it_draws(learn: list[dict]) -> None:
    svg = ProvenanceModel.from_events(learn, {}).svg()
    legend = svg.split('<g class="legend">')[1].split("</g>")[0]
    for label in ("Mission", "WorkItem open", "Artifact", "plans / produced", "derived into"):
        assert f">{label}</text>" in legend


def test_an_empty_provenance_graph_says_so() -> None:
    assert "No provenance yet" in ProvenanceModel.from_events([]).svg()


def test_a_large_graph_is_laid_out_without_crossing_boxes() -> None:
    """About the size of scale.toml's provenance graph: 4 Missions, 300 WorkItems, 300
    Artifacts derived along chains."""
    rng = random.Random(21)
    nodes, edges = [], []
    for m in range(4):
        mission = f"mission-{m}"
        nodes.append(GraphNode(node_id=mission, title=mission))
        previous: list[str] = []
        for w in range(75):
            item, artifact = f"m{m}-item-{w}", f"m{m}-artifact-{w}"
            nodes += [
                GraphNode(node_id=item, title=item),
                GraphNode(node_id=artifact, title=artifact),
            ]
            edges += [
                GraphEdge(source=mission, target=item),
                GraphEdge(source=item, target=artifact),
            ]
            if previous:
                edges.append(GraphEdge(source=rng.choice(previous[-5:]), target=artifact))
            previous.append(artifact)
    boxes, drawn, _ = parse(graph_svg(nodes, edges))
    assert len(boxes) == len(nodes) and len(drawn) == len(edges)
    assert crossings(boxes, drawn) == []
