"""Issue acceptance (MWP-WRK-009, 010): a multi-Group run in threads mode with two Workers and
three Groups completes, and while all three Groups have ready work at a Worker, the service it
gives them matches its Scheduler weights.

Set-up: each Worker (two slots) first runs warm-up work while the three Missions' WorkItems
(twelve of ten minutes each) are offered and accepted into its per-Group queues, so that all
three Groups then compete for its slots. Its Scheduler weighs them 3 : 2 : 1 (the Worker's own
policy; the Coordinators cannot change it). Runs last long enough that no lease lapses under
load (start-by and ownership windows of a day, half-hour Execution Leases) and take no
checkpoints, so each dispatch is one whole WorkItem.

Tolerance, stated: summed over both Workers, each Group's service while all three Groups were
ready lies within three WorkItems (30 simulated minutes) of its weighted share of that service,
and the shares keep the order of the weights. The Scheduler's own bound is one dispatch per Group
at each end of the contention window; real threads add jitter to when slots free.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.agents.base import unwrap
from mwp_local.agents.naming import group_id
from mwp_local.agents.scheduler.core import SchedulerConfig
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.authority import AuthorityConfig
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.verify import verify_log

from .inline import CAP, mission_file

pytestmark = pytest.mark.threads

WEIGHTS = {"alpha": 3, "beta": 2, "gamma": 1}
ITEMS = 12
ITEM_US = 600_000_000
DAY_US = 86_400_000_000


def _sandbox(tmp_path: Path) -> Sandbox:
    missions = [{"id": "warmup", "work": [{"id": f"w{n}", "duration": "30m"} for n in range(4)]}]
    missions += [
        {"id": g, "starts_after": "1m", "work": [{"id": f"{g}-{n}"} for n in range(ITEMS)]}
        for g in WEIGHTS
    ]
    spec = mission_file(
        [
            {"name": w, "capabilities": [CAP], "max_concurrency": 2, "behaviour": {"jitter": 0.0}}
            for w in ("w1", "w2")
        ],
        missions,
        coordinator_per_mission=True,
    )
    weights = SchedulerConfig(weights={group_id(g): float(w) for g, w in WEIGHTS.items()})
    options = {
        "queue_capacity": 100,
        "lease_seconds": 1800,
        "setup_us": 3_600_000_000,  # no checkpoints: each dispatch is one whole WorkItem
        "scheduler_config": weights,
    }
    return Sandbox(
        tmp_path / "s",
        spec,
        mode="threads",
        config=AuthorityConfig(start_by_us=DAY_US, ownership_after_checkpoint_us=DAY_US),
        worker_options={"w1": options, "w2": options},
    )


def _contended_service(sandbox: Sandbox) -> dict[str, int]:
    """Service each Group got while all three Groups had ready work, over both Workers."""
    groups = {group_id(g): g for g in WEIGHTS}
    served = dict.fromkeys(WEIGHTS, 0)
    for name in ("w1", "w2"):
        policy = unwrap(sandbox.runtime(name).policy)
        assert isinstance(policy, WorkerPolicy)
        for ready, by_group in policy.service.items():
            if set(groups) <= set(ready):
                for group, service in by_group.items():
                    if group in groups:
                        served[groups[group]] += service
    return served


@pytest.mark.req("MWP-WRK-009", "MWP-WRK-010")
def test_two_workers_share_their_slots_among_three_groups_by_their_weights_in_threads(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path)
    summary = sandbox.run(timeout_s=120, scale=500)
    assert summary.finished, summary.lines()
    assert set(summary.missions.values()) == {"approved"}

    served = _contended_service(sandbox)
    total = sum(served.values())
    assert total >= 10 * ITEM_US  # a real contention window, not a couple of dispatches
    weight_sum = sum(WEIGHTS.values())
    for group, weight in WEIGHTS.items():
        expected = total * weight / weight_sum
        assert abs(served[group] - expected) <= 3 * ITEM_US, (group, served, total)
    shares = [served[g] / total for g in WEIGHTS]
    assert shares == sorted(shares, reverse=True), shares
    assert verify_log(sandbox.log.org, sandbox.log.store).ok
    sandbox.close()
