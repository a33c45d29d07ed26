"""Run the proof-of-concept checks in two processes when the machine has a second core.

One of the 70 checks (``Check.replays``), ``log_verifies``, needs the directory's verify-log
pass: every signature, the hash chain, a replay through the state tables, the projections. That
pass is about half of all checking time. ``run_checks_split`` forks a child process that opens
the directory itself and runs the ``replays`` checks, while this process opens it too and runs
the others (which need at most a plain replay of the log, ~50 ms); the two read the closed log
file read-only and share nothing else. The result is the list ``run_checks`` gives, in the same
order, with the same verdicts and evidence texts: only where each check runs differs.

It falls back to ``run_checks`` in this one process wherever a fork is not a safe or useful
thing to do: no ``os.fork``, not Linux, nothing to split, or no core to spare (one usable core,
or other processes keeping the others busy: less than half a core left beside this one, over
the run that wrote the directory where there was one, else by the last minute's load average).
And when the child fails in any way (exits non-zero, is killed, writes anything but its
results, or has not finished within ``CHILD_TIMEOUT_S`` after this process's own share is
done), this process runs the child's checks itself, so a failed child never becomes a failed
check.

Forking copies this process. Thread pools that exist here (the blob store's) have no threads
in the child; ``artifacts.blob_threads`` replaces its pools after a fork, and the child ends with
``os._exit`` so it never runs this process's exit handlers or flushes its buffered output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .checks import Result, all_checks, run_checks

#: How long the child may still take once this process's own checks are done.
CHILD_TIMEOUT_S = 120.0


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True, slots=True)
class CpuMark:
    """What the machine and this process had spent on the CPU at one moment (see
    ``spare_cores``): ``busy`` is every core's non-idle time from ``/proc/stat`` (None where
    that cannot be read), ``own`` this process's CPU time, all its threads included."""

    wall: float
    busy: float | None
    own: float


def cpu_mark() -> CpuMark:
    """The machine's and this process's CPU time now."""
    times = os.times()
    return CpuMark(wall=time.monotonic(), busy=_machine_busy(), own=times.user + times.system)


def _machine_busy() -> float | None:
    """Seconds every core has spent on anything but idling and waiting for I/O, from the first
    line of ``/proc/stat`` (user, nice, system, irq, softirq, steal), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
        user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
        return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def can_split(since: CpuMark | None = None) -> bool:
    """Whether a forked child can take a share of the checks here, on a core of its own."""
    return hasattr(os, "fork") and sys.platform == "linux" and spare_cores(since) >= 0.5


def spare_cores(since: CpuMark | None = None) -> float:
    """The usable cores other work leaves beside this process. A machine busy with other work
    gains nothing from a second process, which only waits for a core: with two other busy
    processes on two cores, one directory's checks took 0.73 s split, 0.40 s unsplit.

    Given a mark taken a while ago (``mwp-local poc`` takes one as its run starts), the other
    work is what the machine spent on the CPU since, less what this process spent, per second:
    the cores other processes kept busy over that very window. Otherwise (no mark, or no
    ``/proc/stat``) it is the last minute's load average, which counts this process among the
    runnable ones; it also remembers work that ended up to a minute ago (a benchmark's previous
    figure, a test run), so it refuses the split more often than the window does."""
    if since is not None and since.busy is not None:
        now = cpu_mark()
        seconds = now.wall - since.wall
        if now.busy is not None and seconds > 0:
            others = (now.busy - since.busy) - (now.own - since.own)
            return usable_cores() - 1.0 - max(others, 0.0) / seconds  # one core is ours
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    return usable_cores() - max(load, 1.0)


def run_checks_split(
    directory: Path | str, only: tuple[str, ...] | None = None, *, since: CpuMark | None = None
) -> list[Result]:
    """``run_checks(directory, only)``, the ``replays`` checks in a forked child (see the
    module docstring); the same results in the same order. ``since`` is a ``cpu_mark()`` taken
    a while before (see ``spare_cores``)."""
    chosen = [c for name, c in all_checks().items() if only is None or name in only]
    heavy = tuple(c.name for c in chosen if c.replays)
    light = tuple(c.name for c in chosen if not c.replays)
    if not heavy or not light or not can_split(since):
        return run_checks(directory, only)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        _child(directory, heavy, write_fd)
    os.close(write_fd)
    try:
        mine = run_checks(directory, light)
    except BaseException:
        _stop(pid)
        os.close(read_fd)
        raise
    theirs = _collect(pid, read_fd, heavy)
    if theirs is None:
        theirs = run_checks(directory, heavy)
    by_name = {r.name: r for r in (*mine, *theirs)}
    return [by_name[c.name] for c in chosen]


def _child(directory: Path | str, names: tuple[str, ...], write_fd: int) -> None:
    code = 1
    try:
        results = run_checks(directory, names)
        payload = json.dumps([dataclasses.astuple(r) for r in results]).encode("utf-8")
        with os.fdopen(write_fd, "wb") as out:
            out.write(payload)
        code = 0
    finally:
        os._exit(code)


def _collect(pid: int, read_fd: int, asked: tuple[str, ...]) -> list[Result] | None:
    """The child's results for the ``asked`` checks, or None when it did not deliver them."""
    data = bytearray()
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    with os.fdopen(read_fd, "rb", buffering=0) as stream:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([stream], [], [], left)[0]:
                _stop(pid)
                return None
            chunk = stream.read(1 << 16)
            if not chunk:
                break
            data += chunk
    _, status = os.waitpid(pid, 0)
    if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return None
    return _parse(bytes(data), asked)


def _parse(data: bytes, asked: tuple[str, ...]) -> list[Result] | None:
    """The results the child sent, each as the tuple of its ``Result`` fields, if they are
    exactly those of the ``asked`` checks."""
    try:
        results = [Result(*row) for row in json.loads(data)]
    except (ValueError, TypeError):
        return None
    return results if sorted(r.name for r in results) == sorted(asked) else None


def _stop(pid: int) -> None:
    """Kill the child and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


__all__ = ["CHILD_TIMEOUT_S", "can_split", "run_checks_split", "spare_cores", "usable_cores"]
