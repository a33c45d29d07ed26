"""Projection rows written after the commit (``DuckDBLogStore``, the default) against the plain
path that writes them in the commit's own transaction (``defer_projections=False``):

* random sequences of commits, staged batches, flushes, replacements and reads give the same
  projection tables at every read, and the same files once closed;
* a writer that stops as ``kill -9`` would with rows still pending leaves the marker; the next
  writable open of the directory (``GroupLog``) re-renders every projection from its replay, and
  a clean close removes the marker.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.store.base import IntegrityError
from mwp_local.store.duckdb_log import BEHIND_SUFFIX, DuckDBLogStore
from mwp_local.store.group_log import replay
from mwp_local.store.projection_rows import comparable_rows
from mwp_local.store.records import PROJECTION_BY_NAME, Batch, ProjectionDelta
from mwp_local.store.sandbox_dir import LOG_FILE, load_organization, open_directory

from .factory import GROUP_A, GROUP_B, LogFactory, budget_row, mission_row

ROOT = Path(__file__).resolve().parents[2]

_MISSIONS = st.sampled_from([f"urn:m:{i}" for i in range(4)])
_SCOPES = st.sampled_from(["urn:w:1", "urn:w:2", "urn:w:3"])
_DIMENSIONS = st.sampled_from(["tokens", "cost"])
_op = st.one_of(
    st.builds(
        lambda m, r: ("up", "proj_missions", mission_row(m, revision=r)),
        _MISSIONS,
        st.integers(0, 5),
    ),
    st.builds(lambda m: ("del", "proj_missions", (m,)), _MISSIONS),
    st.builds(
        lambda s, d, u: ("up", "proj_budgets", budget_row(s, d, u)),
        _SCOPES,
        _DIMENSIONS,
        st.floats(0, 10),
    ),
    st.builds(lambda s, d: ("del", "proj_budgets", ("work_item", s, d)), _SCOPES, _DIMENSIONS),
)
_step = st.one_of(
    st.tuples(st.just("commit"), st.lists(_op, max_size=5)),
    st.tuples(st.just("stage"), st.lists(_op, max_size=5)),
    st.tuples(st.just("flush"), st.none()),
    st.tuples(st.just("read"), st.sampled_from(sorted(PROJECTION_BY_NAME))),
    st.tuples(st.just("events"), st.none()),
    st.tuples(st.just("replace"), st.lists(_MISSIONS, max_size=3, unique=True)),
)


def _delta(ops: list[tuple[str, str, Any]]) -> ProjectionDelta:
    upserts: dict[str, list[Any]] = {}
    deletes: dict[str, list[Any]] = {}
    for kind, table, value in ops:
        (upserts if kind == "up" else deletes).setdefault(table, []).append(value)
    return ProjectionDelta(
        upserts={t: tuple(v) for t, v in upserts.items()},
        deletes={t: tuple(v) for t, v in deletes.items()},
    )


def _tables(store: DuckDBLogStore) -> dict[str, list[dict[str, Any]]]:
    return {name: store.projection_rows(name) for name in PROJECTION_BY_NAME}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(_step, max_size=14), bound=st.integers(1, 12), below=st.integers(1, 6))
def test_deferred_projections_equal_the_plain_path_at_every_read(
    steps: list[tuple[str, Any]], bound: int, below: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plain = DuckDBLogStore(Path(tmp) / "plain.duckdb", defer_projections=False)
        deferred = DuckDBLogStore(Path(tmp) / "deferred.duckdb", max_pending_rows=bound)
        deferred.defer_below_rows = below  # some commits write their rows (and the pending)
        factories = {id(plain): LogFactory(), id(deferred): LogFactory()}
        for n, (kind, arg) in enumerate(steps):
            for store in (plain, deferred):
                factory = factories[id(store)]
                if kind in ("commit", "stage"):
                    events = (factory.event(GROUP_A), factory.event(GROUP_B))
                    receipt = factory.receipt(events, action_id=f"urn:mwp:action:{n}")
                    batch = Batch(events=events, receipts=(receipt,), projections=_delta(arg))
                    try:
                        (store.commit if kind == "commit" else store.stage)(batch)
                        outcome: Any = "ok"
                    except IntegrityError as exc:  # e.g. a key upserted and deleted at once
                        outcome = type(exc)
                        for event in events:  # the refused batch's sequences were not used
                            factory.sequences[event.group_id] -= 1  # type: ignore[index]
                    if store is plain:
                        expected = outcome
                    else:
                        assert outcome == expected
                elif kind == "flush":
                    store.flush()
                elif kind == "events":
                    list(store.entries())
                    list(store.receipts())
                elif kind == "replace":
                    store.replace_projections(
                        {"proj_missions": [mission_row(m, revision=1) for m in arg]}
                    )
            if kind == "read":
                assert deferred.projection_rows(arg) == plain.projection_rows(arg)
        assert _tables(deferred) == _tables(plain)
        plain.close()
        deferred.close()
        assert not (Path(tmp) / ("deferred.duckdb" + BEHIND_SUFFIX)).exists()
        with (
            DuckDBLogStore(Path(tmp) / "plain.duckdb", read_only=True) as a,
            DuckDBLogStore(Path(tmp) / "deferred.duckdb", read_only=True) as b,
        ):
            assert not b.projections_behind
            assert _tables(a) == _tables(b)
            assert list(a.entries()) == list(b.entries())


def _replayed(directory: Path) -> dict[str, list[str]]:
    org = load_organization(directory)
    with DuckDBLogStore(directory / LOG_FILE, read_only=True) as store:
        return comparable_rows(replay(org, store))


def _stored(directory: Path) -> dict[str, list[str]]:
    import json

    with DuckDBLogStore(directory / LOG_FILE, read_only=True) as store:
        tables = {name: store.projection_rows(name) for name in PROJECTION_BY_NAME}
    return {
        t: sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)
        for t, rows in tables.items()
        if rows
    }


def test_a_crash_with_rows_pending_is_re_rendered_on_the_next_open(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    sandbox = Sandbox(directory, ROOT / "sample_missions" / "learn.toml", seed=1)
    for _ in range(25):
        if sandbox.step() is None:
            break
    store = sandbox.log.store
    assert isinstance(store, DuckDBLogStore)
    assert store._pending, "the test needs rows still pending at the crash"
    sandbox.crash()
    marker = directory / (LOG_FILE + BEHIND_SUFFIX)
    assert marker.exists()
    assert _stored(directory) != _replayed(directory)  # the tables lag the log
    log = open_directory(directory)
    assert not log.store.projections_behind  # type: ignore[attr-defined]
    log.close()
    assert not marker.exists()
    assert _stored(directory) == _replayed(directory)


def test_after_a_crash_a_read_only_query_of_the_views_is_current_and_proj_reads_are_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documented views fold the log, so a read-only query right after a crash (before any
    writable open could re-render the projections) answers what the log says; a query naming a
    ``proj_*`` table gets a note on stderr. Neither changes the file."""
    import json

    from mwp_local.cli import main

    directory = tmp_path / "run"
    sandbox = Sandbox(directory, ROOT / "sample_missions" / "learn.toml", seed=1)
    for _ in range(25):
        if sandbox.step() is None:
            break
    assert isinstance(sandbox.log.store, DuckDBLogStore) and sandbox.log.store._pending
    sandbox.crash()
    log_file = directory / LOG_FILE
    before = log_file.read_bytes()
    # The independent fold: each WorkItem's last state, from the stored Events in log order.
    states: dict[str, str] = {}
    with DuckDBLogStore(log_file, read_only=True) as store:
        assert store.projections_behind
        for entry in store.entries():
            if entry.event.work_item_id and entry.event.to_state:
                states[entry.event.work_item_id] = entry.event.to_state
    assert states and _stored(directory) != _replayed(directory)  # proj_* lag the log
    capsys.readouterr()
    query = "SELECT work_item_id, state FROM work_items ORDER BY work_item_id"
    assert main(["sql", str(directory), query, "--json"]) == 0
    out = capsys.readouterr()
    rows = [json.loads(line) for line in out.out.splitlines()]
    assert {r["work_item_id"]: r["state"] for r in rows} == states
    assert "note" not in out.err
    assert main(["sql", str(directory), "SELECT count(*) AS n FROM PROJ_work_items"]) == 0
    err = capsys.readouterr().err
    assert "stopped before writing its projection tables" in err and "docs/durability.md" in err
    assert log_file.read_bytes() == before
    assert (directory / (LOG_FILE + BEHIND_SUFFIX)).exists()
