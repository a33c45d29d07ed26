"""Write-behind (``stage``/``flush``): a staged batch is checked at once and refused whole if
bad; staged batches written together equal the same batches committed one by one; every read
sees them; a crash before the flush leaves the prefix committed before them; a failed flush of
acknowledged batches stops the store instead of letting it drift from what was acknowledged."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mwp_local.store import duckdb_log
from mwp_local.store.base import IntegrityError, LogStoreError, StoreClosedError
from mwp_local.store.chain import verify_chain
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import Batch, ProjectionDelta

from .conftest import StoreMaker, snapshot
from .factory import GROUP_A, GROUP_B, LogFactory, budget_row, mission_row

REPO = Path(__file__).resolve().parents[2]


def _batches(factory: LogFactory) -> list[Batch]:
    """Batches whose projection changes overwrite and delete each other's keys."""
    first = ProjectionDelta(
        upserts={
            "proj_missions": (mission_row("urn:m:1"), mission_row("urn:m:2")),
            "proj_budgets": (budget_row("urn:w:1", "tokens", 1.0),),
        }
    )
    second = ProjectionDelta(
        upserts={"proj_missions": (mission_row("urn:m:1", state="completed", revision=2),)},
        deletes={"proj_missions": (("urn:m:2",),)},
    )
    third = ProjectionDelta(
        upserts={
            "proj_missions": (mission_row("urn:m:2", revision=3),),
            "proj_budgets": (budget_row("urn:w:1", "tokens", 4.0),),
        },
        deletes={"proj_budgets": ()},
    )
    return [
        factory.batch(3, rejections=1, projections=first),
        factory.batch(2, GROUP_B, projections=second),
        Batch(events=(factory.event(None),)),
        factory.batch(1, projections=third),
        factory.batch(0, receipt=False, rejections=2),
    ]


def test_staged_batches_equal_the_same_batches_committed(make_store: StoreMaker) -> None:
    committed, staged = make_store(), make_store()
    for batch in _batches(LogFactory()):
        committed.commit(batch)
    for batch in _batches(LogFactory()):
        staged.stage(batch)
    assert snapshot(staged) == snapshot(committed)  # the reads flush first


def test_a_bad_batch_is_refused_when_staged_and_changes_nothing(tmp_path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        store.stage(factory.batch(2))
        before_head, before_staged = store.chain_head(), store.staged
        gap = LogFactory(sequences={GROUP_A: 7}).batch(1)
        with pytest.raises(IntegrityError, match="sequence"):
            store.stage(gap)
        assert (store.chain_head(), store.staged) == (before_head, before_staged)
        repeated = factory.batch(1)
        again = Batch(events=factory.batch(1).events, receipts=repeated.receipts)
        store.stage(repeated)
        with pytest.raises(IntegrityError, match="receipt"):
            store.stage(again)
        assert store.staged == 2
        assert store.event_count() == 3 and len(list(store.entries())) == 3


def test_reads_and_max_staged_write_the_queue(tmp_path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb", max_staged=3) as store:
        store.stage(factory.batch(1))
        store.stage(factory.batch(1))
        assert store.staged == 2
        assert len(store.rejections()) == 0 and store.staged == 0  # a read flushed
        for _ in range(3):
            store.stage(factory.batch(1))
        assert store.staged_commands == 3  # at the bound: they may wait
        store.stage(factory.batch(1))
        assert store.staged == 0  # a fourth Command would have passed it: all were written
        store.stage(factory.batch(1))
        store.commit(factory.batch(1))  # a commit takes the queue with it
        assert store.staged == 0 and store.event_count() == 8
    with DuckDBLogStore(tmp_path / "log.duckdb", read_only=True) as reopened:
        assert [e.position for e in reopened.entries()] == list(range(1, 9))


def test_max_staged_counts_commands_not_batches(tmp_path: Path) -> None:
    """One group-commit batch holds every Command decided while the previous one was written
    (threads mode): the bound is in Commands, so a crash never loses more than ``max_staged``
    acknowledged ones however they were grouped."""
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb", max_staged=4) as store:
        store.stage(factory.batch(1, rejections=2))  # a receipt and two rejections: 3 Commands
        assert (store.staged, store.staged_commands) == (1, 3)
        store.stage(factory.batch(1, receipt=False))  # timer Events alone count as one
        assert (store.staged, store.staged_commands) == (2, 4)
        store.stage(factory.batch(2))  # 5 > 4: written before stage returns
        assert (store.staged, store.staged_commands, store.event_count()) == (0, 0, 4)
        store.stage(factory.batch(1, rejections=4))  # 5 Commands in one batch: never waits
        assert (store.staged, store.staged_commands) == (0, 0)
        assert len(store.rejections()) == 6


def _gate_transactions(
    store: DuckDBLogStore, monkeypatch: pytest.MonkeyPatch
) -> tuple[threading.Event, threading.Event]:
    """Hold each write of ``store`` inside its transaction: the first Event is set once a
    write waits there, and the write goes on once the second is set."""
    writing, release = threading.Event(), threading.Event()
    real = store._transaction

    def gated(writer: Any, work: Callable[[], None]) -> None:
        writing.set()
        assert release.wait(30)
        real(writer, work)

    monkeypatch.setattr(store, "_transaction", gated)
    return writing, release


def test_a_flush_waits_for_the_flush_another_thread_is_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Worker's file commits right after ``flush()`` returns: ``flush`` must not return while
    another thread is still writing what was staged before it (threads-mode write-behind)."""
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        writing, release = _gate_transactions(store, monkeypatch)
        store.stage(factory.batch(2))
        first = threading.Thread(target=store.flush)
        first.start()
        assert writing.wait(10)  # the first flush took the queue and is writing it
        assert store.staged == 1  # counted until it is written
        returned = threading.Event()

        def second_flush() -> None:
            store.flush()
            returned.set()

        second = threading.Thread(target=second_flush)
        second.start()
        assert not returned.wait(0.2)  # not durable yet: it waits
        release.set()
        first.join(10)
        second.join(10)
        assert returned.is_set()
        monkeypatch.undo()
    with DuckDBLogStore(tmp_path / "log.duckdb", read_only=True) as reopened:
        assert reopened.event_count() == 2


class _WatchedLock:
    """The store's write lock, saying when another thread starts waiting for it."""

    def __init__(self, lock: Any, waiting: threading.Event) -> None:
        self._lock, self._waiting = lock, waiting

    def __enter__(self) -> None:
        self._waiting.set()
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_a_read_during_another_threads_flush_sees_what_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Worker fetching its Context Package's Events reads the log while the Authority's
    thread writes the staged batches holding them: the read must wait for that write, not
    find the queue empty and read the file from before it (threads mode, issue 25 CI)."""
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        writing, release = _gate_transactions(store, monkeypatch)
        store.stage(factory.batch(3))
        flushing = threading.Thread(target=store.flush)
        flushing.start()
        assert writing.wait(30)  # the flush holds the write lock and is inside its transaction
        moved = threading.Event()  # the reader waits for the lock, or has read already
        monkeypatch.setattr(store, "_write_lock", _WatchedLock(store._write_lock, moved))
        seen: list[int] = []

        def read() -> None:
            seen.append(len(list(store.events(GROUP_A))))
            moved.set()

        reader = threading.Thread(target=read)
        reader.start()
        assert moved.wait(30)
        release.set()
        flushing.join(30)
        reader.join(30)
        assert seen == [3]  # what was acknowledged before the read, none of it missing
        monkeypatch.undo()


_CRASH = """
import os, sys
sys.path.insert(0, {repo!r})
from tests.store.factory import LogFactory
from mwp_local.store.duckdb_log import DuckDBLogStore
store = DuckDBLogStore({path!r})
factory = LogFactory()
for _ in range(4):
    store.commit(factory.batch(2))
for _ in range(5):
    store.stage(factory.batch(2))
print(store.staged, flush=True)
os._exit(0)  # a crash: nothing flushed, nothing closed
"""


def test_a_crash_before_the_flush_keeps_the_committed_prefix(tmp_path: Path) -> None:
    path = tmp_path / "log.duckdb"
    done = subprocess.run(
        [sys.executable, "-c", _CRASH.format(repo=str(REPO), path=str(path))],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "5"
    with DuckDBLogStore(path) as store:
        entries = list(store.entries())
        assert [e.position for e in entries] == list(range(1, 9))
        assert verify_chain((e.event.document, e.chain) for e in entries) == []
        assert len(list(store.receipts())) == 4
        store.commit(LogFactory(sequences={GROUP_A: 8}).batch(1))  # and it goes on
        assert store.event_count() == 9


def test_a_failed_flush_of_acknowledged_batches_stops_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.duckdb"
    factory = LogFactory()
    store = DuckDBLogStore(path)
    store.commit(factory.batch(2))
    store.stage(factory.batch(1))
    store.stage(factory.batch(1))

    def broken(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(duckdb_log, "insert_log_rows", broken)
    with pytest.raises(OSError, match="disk full"):
        store.flush()
    monkeypatch.undo()
    for attempt in (
        lambda: store.commit(factory.batch(1)),
        lambda: store.stage(factory.batch(1)),
        lambda: list(store.entries()),
    ):
        with pytest.raises(LogStoreError, match="already acknowledged"):
            attempt()
    store.close()
    with DuckDBLogStore(path, read_only=True) as reopened:
        assert reopened.event_count() == 2  # the file kept the prefix before them


def test_a_failed_single_commit_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        store.commit(factory.batch(2))
        before = snapshot(store)

        def broken(*_: object) -> None:
            raise OSError("disk full")

        monkeypatch.setattr(duckdb_log, "insert_log_rows", broken)
        with pytest.raises(OSError):
            store.commit(LogFactory(sequences={GROUP_A: 2}).batch(1))
        monkeypatch.undo()
        assert snapshot(store) == before
        store.commit(LogFactory(sequences={GROUP_A: 2}).batch(1))  # still usable
        assert store.event_count() == 3


def test_before_write_runs_before_every_write_and_its_failure_fails_it(tmp_path: Path) -> None:
    factory = LogFactory()
    calls: list[int] = []
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        store.before_write = lambda: calls.append(store.event_count())
        store.commit(factory.batch(1))
        store.stage(factory.batch(1))
        assert calls == [1]  # staging writes nothing
        store.rejections()  # a read flushes the queue
        assert calls == [1, 2]
        store.flush()  # nothing staged: nothing written
        assert calls == [1, 2]

        def broken() -> None:
            raise OSError("fsync failed")

        store.before_write = broken
        with pytest.raises(OSError, match="fsync failed"):
            store.commit(factory.batch(1))
        store.before_write = None
        assert store.event_count() == 2  # the commit wrote nothing


def test_a_failed_last_flush_in_close_is_raised_and_the_file_still_closes(tmp_path: Path) -> None:
    """``close`` writes what is staged; when that write fails, the error reaches the caller,
    the head is re-read from the file without a second flush (it once waited forever on the
    cursor lock ``close`` holds), and the file is closed, so it can be opened again."""
    path = tmp_path / "log.duckdb"
    factory = LogFactory()
    store = DuckDBLogStore(path)
    store.commit(factory.batch(2))
    store.stage(factory.batch(1))

    def broken() -> None:
        raise OSError("fsync failed")

    store.before_write = broken
    raised: list[BaseException] = []

    def close() -> None:
        try:
            store.close()
        except OSError as exc:
            raised.append(exc)

    closing = threading.Thread(target=close, daemon=True)
    closing.start()
    closing.join(60)  # a bound on a hang, not a timing: close returns at once when correct
    assert not closing.is_alive(), "close never returned"
    assert [str(e) for e in raised] == ["fsync failed"]
    with pytest.raises(StoreClosedError):
        store.event_count()
    with DuckDBLogStore(path, read_only=True) as reopened:
        assert reopened.event_count() == 2  # the prefix committed before the staged batch


def test_replacing_projections_writes_the_staged_batches_first(tmp_path: Path) -> None:
    factory = LogFactory()
    with DuckDBLogStore(tmp_path / "log.duckdb") as store:
        store.stage(
            factory.batch(
                2, projections=ProjectionDelta(upserts={"proj_missions": (mission_row("urn:m:1"),)})
            )
        )
        store.replace_projections({"proj_missions": [mission_row("urn:m:2")]})
        assert store.staged == 0
        assert store.event_count() == 2
        # the replacement is the last word: the staged row was written before it, not after
        assert [r["mission_id"] for r in store.projection_rows("proj_missions")] == ["urn:m:2"]
    with DuckDBLogStore(tmp_path / "log.duckdb", read_only=True) as reopened:
        assert len(list(reopened.entries())) == 2


def test_abandon_drops_the_staged_tail_as_a_crash_would(tmp_path: Path) -> None:
    factory = LogFactory()
    store = DuckDBLogStore(tmp_path / "log.duckdb")
    store.commit(factory.batch(2))
    store.stage(factory.batch(1, rejections=1))
    store.stage(factory.batch(1, receipt=False))
    assert store.abandon() == 2  # a receipt and a rejection; the timer batch holds no Command
    with pytest.raises(StoreClosedError):
        store.stage(factory.batch(1))
    with DuckDBLogStore(tmp_path / "log.duckdb", read_only=True) as reopened:
        assert reopened.event_count() == 2 and reopened.rejections() == []
