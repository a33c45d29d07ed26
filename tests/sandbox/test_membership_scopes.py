"""A Worker already in a Group who takes another WorkItem (§8 just-in-time Membership, §13.3):
its Membership's scopes grow to cover the new WorkItem under the next Membership Epoch, with a
Context Package, so the new work's inputs pass the isolation gate; a Worker never offered a
WorkItem still cannot read it."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mwp_local.agents.worker.work import WorkRequest
from mwp_local.artifacts.manifests import read_artifact
from mwp_local.authority.isolation import artifact_access
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import Scenario, WorkItem
from mwp_local.protocol.errors import ErrorCode, ProtocolError
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.store.blobs import BlobStore

from ..official_schemas import embedded_problems, problems
from .inline import totals

ANA = "urn:missionweaveprotocol:agent:ana"
BOB = "urn:missionweaveprotocol:agent:bob"


def _scenario() -> Scenario:
    """ana fetches and reports, bob sums: ana's second WorkItem (report) reads bob's sum."""
    return totals(
        {"ana": ["mwp.data.fetch@1.0.0", "mwp.data.report@1.0.0"], "bob": ["mwp.data.sum@1.0.0"]},
        [
            WorkItem(id="fetch", goal="Fetch", capability="mwp.data.fetch@1.0.0"),
            WorkItem(id="sum", goal="Sum", capability="mwp.data.sum@1.0.0", depends_on=["fetch"]),
            WorkItem(
                id="report", goal="Report", capability="mwp.data.report@1.0.0", depends_on=["sum"]
            ),
        ],
        seed=3,
    )


def _run(tmp_path: Path, mode: str) -> tuple[Sandbox, list[str]]:
    read: list[str] = []

    def fetch(request: WorkRequest) -> str:
        return "# Orders\n\n12 30 8\n"

    def total(request: WorkRequest) -> str:
        numbers = request.input("fetch").text().split("\n")[2].split()
        return f"# Total\n\n{sum(map(int, numbers))}\n"

    def report(request: WorkRequest) -> str:
        read.append(request.input("sum").text())  # bob's deliverable, through the gate
        return "# Report\n\n" + read[-1]

    sandbox = Sandbox(
        tmp_path / mode,
        _scenario(),
        mode=mode,
        worker_files=False,
        work_functions={
            "mwp.data.fetch": fetch,
            "mwp.data.sum": total,
            "mwp.data.report": report,
        },
    )
    summary = sandbox.run(timeout_s=120) if mode == "threads" else sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}, summary
    return sandbox, read


def _memberships_of(sandbox: Sandbox, agent: str) -> list[dict[str, object]]:
    events = [parse_strict(r.document) for r in sandbox.log.store.events()]
    return [
        e
        for e in events
        if e["kind"] == "membership.changed" and e["payload"]["membership"]["member"]["id"] == agent
    ]


def _item(sandbox: Sandbox, suffix: str) -> str:
    return next(w for w in sandbox.log.state.work_items if w.endswith(":" + suffix))


@pytest.mark.req("MWP-WRK-028")
def test_a_worker_reads_the_dependency_of_its_second_work_item(tmp_path: Path) -> None:
    sandbox, read = _run(tmp_path, "step")
    assert read and read[-1] == "# Total\n\n50\n"
    fetch, report = _item(sandbox, "fetch"), _item(sandbox, "report")
    changes = _memberships_of(sandbox, ANA)
    scopes = [e["payload"]["membership"]["scopes"] for e in changes]  # type: ignore[index]
    epochs = [e["payload"]["membership"]["membershipEpoch"] for e in changes]  # type: ignore[index]
    # fetch was verified before report was offered: the widening drops it (§8 just in time),
    # and ana still reads fetch's deliverable as report's dependency
    assert ["work:" + fetch] in scopes and ["work:" + report] in scopes
    assert epochs == sorted(epochs) and len(set(epochs)) > 1  # the widening is a new epoch
    widened = next(e for e in changes if e["payload"]["membership"]["scopes"] == ["work:" + report])  # type: ignore[index]
    # the official schemas judge the Event, its Membership and its Context Package
    assert problems("event", widened) == []
    assert problems("membership", widened["payload"]["membership"]) == []  # type: ignore[index]
    assert problems("context-package", widened["payload"]["contextPackage"]) == []  # type: ignore[index]
    assert embedded_problems(widened) == []
    package = widened["payload"]["contextPackage"]  # type: ignore[index]
    assert package["workItemId"] == report
    assert widened["payload"]["membership"]["contextPackageId"] == package["contextPackageId"]  # type: ignore[index]
    # every later Command of ana in the Group carried the epoch current when it was accepted
    final = sandbox.log.state.memberships[(sandbox.log.state.work_items[report].group_id, ANA)]
    assert final.epoch == max(epochs)


@pytest.mark.threads
@pytest.mark.req("MWP-WRK-028")
def test_in_threads_mode_too_the_second_work_items_input_is_readable(tmp_path: Path) -> None:
    _, read = _run(tmp_path, "threads")
    assert read and read[-1] == "# Total\n\n50\n"


@pytest.mark.req("MWP-WRK-028")
def test_a_worker_never_offered_a_work_item_still_cannot_read_it(tmp_path: Path) -> None:
    sandbox, _ = _run(tmp_path, "step")
    state = sandbox.log.state
    report = state.work_items[_item(sandbox, "report")]
    group = report.group_id
    assert state.memberships[(group, BOB)].document["scopes"] == ["work:" + _item(sandbox, "sum")]
    digest = report.submitted_artifacts[0]
    before = (len(list(sandbox.log.store.events())), state.memberships[(group, BOB)].epoch)
    blobs = BlobStore(tmp_path / "step" / "blobs")
    with pytest.raises(ProtocolError) as refused:
        read_artifact(state, blobs, BOB, digest)
    assert refused.value.code is ErrorCode.AUTH_FORBIDDEN
    with pytest.raises(ProtocolError):
        artifact_access(state, BOB, digest)
    after = (len(list(sandbox.log.store.events())), state.memberships[(group, BOB)].epoch)
    assert after == before  # a refused read changes nothing
    assert hashlib.sha256(blobs.get(digest)).hexdigest() == digest.split(":")[1]  # it exists
