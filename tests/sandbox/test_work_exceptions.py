"""An exception raised by a Mission author's code (a work function, or a Worker's ``work`` hook)
fails the attempt the protocol way: the Worker sends ``work.fail`` with a reason and signed
failure Evidence naming the exception, the contract's retry policy decides what follows, and the
run summary lists the failed attempt. It never crashes the run and never passes silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mwp_local.agents.worker.core import WorkerPolicy
from mwp_local.agents.worker.work import WorkRequest
from mwp_local.authority.isolation import artifact_access
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.protocol.jsontext import parse_strict

from ..official_schemas import embedded_problems, problems

LEARN = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


def _failed(sandbox: Sandbox) -> list[dict[str, Any]]:
    """The log's own ``work.failed`` Events (read independently of the summary)."""
    events = (parse_strict(r.document) for r in sandbox.log.store.events())
    return [e for e in events if e["kind"] == "work.failed"]


def _flaky(calls: list[int]) -> Any:
    def analyse(request: WorkRequest) -> str:
        calls.append(request.attempt)
        if request.attempt == 1:
            raise ZeroDivisionError("the author's bug")
        return "# Analysed\n"

    return analyse


def _check_named(sandbox: Sandbox, needle: str) -> list[dict[str, Any]]:
    failed = _failed(sandbox)
    assert failed, "no attempt failed"
    for event in (e for e in failed if "evidence" in e["payload"]):
        assert needle in event["payload"]["reason"]
        (report,) = event["payload"]["evidence"]
        assert report["type"] == "failure_report" and needle in report["details"]["exception"]
        assert problems("event", event) == [] and embedded_problems(event) == []
    summary = sandbox.summary()
    expected = [
        (e["payload"]["workItemId"], e["payload"].get("attempt", 0), e["payload"].get("reason"))
        for e in failed
    ]
    assert list(summary.failed_attempts) == expected
    assert any(needle in line for line in summary.lines())
    return failed


@pytest.mark.req("MWP-WRK-018")
def test_an_exception_fails_the_attempt_and_the_retry_succeeds(tmp_path: Path) -> None:
    calls: list[int] = []
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        worker_files=False,
        work_functions={"mwp.software.analyse": _flaky(calls)},
    )
    summary = sandbox.run()  # no exception reaches the caller
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    assert 1 in calls and 2 in calls
    failed = _check_named(sandbox, "ZeroDivisionError: the author's bug")
    assert all(e["payload"]["reason"].startswith("TRANSIENT: ") for e in failed)
    assert all(not e["payload"]["permanent"] for e in failed)  # the retry policy allowed more


@pytest.mark.threads
@pytest.mark.req("MWP-WRK-018")
def test_in_threads_mode_an_exception_fails_the_attempt_too(tmp_path: Path) -> None:
    calls: list[int] = []
    sandbox = Sandbox(
        tmp_path / "s",
        LEARN,
        mode="threads",
        worker_files=False,
        work_functions={"mwp.software.analyse": _flaky(calls)},
    )
    summary = sandbox.run(timeout_s=120)
    assert summary.finished and set(summary.missions.values()) == {"approved"}
    _check_named(sandbox, "ZeroDivisionError: the author's bug")


def test_a_refused_read_fails_the_attempt_with_its_code_and_is_not_retried(
    tmp_path: Path,
) -> None:
    calls: list[str] = []

    class Nosy(WorkerPolicy):
        def work(self, request: WorkRequest) -> Any:
            calls.append(request.work_item_id)
            if request.contract["requiredCapabilities"][0]["id"] == "mwp.software.analyse":
                # content it was never given: the isolation gate refuses it
                artifact_access(sandbox.log.state, request.worker, "sha256:" + "0" * 64)
            return super().work(request)

    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"ana": Nosy, "dev": Nosy}
    )
    summary = sandbox.run()
    failed = [e for e in _check_named(sandbox, "ProtocolError: ") if "evidence" in e["payload"]]
    assert all(e["payload"]["reason"].startswith("AUTH_FORBIDDEN: ") for e in failed)
    assert all(e["payload"]["permanent"] for e in failed)  # AUTH_FORBIDDEN is not retryable
    assert "approved" not in summary.missions.values()
    assert calls and len(failed) <= len(calls)
    assert json.dumps(summary.failed_attempts)  # plain data, printable


@pytest.mark.req("MWP-WRK-016")
def test_an_exception_in_the_progress_hook_fails_the_attempt(tmp_path: Path) -> None:
    raised: list[str] = []

    class Careless(WorkerPolicy):
        def progress(self, slot: Any, report: dict[str, Any], now_us: int) -> dict[str, Any]:
            if not raised:
                raised.append(slot.work_item_id)
                raise KeyError("currentPhase")
            return super().progress(slot, report, now_us)

    sandbox = Sandbox(
        tmp_path / "s", LEARN, worker_files=False, policies={"ana": Careless, "dev": Careless}
    )
    summary = sandbox.run()
    assert raised, "the progress hook was never called"
    assert summary.finished and set(summary.missions.values()) == {"approved"}  # retried
    failed = _check_named(sandbox, "KeyError: 'currentPhase' (in Careless.progress)")
    assert [e["payload"]["workItemId"] for e in failed] == raised
