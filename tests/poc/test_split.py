"""``run_checks_split``: the checks in two processes give exactly what ``run_checks`` gives, and
a child that fails in any way changes nothing but where its checks run; every check declares
truthfully whether it reads the verify-log pass (what decides which process runs it)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from mwp_local.poc import split
from mwp_local.poc.checks import Result, all_checks, run_check, run_checks
from mwp_local.poc.evidence import Evidence
from mwp_local.poc.report import canonical_report
from mwp_local.poc.scenario import ScenarioRun

needs_fork = pytest.mark.skipif(
    not (hasattr(os, "fork") and sys.platform == "linux" and split.usable_cores() >= 2),
    reason="no second core or no fork here",
)


@pytest.fixture(autouse=True)
def _a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever else the machine runs now, the split is tried (the load decides only speed)."""
    monkeypatch.setattr(split, "spare_cores", lambda since=None: 1.0)


def _directory(step_run: tuple[ScenarioRun, list[Result]]) -> Path:
    return step_run[0].directory


def test_each_check_declares_whether_it_reads_the_verify_log_pass(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    ev = Evidence.open(_directory(step_run))
    fresh = dict(vars(ev))  # before any cached property (``registry``, ...) is computed
    try:
        wrong = []
        for name, c in all_checks().items():
            # Each check starts from an Evidence that has derived nothing, so a cached value
            # computed by an earlier check cannot hide what this one reads.
            vars(ev).clear()
            vars(ev).update(fresh)
            derived = ev.view.derived
            derived.verification = derived.replayed = None
            derived.projections.clear()
            run_check(c, ev)
            reads = derived.verification is not None
            if reads != c.replays:
                wrong.append(f"{name}: declares replays={c.replays}, reads it: {reads}")
    finally:
        ev.close()
    assert not wrong
    assert sum(c.replays for c in all_checks().values()) >= 1


@needs_fork
def test_the_split_gives_the_same_report_as_one_process(
    step_run: tuple[ScenarioRun, list[Result]],
) -> None:
    run, results = step_run
    split_results = split.run_checks_split(run.directory)
    assert split_results == results
    assert canonical_report(split_results, run) == canonical_report(results, run)
    only = ("log_verifies", "concurrent_roots")
    assert split.run_checks_split(run.directory, only) == run_checks(run.directory, only)


def _child_does(monkeypatch: pytest.MonkeyPatch, behaviour: Any) -> None:
    """Make the forked child do ``behaviour(write_fd)`` instead of its checks."""

    def child(directory: Path | str, names: tuple[str, ...], write_fd: int) -> None:
        try:
            behaviour(write_fd)
        finally:
            os._exit(0)

    monkeypatch.setattr(split, "_child", child)


def _garbage(write_fd: int) -> None:
    os.write(write_fd, b"not json")


def _too_few(write_fd: int) -> None:
    os.write(write_fd, b"[]")


def _killed(write_fd: int) -> None:
    os.kill(os.getpid(), 9)


@needs_fork
@pytest.mark.parametrize("behaviour", [_garbage, _too_few, _killed], ids=lambda f: f.__name__)
def test_a_failing_child_changes_nothing_but_where_its_checks_run(
    step_run: tuple[ScenarioRun, list[Result]], monkeypatch: pytest.MonkeyPatch, behaviour: Any
) -> None:
    run, results = step_run
    _child_does(monkeypatch, behaviour)
    assert split.run_checks_split(run.directory) == results


@needs_fork
def test_a_child_that_hangs_is_killed_after_the_timeout(
    step_run: tuple[ScenarioRun, list[Result]], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, results = step_run
    read_fd, write_fd = os.pipe()  # the child waits on a pipe nobody writes to

    def hang(_: int) -> None:
        os.read(read_fd, 1)

    _child_does(monkeypatch, hang)
    monkeypatch.setattr(split, "CHILD_TIMEOUT_S", 0.0)
    try:
        assert split.run_checks_split(run.directory) == results
    finally:
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize(("cores", "load"), [(1, 0.0), (2, 1.6), (4, 3.7)])
def test_without_a_core_to_spare_the_checks_run_in_this_process(
    step_run: tuple[ScenarioRun, list[Result]],
    monkeypatch: pytest.MonkeyPatch,
    cores: int,
    load: float,
) -> None:
    run, results = step_run
    monkeypatch.undo()  # the real spare_cores, over these cores and this load
    monkeypatch.setattr(split, "usable_cores", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))

    def no_fork() -> int:
        raise AssertionError("forked without a core to spare")

    monkeypatch.setattr(os, "fork", no_fork)
    assert split.run_checks_split(run.directory) == results


@needs_fork
@pytest.mark.parametrize(("cores", "load", "spare"), [(2, 0.2, 1.0), (2, 1.4, 0.6), (8, 3.0, 5.0)])
def test_a_core_is_spared_when_the_load_leaves_half_a_core(
    monkeypatch: pytest.MonkeyPatch, cores: int, load: float, spare: float
) -> None:
    monkeypatch.undo()
    monkeypatch.setattr(split, "usable_cores", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert split.spare_cores() == pytest.approx(spare)
    assert split.can_split()


@pytest.mark.parametrize(
    ("cores", "busy", "own", "spare"),
    [
        (2, 2.0, 2.0, 1.0),  # only this process ran: the other core is free
        (2, 4.0, 2.0, 0.0),  # another process kept the other core busy the whole window
        (2, 3.0, 2.0, 0.5),  # ... half of it
        (4, 5.0, 2.0, 1.5),
        (2, 1.5, 2.0, 1.0),  # counters that disagree never count as negative work
    ],
)
def test_the_window_since_a_mark_decides_what_is_spare(
    monkeypatch: pytest.MonkeyPatch, cores: int, busy: float, own: float, spare: float
) -> None:
    """Over the window since the mark (2 s here), other processes' work is the machine's CPU
    time less this process's; a minute-long load average (here: hopelessly busy) is not asked."""
    monkeypatch.undo()
    monkeypatch.setattr(split, "usable_cores", lambda: cores)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))
    then = split.CpuMark(wall=100.0, busy=50.0, own=7.0)
    now = split.CpuMark(wall=102.0, busy=50.0 + busy, own=7.0 + own)
    monkeypatch.setattr(split, "cpu_mark", lambda: now)
    assert split.spare_cores(then) == pytest.approx(spare)
    assert split.can_split(then) is (
        spare >= 0.5 and hasattr(os, "fork") and sys.platform == "linux"
    )


def test_without_the_machine_counters_the_load_average_decides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.undo()
    monkeypatch.setattr(split, "usable_cores", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.2, 1.2, 1.2))
    unreadable = split.CpuMark(wall=100.0, busy=None, own=7.0)
    assert split.spare_cores(unreadable) == pytest.approx(0.8)
    assert split.spare_cores(None) == pytest.approx(0.8)


@pytest.mark.skipif(sys.platform != "linux", reason="/proc/stat is Linux's")
def test_a_mark_reads_the_real_counters() -> None:
    first = split.cpu_mark()
    total = sum(i * i for i in range(200_000))  # spend some CPU in this process
    second = split.cpu_mark()
    assert total > 0
    assert first.busy is not None and second.busy is not None
    assert second.busy >= first.busy and second.own >= first.own and second.wall > first.wall
