"""Group commit across threads: Commands decided while another commit is in progress are
committed together in the next transaction, and each is acknowledged only once durable; if a
commit fails, its Commands and those decided on top of it are refused and the state is rolled
back to exactly what the log holds."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from mwp_local.authority import Accepted
from mwp_local.store.base import LogStoreError
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.group_log import replay
from mwp_local.store.projection_rows import projection_rows
from mwp_local.store.records import Batch

from .world import LoggedWorld

THREADS = 6  # seven WorkItems: the example Mission budget allows ten


class GatedStore:
    """A DuckDB store whose first commit waits until ``release`` is set (or fails with
    ``fail``), so other threads decide meanwhile; it counts commits."""

    def __init__(self, path: Path) -> None:
        self.inner = DuckDBLogStore(path)
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.fail: BaseException | None = None
        self.commits: list[int] = []

    def commit(self, batch: Batch) -> None:
        if not self.gate.is_set():
            self.entered.set()
            self.gate.wait(timeout=30)
            self.gate.set()
            if self.fail is not None:
                raise self.fail
        self.commits.append(len(batch.receipts))
        self.inner.commit(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _world(store: Any, count: int) -> tuple[LoggedWorld, list[bytes]]:
    """A World with its Mission, and ``count`` signed ``work.authorize`` Commands to send."""
    world = LoggedWorld(store)
    world.bootstrap()
    world.create_mission()
    commands = [
        world.command(
            "coordinator",
            "work.authorize",
            {"workItemId": f"urn:mwp-local:work:g{n}", "contract": world.contract()},
        )
        for n in range(count)
    ]
    return world, commands


def _ready(tmp_path: Path) -> tuple[LoggedWorld, GatedStore, list[bytes]]:
    store = GatedStore(tmp_path / "group.duckdb")
    world, commands = _world(store, THREADS + 1)
    return world, store, commands


def _submit_all(world: LoggedWorld, store: GatedStore, commands: list[bytes]) -> list[Any]:
    """The first Command's commit is held at the gate until every other Command was decided."""
    results: list[Any] = [None] * len(commands)

    def send(index: int) -> None:
        try:
            results[index] = world.log.submit(commands[index], world.now())
        except BaseException as exc:  # the test inspects it
            results[index] = exc

    decided = threading.Condition()
    count = [0]
    handle = world.log.authority.handle

    def counted(data: bytes | str, now: Any) -> Any:
        outcome = handle(data, now)
        with decided:
            count[0] += 1
            decided.notify_all()
        return outcome

    world.log.authority.handle = counted  # type: ignore[method-assign]
    store.gate.clear()
    first = threading.Thread(target=send, args=(0,))
    first.start()
    assert store.entered.wait(timeout=30)
    others = [threading.Thread(target=send, args=(n,)) for n in range(1, len(commands))]
    for thread in others:
        thread.start()
    with decided:  # every Command decided, the first one's commit still held
        assert decided.wait_for(lambda: count[0] == len(commands), timeout=30)
    store.gate.set()
    for thread in (first, *others):
        thread.join(timeout=30)
    return results


def test_commands_decided_during_a_commit_share_the_next_one(tmp_path: Path) -> None:
    world, store, commands = _ready(tmp_path)
    before = len(store.commits)
    results = _submit_all(world, store, commands)
    assert all(isinstance(r, Accepted) for r in results), results
    assert store.commits[before:] == [1, THREADS]  # one held commit, then one for the rest
    stored = {e.work_item_id for e in store.inner.events() if e.kind == "work.authorized"}
    assert stored == {f"urn:mwp-local:work:g{n}" for n in range(THREADS + 1)}
    assert world.log.state.undo_mark() == 0  # nothing left to undo once all is durable


def test_a_failed_commit_refuses_what_was_decided_on_top_and_rolls_back(tmp_path: Path) -> None:
    world, store, commands = _ready(tmp_path)
    store.fail = OSError("disk full")
    results = _submit_all(world, store, commands)
    assert isinstance(results[0], OSError)
    for later in results[1:]:
        assert isinstance(later, LogStoreError) and "decided on top" in str(later)
    state = world.log.state
    clean = replay(world.org, store.inner)
    assert not any(w.startswith("urn:mwp-local:work:g") for w in state.work_items)
    assert projection_rows(state) == projection_rows(clean)
    assert state.receipts.keys() == clean.receipts.keys()
    again = world.log.submit(commands[1], world.now())  # the log goes on
    assert isinstance(again, Accepted)


@pytest.mark.threads
@pytest.mark.parametrize("threads", [8])
def test_many_threads_each_get_their_own_durable_outcome(tmp_path: Path, threads: int) -> None:
    store = DuckDBLogStore(tmp_path / "group.duckdb")
    world, commands = _world(store, threads)
    outcomes: dict[int, Any] = {}

    def run(offset: int) -> None:
        for index in range(offset, len(commands), threads):
            outcomes[index] = world.log.submit(commands[index], world.now())
            # acknowledged means durable: its receipt is already in the file
            action = outcomes[index].receipt.action_id
            assert any(r.action_id == action for r in store.receipts())

    pool = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(timeout=60)
    assert len(outcomes) == len(commands)
    assert all(isinstance(o, Accepted) for o in outcomes.values())
    assert projection_rows(replay(world.org, store)) == projection_rows(world.log.state)
