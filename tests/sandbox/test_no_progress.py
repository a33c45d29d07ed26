"""A run that makes no progress stops and says why (issue 22.2): when no WorkItem or Mission
changes state for a configurable stretch of simulated time, or the step budget runs out, the
run stops and names every unfinished WorkItem with what it waits for and on whom."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from mwp_local.agents.base import Intent, View
from mwp_local.agents.coordinator.core import CoordinatorPolicy
from mwp_local.agents.specs import MissionSpec, WorkSpec
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.authority.model import WorkItemRecord
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.drivers.scenario import Agent, Mission, Scenario, WorkItem
from mwp_local.protocol.tables import WorkItemState

COORDINATION = ["mwp.coordination@1.0.0", "mwp.review@1.0.0"]


def _only_the_coordinator_can(deadline: str = "7d") -> Scenario:
    """A Mission whose second WorkItem only its Coordinator could do (never offered to it)."""
    return Scenario(
        agents=[
            Agent(name="coordinator", capabilities=[*COORDINATION, "mwp.special@1.0.0"]),
            Agent(name="dev", capabilities=["mwp.software.analyse@1.0.0"]),
        ],
        missions=[
            Mission(
                id="stuck",
                objective="Get stuck",
                coordinator="coordinator",
                owner="alice",
                deadline=deadline,
                work=[
                    WorkItem(id="fetch", goal="Fetch", capability="mwp.software.analyse@1.0.0"),
                    WorkItem(
                        id="special",
                        goal="Only the Coordinator could",
                        capability="mwp.special@1.0.0",
                        depends_on=["fetch"],
                    ),
                    WorkItem(
                        id="report",
                        goal="Report",
                        capability="mwp.software.analyse@1.0.0",
                        depends_on=["special"],
                    ),
                ],
            )
        ],
        seed=3,
    )


def test_a_run_in_which_nothing_changes_state_stops_and_names_what_waits(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "s", _only_the_coordinator_can(), worker_files=False)
    summary = sandbox.run()
    stall = summary.stall
    assert not summary.finished and stall is not None
    assert "no WorkItem or Mission changed state for 12h" in stall.reason
    # it stopped there, long before the Mission's deadline failed it, and before 100,000 steps
    assert summary.simulated_seconds < 13 * 3600 and summary.steps < 200
    assert summary.missions == {"urn:mwp-local:mission:stuck": "active"}
    by_item = {w.work_item: w for w in stall.waits}
    assert by_item["special"].state == "open"
    assert "no Agent but the Coordinator offers mwp.special@1.0.0" in by_item["special"].waits_for
    assert by_item["report"].waits_for == "its dependencies 'special' (open) to be verified"
    assert "fetch" not in by_item  # verified: waits for nothing
    text = "\n".join(summary.lines())
    assert "Stopped at" in text and "WorkItem 'special' (open) waits for an offer" in text
    assert "waits for" in summary._repr_html_()


def test_the_quiet_stretch_is_configurable(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", _only_the_coordinator_can(), worker_files=False, stall_after="45m"
    )
    summary = sandbox.run()
    assert summary.stall is not None and "for 45m of simulated time" in summary.stall.reason
    assert summary.simulated_seconds < 2 * 3600


def test_without_a_stall_limit_the_deadline_decides(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", _only_the_coordinator_can("1d"), worker_files=False, stall_after=None
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"failed"}
    assert summary.stall is None


def test_a_spent_step_budget_stops_the_run_and_says_what_waits(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "s", _only_the_coordinator_can(), worker_files=False)
    summary = sandbox.run(max_steps=4)
    assert summary.steps == 4 and summary.stall is not None
    assert "the step budget ran out after 4 steps" in summary.stall.reason
    assert {w.work_item for w in summary.stall.waits} >= {"fetch", "special", "report"}


def test_going_on_after_a_stall_starts_a_new_quiet_window(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", _only_the_coordinator_can(), worker_files=False, stall_after="1h"
    )
    first = sandbox.run()
    assert first.stall is not None
    again = sandbox.run()
    assert again.stall is not None
    assert again.simulated_seconds - first.simulated_seconds == pytest.approx(3600, abs=600)


@pytest.mark.threads
def test_in_threads_mode_a_quiet_run_stops_too(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s",
        _only_the_coordinator_can(),
        mode="threads",
        worker_files=False,
        stall_after="2h",
    )
    summary = sandbox.run(timeout_s=60, scale=7200)
    assert summary.stall is not None and "for 2h" in summary.stall.reason
    assert any(w.work_item == "special" for w in summary.stall.waits)


LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


class Lazy(WorkerPolicy):
    """A Worker of one's own that never acts: offers wait for it in vain."""

    def decide(self, view: View, now_us: int) -> list[Intent]:
        return []


class NeverAuthorizes(CoordinatorPolicy):
    """A Coordinator that renews its lease and so on, but never authorizes a WorkItem."""

    def decide(self, view: View, now_us: int) -> list[Intent]:
        return [i for i in super().decide(view, now_us) if i.kind != "work.authorize"]


def test_a_worker_policy_that_never_acts_is_named_with_the_offer_waiting_for_it(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "s", LEARN, worker_files=False, policies={"ana": Lazy})
    summary = sandbox.run()
    assert not summary.finished and summary.stall is not None
    (wait,) = [w for w in summary.stall.waits if w.work_item == "requirements"]
    assert wait.state == "offered"
    assert "ana never answered" in wait.waits_for
    assert "its policy (Lazy) has not sent a single Command, though asked to decide" in (
        wait.waits_for
    )
    assert sandbox.steps < 200  # reported when the run saw no progress, not at the deadline


def test_a_coordinator_that_never_authorizes_is_named_with_the_work_it_holds_up(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"coordinator": NeverAuthorizes}
    )
    summary = sandbox.run()
    assert summary.stall is not None
    (wait,) = [w for w in summary.stall.waits if w.work_item == "requirements"]
    assert wait.state == "not planned" and wait.on is not None and wait.on.endswith("coordinator")
    assert re.search(
        r"its policy \(NeverAuthorizes\) was asked to decide \d+ times since \S+ and sent "
        "nothing about it",
        wait.waits_for,
    ), wait.waits_for


def test_a_busy_agent_is_not_called_idle(tmp_path: Path) -> None:
    """The Coordinator that offers work but whose Worker cannot take it is not idle."""
    sandbox = Sandbox(tmp_path / "s", _only_the_coordinator_can(), worker_files=False)
    summary = sandbox.run()
    assert summary.stall is not None
    assert not [w for w in summary.stall.waits if "sent nothing" in w.waits_for]


class FindsTooMuch(CoordinatorPolicy):
    """Discovers a WorkItem whose budget is more than the Mission has: the Authority refuses
    its contract."""

    def discover(
        self,
        view: View,
        spec: MissionSpec,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> list[WorkSpec]:
        done = [w for w in items.values() if w.work_item_id.endswith(":tests")]
        if done and done[0].state is WorkItemState.VERIFIED:
            return [
                WorkSpec(
                    id="docs",
                    goal="Document the export button",
                    capability=("mwp.software.analyse", "1.0.0"),
                    budget={"financial": 1_000_000.0},
                )
            ]
        return []


def test_a_stall_caused_by_a_refused_discovered_contract_names_the_refusal(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"coordinator": FindsTooMuch}
    )
    summary = sandbox.run()
    assert not summary.finished and summary.stall is not None
    refused = [r for r in sandbox.log.store.rejections() if r.kind == "work.authorize"]
    assert refused, "the Authority accepted the contract"
    code, explanation = refused[-1].code, refused[-1].explanation
    (line,) = [r for r in summary.stall.refusals if "work.authorize of 'docs'" in r]
    assert line.startswith("coordinator: ") and f"refused {code}" in line and explanation in line
    assert "Refused since the last change:" in str(summary.stall)
