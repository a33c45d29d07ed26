"""Your own agents (issue 22.3): subclasses of the built-in policies whose hooks make one's own
decisions run under the same Authority, which refuses them like anyone else when they break a
rule; a policy the driver cannot serve is reported at once, before anything is written."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from mwp_local.agents.base import Intent, View
from mwp_local.agents.coordinator.core import CoordinatorPolicy
from mwp_local.agents.coordinator.offers import Candidate
from mwp_local.agents.specs import DEFAULT_WORK_BUDGET, MissionSpec, WorkSpec
from mwp_local.agents.worker.admission import Admission
from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.authority.model import WorkItemRecord
from mwp_local.drivers.mission_file import parse as parse_mission_file
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.tables import WorkItemState

LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


class RubberStamp(CoordinatorPolicy):
    """A careless strategy: verify work as soon as it starts, before any submission or review."""

    def decide(self, view: View, now_us: int) -> list[Intent]:
        out = super().decide(view, now_us)
        for item in view.state.work_items.values():
            if item.state is WorkItemState.ACTIVE:
                out.append(
                    Intent(
                        kind="work.accept_result",
                        group=item.group_id,
                        why="looks fine to me",
                        payload={"workItemId": item.work_item_id, "reviewEvidence": []},
                    )
                )
        return out


@pytest.mark.req("MWP-WRK-040")
def test_a_custom_coordinator_that_verifies_unreviewed_work_is_refused(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        policies={"coordinator": RubberStamp},
        stall_after="2h",
    )
    for _ in range(600):
        sandbox.step()
        refused = [r for r in sandbox.log.store.rejections() if r.kind == "work.accept_result"]
        if refused:
            break
    assert refused, "the Authority accepted unreviewed work"
    assert refused[0].code == "INVALID_STATE_TRANSITION"  # §10.2: only submitted work
    items = sandbox.log.state.work_items.values()
    assert not any(w.state is WorkItemState.VERIFIED for w in items)  # nothing was verified
    assert not [e for e in sandbox.log.store.events() if e.kind == "work.result.accepted"]


class SkipsReview(CoordinatorPolicy):
    """A careless review hook: accept every submitted result at once, with no §13.2 review."""

    def review(
        self,
        view: View,
        item: WorkItemRecord,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> Intent | None:
        return Intent(
            kind="work.accept_result",
            group=item.group_id,
            why="submitted, so it must be fine",
            payload={"workItemId": item.work_item_id, "reviewEvidence": []},
        )


@pytest.mark.req("MWP-WRK-025")
def test_a_custom_review_that_accepts_submitted_work_unreviewed_is_refused(
    tmp_path: Path,
) -> None:
    """The case a careless prototyper hits: the work *is* submitted, the review is skipped."""
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        policies={"coordinator": SkipsReview},
        stall_after="2h",
    )
    refused: list[Any] = []
    for _ in range(600):
        sandbox.step()
        refused = [r for r in sandbox.log.store.rejections() if r.kind == "work.accept_result"]
        if refused:
            break
    assert refused, "the Authority accepted a submitted result with no review"
    assert refused[0].code == "INVALID_COMMAND"  # §13.2: the review must have run and passed
    items = sandbox.log.state.work_items.values()
    assert any(w.state is WorkItemState.SUBMITTED for w in items)
    assert not any(w.state is WorkItemState.VERIFIED for w in items)
    assert not [e for e in sandbox.log.store.events() if e.kind == "work.result.accepted"]


class Picky(WorkerPolicy):
    """A Worker that declines implementation work and says why."""

    def admit(self, view: View, item: WorkItemRecord, now_us: int) -> Admission:
        if item.work_item_id.endswith(":implementation"):
            return Admission.decline("other", "I only analyse")
        return super().admit(view, item, now_us)


class Reverse(CoordinatorPolicy):
    """Offers to the last-ranked Worker first."""

    calls: ClassVar[list[str]] = []

    def rank(
        self, view: View, item: WorkItemRecord, candidates: list[Candidate], now_us: int
    ) -> list[Candidate]:
        Reverse.calls.append(item.work_item_id)
        return list(reversed(candidates))


def test_hooks_decide_and_the_mission_still_reaches_approval(tmp_path: Path) -> None:
    Reverse.calls.clear()
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        policies={"ana": Picky, "coordinator": Reverse},
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    state = sandbox.log.state
    implementation = next(
        w for w in state.work_items.values() if w.work_item_id.endswith(":implementation")
    )
    assert implementation.owner is not None and "ana" not in str(implementation.owner)
    assert Reverse.calls  # the ranking hook decided the offers


class NotAPolicy:
    def decide(self, view: Any, now_us: int) -> list[Any]:
        return []


class LooksLikeAWorker(NotAPolicy):
    """Every Worker hook by name, but no policy the driver can serve (no slots, no lifecycle)."""

    def admit(self, view: Any, item: Any, now_us: int) -> Any: ...

    def blocks(self, view: Any, item: Any, now_us: int) -> Any: ...

    def work(self, request: Any) -> Any: ...

    def progress(self, slot: Any, report: Any, now_us: int) -> Any: ...


@pytest.mark.parametrize(
    "policies, message",
    [
        ({"coordinater": RubberStamp}, "did you mean 'coordinator'"),
        ({"ana": NotAPolicy}, "subclass of WorkerPolicy"),
        ({"ana": NotAPolicy}, r"policies\['ana'\].*it lacks admit, blocks, work, progress"),
        ({"ana": NotAPolicy()}, r"ana works.*it lacks admit, blocks, work, progress"),
        ({"ana": LooksLikeAWorker}, "has the hooks' names but is not a built-in policy"),
        ({"coordinator": Picky}, "subclass of CoordinatorPolicy"),
        ({"coordinator": Picky}, "it lacks rank, plan, discover, review"),
        ({"mission-owner": Picky}, r"mission-owner owns Missions.*subclass of MissionOwnerPolicy"),
        ({"mission-owner": Picky}, "lacks cancel, request_changes, approve, approve_execution"),
    ],
)
def test_a_policy_the_driver_cannot_serve_is_reported_at_once(
    tmp_path: Path, policies: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        Sandbox(tmp_path / "s", LEARN, worker_files=False, policies=policies)
    assert not (tmp_path / "s").exists()  # nothing written


class FindsDocs(CoordinatorPolicy):
    """Discovers a documentation WorkItem once the requirements are verified (an evolving DAG)."""

    def discover(
        self,
        view: View,
        spec: MissionSpec,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> list[WorkSpec]:
        done = [w for w in items.values() if w.work_item_id.endswith(":requirements")]
        if done and done[0].state is WorkItemState.VERIFIED:
            return [
                WorkSpec(
                    id="docs",
                    goal="Document the export button",
                    capability=("mwp.software.analyse", "1.0.0"),
                    depends_on=("requirements",),
                    # no budget: the mission file's default, {"financial": 10.0}
                )
            ]
        return []


def test_a_discovered_work_item_is_planned_and_delivered(tmp_path: Path) -> None:
    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"coordinator": FindsDocs}
    )
    summary = sandbox.run()
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    docs = [w for w in sandbox.log.state.work_items.values() if w.work_item_id.endswith(":docs")]
    assert len(docs) == 1 and docs[0].state is WorkItemState.VERIFIED
    assert any(d.endswith(":requirements") for d in docs[0].dependencies)
    assert docs[0].contract["budget"] == {"currency": "EUR", "financialLimit": 10.0}


def test_a_hand_built_work_spec_gets_the_mission_file_default_budget() -> None:
    spec = WorkSpec(id="docs", goal="Document", capability=("mwp.software.analyse", "1.0.0"))
    assert spec.budget == dict(DEFAULT_WORK_BUDGET) == {"financial": 10.0}
    from_file = parse_mission_file(
        {
            "agents": [
                {"name": "c", "capabilities": ["mwp.coordination@1.0.0"]},
                {"name": "w", "capabilities": ["mwp.software.analyse@1.0.0"]},
            ],
            "missions": [
                {
                    "id": "m",
                    "objective": "o",
                    "owner": "h",
                    "coordinator": "c",
                    "work": [
                        {"id": "docs", "goal": "g", "capability": "mwp.software.analyse@1.0.0"}
                    ],
                }
            ],
        }
    )
    assert from_file.missions[0].work[0].budget == spec.budget


def test_an_empty_work_spec_budget_is_an_error_naming_it_with_a_fix() -> None:
    with pytest.raises(ValueError, match=r"WorkSpec 'docs': budget is empty.*budget=\{'financial'"):
        WorkSpec(id="docs", goal="Document", capability=("a", "1.0.0"), budget={})
