"""Differential test: the DuckDB store and the in-memory reference accept and refuse the same
random batches and end in the same state."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mwp_local.store.base import IntegrityError, LogStore
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.memory import MemoryLogStore
from mwp_local.store.records import Batch, ProjectionDelta

from .conftest import snapshot
from .factory import GROUP_A, GROUP_B, LogFactory, budget_row, mission_row

_GROUPS = st.sampled_from([GROUP_A, GROUP_B, None])
_MISSIONS = st.sampled_from([f"urn:m:{i}" for i in range(4)])
_SCOPES = st.sampled_from(["urn:w:1", "urn:w:2"])
_DIMENSIONS = st.sampled_from(["tokens", "cost"])

_mission_upsert = st.builds(
    lambda m, r: ("up", "proj_missions", mission_row(m, revision=r)),
    _MISSIONS,
    st.integers(0, 5),
)
_mission_delete = st.builds(lambda m: ("del", "proj_missions", (m,)), _MISSIONS)
_budget_upsert = st.builds(
    lambda s, d, u: ("up", "proj_budgets", budget_row(s, d, u)),
    _SCOPES,
    _DIMENSIONS,
    st.floats(0, 10),
)
_budget_delete = st.builds(
    lambda s, d: ("del", "proj_budgets", ("work_item", s, d)), _SCOPES, _DIMENSIONS
)

_batch = st.fixed_dictionaries(
    {
        "groups": st.lists(_GROUPS, max_size=5),
        "skip": st.sampled_from([0, 0, 0, 1, -1]),  # sometimes break a sequence
        "reuse_receipt": st.booleans(),
        "rejections": st.integers(0, 2),
        "projection_ops": st.lists(
            st.one_of(_mission_upsert, _mission_delete, _budget_upsert, _budget_delete), max_size=4
        ),
    }
)
_step = st.one_of(
    st.tuples(st.just("commit"), _batch),
    st.tuples(st.just("replace"), st.lists(_MISSIONS, max_size=3, unique=True)),
)


def _make_batch(spec: dict[str, Any], factory: LogFactory, used_actions: list[str]) -> Batch:
    events = []
    for i, group in enumerate(spec["groups"]):
        if group is not None and i == 0 and spec["skip"]:
            sequence = factory.sequences.get(group, 0) + 1 + spec["skip"]
            events.append(factory.event(group, sequence=max(sequence, 1)))
        else:
            events.append(factory.event(group))
    action = used_actions[0] if spec["reuse_receipt"] and used_actions else None
    receipt = factory.receipt(events, action_id=action)
    upserts: dict[str, list[dict[str, Any]]] = {}
    deletes: dict[str, list[tuple[Any, ...]]] = {}
    for kind, table, value in spec["projection_ops"]:
        (upserts if kind == "up" else deletes).setdefault(table, []).append(value)
    return Batch(
        events=tuple(events),
        receipts=(receipt,),
        rejections=tuple(factory.rejection() for _ in range(spec["rejections"])),
        projections=ProjectionDelta(
            upserts={t: tuple(r) for t, r in upserts.items()},
            deletes={t: tuple(k) for t, k in deletes.items()},
        ),
    )


def _outcome(store: LogStore, batch: Batch) -> str:
    try:
        store.commit(batch)
    except IntegrityError:
        return "refused"
    return "accepted"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_step, min_size=1, max_size=8))
def test_duckdb_and_memory_stores_agree_on_random_batches(steps: list[Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        memory = MemoryLogStore()
        duck = DuckDBLogStore(Path(tmp) / "log.duckdb")
        try:
            factory = LogFactory()
            used_actions: list[str] = []
            for kind, spec in steps:
                if kind == "commit":
                    sequences = dict(factory.sequences)
                    batch = _make_batch(spec, factory, used_actions)
                    outcomes = {_outcome(s, batch) for s in (memory, duck)}
                    assert len(outcomes) == 1, f"stores disagree on {batch}"
                    (outcome,) = outcomes
                    event(f"batch {outcome}")
                    if outcome == "accepted":
                        used_actions += [r.action_id for r in batch.receipts]
                    else:
                        factory.sequences = sequences  # the refused Events never happened
                else:
                    rows = {"proj_missions": [mission_row(m) for m in spec]}
                    for s in (memory, duck):
                        s.replace_projections(rows)
                assert snapshot(memory) == snapshot(duck)
        finally:
            duck.close()
