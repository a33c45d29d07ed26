"""A Mission author binds a capability to a plain Python function that really does the work:
its bytes become the published, content-addressed deliverable, reviewed and approved like any
other (an exception it raises fails the attempt: tests/sandbox/test_work_exceptions.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mwp_local.agents.worker.execution import WorkRequest
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.blobs import BlobStore

LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


def _analysis(request: WorkRequest) -> str:
    words = request.goal.split()
    return json.dumps(
        {
            "goal": request.goal,
            "words": len(words),
            "item": request.work_item_id,
            "attempt": request.attempt,
        }
    )


def test_a_bound_function_produces_the_published_deliverable(tmp_path: Path) -> None:
    calls: list[WorkRequest] = []

    def analyse(request: WorkRequest) -> str:
        calls.append(request)
        return _analysis(request)

    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": analyse},
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    assert calls, "the function was never called"
    assert len({(c.work_item_id, c.attempt) for c in calls}) == len(calls)  # once per attempt
    store = BlobStore(tmp_path / "s" / "blobs")
    analysed = {c.work_item_id for c in calls}
    artifacts = sandbox.log.state.artifacts.values()
    published = [a for a in artifacts if a["workItemId"] in analysed]
    assert published
    for artifact in published:
        assert artifact["mediaType"] == "text/markdown"  # what the contract requires
        content = json.loads(store.get(artifact["contentHash"]))
        assert content["words"] == len(content["goal"].split())
    # the other capabilities keep their simulated deliverables
    others = [a for a in artifacts if a["workItemId"] not in analysed]
    assert others and all(store.get(a["contentHash"]).startswith(b"# ") for a in others)
    assert all(a["mediaType"] == "text/markdown" for a in others)


def test_a_work_function_must_return_bytes_or_text(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": lambda request: 42},  # type: ignore[dict-item]
    )
    with pytest.raises(TypeError, match="must return the deliverable as bytes or str"):
        sandbox.run()


@pytest.mark.req("MWP-WRK-023", "MWP-WRK-024")
def test_identical_deliverables_of_two_work_items_are_two_manifests_over_one_blob(
    tmp_path: Path,
) -> None:
    # A function that ignores which WorkItem it works on returns the same bytes every time:
    # content addressing names the bytes, so they are one blob; each WorkItem publishes its
    # own manifest (its own Artifact ID) over it, and the Mission is approved.
    def same(request: WorkRequest) -> str:
        return "# Done\n"

    functions = {cap: same for cap in ("mwp.software.analyse", "mwp.software.implement")}
    sandbox = Sandbox(tmp_path / "s", LEARN, worker_files=False, work_functions=functions)
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    state = sandbox.log.state
    digest = "sha256:" + hashlib.sha256(b"# Done\n").hexdigest()
    manifests = state.manifests_of(digest)
    items = {m["workItemId"] for m in manifests}
    assert len(manifests) == len(items) >= 2
    assert len({m["artifactId"] for m in manifests}) == len(manifests)
    store = BlobStore(tmp_path / "s" / "blobs")
    assert [r.sha256 for r in store.refs()].count(digest) == 1
