"""Threads mode through the delivery bus (§11.5, §16, §17; MWP-WRK-020/021/022/029/030/031).

Every agent runs in its own thread against a scaled clock, so these tests assert only what must
hold whatever the interleaving and however starved the threads are: the run reaches its end
(a generous real-time bound), the log verifies, every replica equals a clean replay once the bus
has settled, no Cursor passes a gap, each external effect happened once per key, nothing reached
the Group service during an outage, and buffered progress was reconciled before any other
Command. Where a test expects exact offline outcomes, step mode first brings the Mission to a
point from which nothing the threads do before the outage can change them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.worker.execution import WorkRequest
from mwp_local.agents.worker.work import Block
from mwp_local.authority.offline import BOUNDED_OFFLINE
from mwp_local.delivery.config import Window
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict
from mwp_local.protocol.timestamps import parse_timestamp
from mwp_local.store.verify import verify_log

from .helpers import (
    SAMPLES,
    acks_never_pass_a_gap,
    assert_replica_clean,
    effects_once_per_epoch,
    restored_through,
    sample,
    stored_cursors_never_pass_a_gap,
    with_delivery,
)

#: Real seconds a threaded run may take: far beyond what the sample needs (about 12 s at the
#: default scale on an idle machine), so only a hung run fails on time.
pytestmark = pytest.mark.threads

TIMEOUT_S = 600.0
REVERSIBLE = ("none", "reversible")


class Submissions:
    """Records every Command the Group log received, in the order it took them."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.order: list[tuple[dict[str, Any], bool]] = []
        self._lock = threading.Lock()
        inner = sandbox.log.submit

        def submit(data: bytes | str, now: Any) -> Any:
            with self._lock:  # the log takes them one at a time; keep that order
                outcome = inner(data, now)
                self.order.append((parse_strict(data), outcome.ok))
                return outcome

        sandbox.log.submit = submit  # type: ignore[method-assign]

    def after(self, until_us: int) -> Iterator[tuple[dict[str, Any], bool]]:
        """The Commands issued at or after ``until_us``, in submission order."""
        for command, ok in self.order:
            if parse_timestamp(command["issuedAt"]).epoch_micros >= until_us:
                yield command, ok


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _us(text: str) -> int:
    return parse_timestamp(text).epoch_micros


def _check_run(sandbox: Sandbox) -> None:
    """What a finished run through the bus must show, whatever the interleaving."""
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.settle_delivery()
    assert sandbox.delivery is not None
    acks_never_pass_a_gap(sandbox.delivery.bus, restored_through(sandbox))
    stored_cursors_never_pass_a_gap(sandbox)
    for runtime in sandbox.runtimes:
        assert_replica_clean(sandbox, runtime)
    effects_once_per_epoch(sandbox)


def _check_outage(sandbox: Sandbox, submissions: Submissions, outage: Window) -> None:
    """Nothing reached the Group service during ``outage``; every agent went offline once; what
    was buffered was reversible, inside its grace window, and rebased and submitted after the
    outage before any other Command; what was stopped was irreversible."""
    assert sandbox.delivery is not None and not sandbox.delivery.reconcile
    (record,) = [o for o in sandbox.delivery.outages if o.outage is outage]
    for event in sandbox.log.store.events():
        assert not outage.contains(_us(parse_strict(event.document)["occurredAt"]))
    assert not [c for c in sandbox.external.calls if outage.contains(c.at_us)]
    risk = {
        wid: str(item.contract["sideEffectRisk"])
        for wid, item in sandbox.log.state.work_items.items()
    }
    assert all(risk[s.work_item_id] not in REVERSIBLE for s in record.stopped)
    bindings = []
    for b in record.buffered:
        assert risk[b.work_item_id] in REVERSIBLE
        d = b.binding
        assert _us(d["disconnectedAt"]) <= _us(d["bufferedAt"]) <= _us(d["graceDeadline"])
        bindings.append(d)
    after = list(submissions.after(outage.until_us))
    rebased = [c for c, _ in after if (c.get("extensions") or {}).get(BOUNDED_OFFLINE)]
    assert sorted(_text(c["extensions"][BOUNDED_OFFLINE]["data"]) for c in rebased) == sorted(
        map(_text, bindings)
    )
    assert [c for c, _ in after[: len(rebased)]] == rebased  # reconciled before anything else
    originals = {b.original["actionId"] for b in record.buffered}
    assert not originals & {c["actionId"] for c in rebased}  # new Action IDs


@pytest.mark.req("MWP-WRK-020", "MWP-WRK-029", "MWP-WRK-030", "MWP-WRK-031")
def test_the_delivery_sample_runs_to_its_end_in_threads_mode_through_the_bus(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "delivery.toml", mode="threads")
    submissions = Submissions(sandbox)
    summary = sandbox.run(timeout_s=TIMEOUT_S)
    assert summary.finished, summary.lines()
    assert sandbox.delivery is not None
    stats = sandbox.delivery.bus.stats
    assert stats.frames.get("EVENT", 0) > summary.events  # every agent got Events as frames
    assert stats.disconnects >= 1  # 'ops' lost its connection at 1m (and everyone at 15m)
    _check_run(sandbox)
    _check_outage(sandbox, submissions, sandbox.delivery.config.outages[0])
    sandbox.close()


@pytest.mark.req("MWP-WRK-020", "MWP-WRK-021", "MWP-WRK-022")
def test_an_outage_in_threads_mode_buffers_and_reconciles_as_in_step_mode(
    tmp_path: Path,
) -> None:
    # Step mode brings both Workers through their last actions before the outage (dev's
    # checkpoint and new run of 'sketch' at 09:14:20, ana's fourth-overall lease renewal at
    # 09:14:52, eight simulated seconds before it begins): every later action of theirs falls
    # inside the outage, so however the threads are scheduled they cannot change what is
    # active when it begins. (Stopping at the second renewal, 09:08, left dev's checkpoint and
    # restart 40 simulated seconds, a fifth of a real second, before the outage: under load a
    # thread could slip past it, and 'sketch' was then not buffered.)
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "delivery.toml", mode="threads")
    assert sandbox.delivery is not None
    outage = sandbox.delivery.config.outages[0]
    while sum(r.kind.endswith("execution_lease_renew") for r in sandbox.history) < 4:
        assert sandbox.step() is not None
    assert [r.kind for r in sandbox.history[-3:-1]] == ["work.checkpoint", "work.start"]
    assert sandbox.clock.now_us() < outage.at_us and not sandbox.delivery.outages
    submissions = Submissions(sandbox)
    summary = sandbox.run(timeout_s=TIMEOUT_S)
    assert summary.finished, summary.lines()
    _check_run(sandbox)
    _check_outage(sandbox, submissions, outage)
    (record,) = sandbox.delivery.outages
    assert sorted((b.agent, b.work_item_id.rsplit(":", 1)[-1]) for b in record.buffered) == [
        ("ana", "survey"),
        ("dev", "sketch"),
    ]
    rebased = [
        c
        for c, _ in submissions.after(outage.until_us)
        if (c.get("extensions") or {}).get(BOUNDED_OFFLINE)
    ]
    outcomes = {
        c["actor"]["id"].rsplit(":", 1)[-1]: ok
        for c, ok in submissions.after(outage.until_us)
        if c in rebased
    }
    assert outcomes == {"ana": True, "dev": False}  # 'sketch' overflows its wall-clock budget
    (refused,) = [r for r in sandbox.log.store.rejections() if r.code == "BUDGET_EXCEEDED"]
    assert refused.kind == "work.checkpoint" and str(refused.work_item_id).endswith(":sketch")
    (ana,) = [c["actionId"] for c in rebased if c["actor"]["id"].endswith(":ana")]
    caused = [
        doc["kind"]
        for doc in (parse_strict(e.document) for e in sandbox.log.store.events())
        if (doc.get("cause") or {}).get("id") == ana
    ]
    assert caused == ["ext.missionweaveprotocol.core.resource_usage_recorded", "work.checkpointed"]
    sandbox.close()


def test_a_worker_thread_exception_reaches_the_caller_through_the_bus(tmp_path: Path) -> None:
    # An exception the work function raises fails its attempt (tests/sandbox/
    # test_work_exceptions.py); a malformed result is an API mistake the Worker thread raises.
    def broken(request: WorkRequest) -> Any:
        return Block("   ")

    spec = with_delivery(sample("learn"), duplicate=0.3, reorder=0.3)
    sandbox = Sandbox(
        tmp_path / "s",
        spec,
        mode="threads",
        worker_files=False,
        work_functions={"mwp.software.analyse": broken},
    )
    with pytest.raises(ValueError, match="returned Block without saying what it needs"):
        sandbox.run(timeout_s=TIMEOUT_S)


def test_threads_mode_without_a_delivery_table_delivers_directly(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "learn.toml", mode="threads", worker_files=False)
    assert sandbox.delivery is None
    summary = sandbox.run(timeout_s=TIMEOUT_S)
    assert summary.finished and summary.delivery is None, summary.lines()
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()
