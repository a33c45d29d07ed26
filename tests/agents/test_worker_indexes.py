"""The Worker's incremental indexes (the owned WorkItems it holds, the pending offers addressed to
it, the replica's order of WorkItems) agree with a scan of its replica at every step of a run,
also for a Worker restarted mid-run, whose indexes are rebuilt by replaying Events through
``observe``."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.tables import WorkItemState

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
HELD = (WorkItemState.QUEUED, WorkItemState.ACTIVE, WorkItemState.BLOCKED)


def _check(sandbox: Sandbox) -> int:
    """Compare every Worker's indexes with a scan of its replica; return how many Workers."""
    workers = 0
    for runtime in sandbox.runtimes:
        policy = unwrap(runtime.policy)
        if not isinstance(policy, WorkerPolicy):
            continue
        workers += 1
        state, me = runtime.replica, runtime.member.id
        held = {
            i.work_item_id
            for i in state.work_items.values()
            if i.owner is not None and i.owner["agentId"] == me and i.state in HELD
        }
        offers = {
            o.offer_id
            for o in state.offers.values()
            if o.agent_id == me and o.status == "pending" and o.offer_id not in policy.answered
        }
        assert policy.index.held == held
        assert offers <= policy.index.open_offers  # it may still hold answered ones: rechecked
        assert list(policy.index.order) == list(state.work_items)
    return workers


@pytest.mark.parametrize("delete_local_file", [False, True])
def test_the_indexes_match_a_scan_at_every_step_and_after_a_restart(
    tmp_path: Path, delete_local_file: bool
) -> None:
    sandbox = Sandbox(tmp_path / "s", SAMPLES / "retries.toml", mode="step", worker_files=False)
    steps = 0
    while sandbox.step() is not None:
        steps += 1
        assert _check(sandbox)
        if steps == 60:
            name = next(
                r.name for r in sandbox.runtimes if isinstance(unwrap(r.policy), WorkerPolicy)
            )
            sandbox.restart_agent(name, delete_local_file=delete_local_file)
            assert _check(sandbox)
    assert steps > 60
    sandbox.close()
