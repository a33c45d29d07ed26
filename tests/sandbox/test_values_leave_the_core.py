"""What the Sandbox hands a caller is a value (issue 20 §4): changing a step's or a run's report,
an outcome's Event documents or a restart report reaches neither the Authority's state nor any
agent's replica nor the log, because the Authority, every agent, the delivery bus and each
report hold objects of their own."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import Accepted
from mwp_local.authority.pipeline import Outcome
from mwp_local.drivers.sandbox import Sandbox, StepReport

from .values import mutable_parts, pictures, state_parts, vandalize

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


def _sandbox(tmp_path: Path, sample: str = "learn", mode: str = "step") -> Sandbox:
    return Sandbox(
        tmp_path / "s", SAMPLES / f"{sample}.toml", seed=3, mode=mode, worker_files=False
    )


def _owner_change(report: StepReport) -> tuple[dict[str, Any], str] | None:
    """The first Event of ``report`` that names a WorkItem's owner, and the WorkItem."""
    for event in report.events:
        payload = event["payload"]
        if isinstance(payload.get("owner"), dict) and event.get("workItemId"):
            return event, event["workItemId"]
    return None


def test_changing_a_step_report_changes_neither_the_authority_nor_the_agents_nor_the_log(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path)
    reports = [r for r in (sandbox.step() for _ in range(60)) if r is not None]
    found = next((c for r in reports if (c := _owner_change(r)) is not None), None)
    assert found is not None, "no step assigned an owner"
    event, work_item = found
    before = pictures(sandbox)
    owner = sandbox.log.state.work_items[work_item].owner
    assert owner is not None
    agent_id = owner["agentId"]
    # What the issue saw in a notebook: the report's owner changed the live state.
    event["payload"]["owner"]["agentId"] = "urn:missionweaveprotocol:agent:intruder"
    for report in reports:
        vandalize(report)
    assert sandbox.log.state.work_items[work_item].owner == owner
    assert owner["agentId"] == agent_id
    assert pictures(sandbox) == before
    assert sandbox.run().finished  # and the run goes on from the state it had
    sandbox.close()


def test_changing_what_a_run_reports_changes_nothing_it_ran_on(tmp_path: Path) -> None:
    sandbox = _sandbox(tmp_path)
    seen: list[StepReport] = []
    summary = sandbox.run(progress=lambda _n, report: seen.append(report))
    assert summary.finished and seen
    before = pictures(sandbox)
    for report in seen:
        vandalize(report)
    vandalize(summary)
    vandalize(sandbox.history)
    assert pictures(sandbox) == before
    assert sandbox.summary().finished
    sandbox.close()


def test_an_accepted_outcome_hands_out_a_new_copy_of_its_events_on_every_read(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path)
    outcomes: list[Outcome] = []
    submit = sandbox.log.submit

    def keep(data: bytes | str, now: Any) -> Outcome:
        outcome = submit(data, now)
        outcomes.append(outcome)
        return outcome

    sandbox.log.submit = keep  # type: ignore[method-assign]
    for _ in range(30):
        sandbox.step()
    accepted = [o for o in outcomes if isinstance(o, Accepted) and o.events]
    assert accepted
    before = pictures(sandbox)
    for outcome in accepted:
        first, second = outcome.event_documents, outcome.event_documents
        assert first == second
        assert mutable_parts(first).keys().isdisjoint(mutable_parts(second))
        assert [e["eventId"] for e in first] == [r.event_id for r in outcome.events]
        vandalize(first)
        assert outcome.event_documents == second
    assert pictures(sandbox) == before
    sandbox.close()


@pytest.mark.parametrize(
    ("sample", "mode"),
    [("learn", "step"), ("delivery", "step"), ("learn", "threads"), ("delivery", "threads")],
)
def test_the_authority_every_agent_and_every_report_hold_objects_of_their_own(
    tmp_path: Path, sample: str, mode: str
) -> None:
    """Directly and through the delivery bus, in both modes: no dict or list is in two of them
    (threads mode reports no steps)."""
    sandbox = _sandbox(tmp_path, sample, mode)
    reports: list[StepReport] = []
    assert sandbox.run(progress=lambda _n, report: reports.append(report)).finished
    holders = {
        "the Authority": state_parts(sandbox.log.state),
        **{f"agent {r.name}": state_parts(r.replica) for r in sandbox.runtimes},
    }
    if reports:
        holders["the reports"] = mutable_parts(reports)
    if sandbox.delivery is not None:
        bus = sandbox.delivery.bus
        holders["the bus"] = mutable_parts((bus.online, bus.archive, bus.org_events))
    # an agent that is a member of no Group holds nothing of one (delivery by Membership)
    assert all(v for k, v in holders.items() if not k.startswith("agent "))
    assert sum(1 for k, v in holders.items() if k.startswith("agent ") and v) >= 3
    for (a, parts_a), (b, parts_b) in itertools.combinations(holders.items(), 2):
        shared = parts_a.keys() & parts_b.keys()
        assert not shared, f"{a} and {b} share {[parts_a[k] for k in list(shared)[:2]]}"
    sandbox.close()


def test_changing_a_restart_report_changes_neither_the_restarted_worker_nor_the_authority(
    tmp_path: Path,
) -> None:
    sandbox = _sandbox(tmp_path)
    for _ in range(40):
        sandbox.step()
    report = sandbox.restart_agent("dev", delete_local_file=True)
    before = pictures(sandbox)
    vandalize(report)
    assert pictures(sandbox) == before
    sandbox.close()
