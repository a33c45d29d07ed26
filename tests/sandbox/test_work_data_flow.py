"""Work functions with real data flow (issue 22.4): a function sees the verified content of its
dependencies' deliverables, may return several Artifacts and Evidence for the acceptance
criteria, and may block (naming the resolution it needs) or fail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mwp_local.agents.worker.work import Block, Deliverable, Evidence, Fail, Result, WorkRequest
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.tables import WorkItemState

LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


def _requirements(request: WorkRequest) -> str:
    return json.dumps({"rows": [1, 2, 3]})


def test_a_function_reads_its_dependency_and_returns_several_artifacts_with_evidence(
    tmp_path: Path,
) -> None:
    seen: list[dict[str, object]] = []

    def implement(request: WorkRequest) -> Result:
        source = request.input("requirements")  # the dependency's deliverable, verified
        rows = source.json()["rows"]
        seen.append({"hash": source.content_hash, "rows": rows})
        return Result(
            deliverables=[
                Deliverable(f"# total {sum(rows)}\n"),
                Deliverable(json.dumps({"total": sum(rows)}), media_type="application/json"),
            ],
            evidence=[Evidence(criteria=request.criteria[:1], method="summed the rows")],
        )

    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={
            "mwp.software.analyse": _requirements,
            "mwp.software.implement": implement,
        },
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    assert seen and seen[0]["rows"] == [1, 2, 3]
    state = sandbox.log.state
    requirements = next(
        w for w in state.work_items.values() if w.work_item_id.endswith("requirements")
    )
    assert seen[0]["hash"] in requirements.submitted_artifacts
    implementation = next(
        w for w in state.work_items.values() if w.work_item_id.endswith(":implementation")
    )
    assert len(implementation.submitted_artifacts) == 2  # two Artifacts, one submission
    media = sorted(
        state.manifest_of(h, work_item_id=implementation.work_item_id)["mediaType"]  # type: ignore[index]
        for h in implementation.submitted_artifacts
    )
    assert media == ["application/json", "text/markdown"]


def test_a_function_that_blocks_names_the_resolution_it_needs(tmp_path: Path) -> None:
    def unsure(request: WorkRequest) -> Block:
        return Block("Which CSV dialect: comma or semicolon?")

    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, work_functions={"mwp.software.analyse": unsure}
    )
    for _ in range(400):
        sandbox.step()
        items = sandbox.log.state.work_items.values()
        blocked = [w for w in items if w.state is WorkItemState.BLOCKED]
        if blocked:
            break
    assert blocked, "the WorkItem never blocked"
    events = [e for e in sandbox.log.store.events() if e.kind == "work.blocked"]
    assert events and "comma or semicolon" in events[-1].payload_json


def test_a_permanent_failure_is_not_retried(tmp_path: Path) -> None:
    calls: list[int] = []

    def broken_source(request: WorkRequest) -> Fail:
        calls.append(request.attempt)
        return Fail("INPUT_INVALID", permanent=True)

    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": broken_source},
    )
    sandbox.run()
    assert calls == [1]  # no retry can help, so none was tried by that Worker


@pytest.mark.parametrize(
    "result, message",
    [
        (Result(deliverables=[]), "no deliverable"),
        (Result(deliverables=["x"], evidence=[Evidence(criteria=["nope"])]), "criteria"),
        (Block("  "), "without saying what it needs"),
    ],
)
def test_a_malformed_result_is_a_clear_error(tmp_path: Path, result: object, message: str) -> None:
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": lambda request: result},  # type: ignore[dict-item]
    )
    with pytest.raises(ValueError, match=message):
        sandbox.run()


def test_the_sandbox_hands_back_what_a_workitem_submitted_verified(tmp_path: Path) -> None:
    """``Sandbox.deliverables`` returns the submitted content, checked here against the log's
    own ``work.submitted`` Event and the raw bytes of each hash (not the code that reads them);
    a blob damaged on disk is refused, never handed back."""
    import hashlib

    import duckdb

    from mwp_local.protocol.errors import ProtocolError

    def implement(request: WorkRequest) -> Result:
        return Result(
            deliverables=[
                Deliverable("# total 6\n"),
                Deliverable('{"total": 6}', media_type="application/json"),
            ]
        )

    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": _requirements, "mwp.software.implement": implement},
    )
    sandbox.run()
    got = sandbox.deliverables("implementation")
    assert sandbox.deliverables("requirements")[0].json() == {"rows": [1, 2, 3]}
    with pytest.raises(KeyError, match="did you mean 'implementation'"):
        sandbox.deliverables("implementaton")
    # damage the blob of one deliverable on disk: refused, naming the Artifact
    blob = next(
        p
        for p in (tmp_path / "s" / "blobs").rglob("*")
        if p.is_file() and p.read_bytes() == b"# total 6\n"
    )
    blob.write_bytes(b"# total 7\n")
    with pytest.raises(ProtocolError) as refused:
        sandbox.deliverables("implementation")
    assert refused.value.code == "PROTOCOL_VIOLATION"
    sandbox.close()
    with duckdb.connect(str(tmp_path / "s" / "group.duckdb"), read_only=True) as con:
        texts = [
            row[0]
            for row in con.execute(
                "SELECT document FROM log_events WHERE kind = 'work.submitted' ORDER BY position"
            ).fetchall()
        ]
    submitted = [
        json.loads(t)["payload"]
        for t in texts
        if json.loads(t)["payload"]["workItemId"].endswith(":implementation")
    ]
    assert submitted, "the run submitted the implementation"
    want = submitted[-1]["submission"]["artifactHashes"]
    assert sorted(a.content_hash for a in got) == sorted(want)
    for artifact in got:
        assert "sha256:" + hashlib.sha256(artifact.content).hexdigest() == artifact.content_hash
    assert sorted(a.text() for a in got) == ["# total 6\n", '{"total": 6}']
