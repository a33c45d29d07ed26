"""Child process of the crash test: commits batches to a DuckDB log until killed.

Usage: ``python -m tests.store.crash_writer PATH SEED``. After each ``commit`` returns it prints
the batch's last log position and flushes, so the parent knows what was acknowledged. Every batch
is self-describing (each Event's payload names its batch and the batch size) so that the parent
can tell a whole batch from a half-written one.
"""

from __future__ import annotations

import random
import sys

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.records import Batch, ProjectionDelta

from .factory import GROUP_A, GROUP_B, LogFactory

ACTOR = "urn:mwp:agent:crash-writer"
MISSION = "urn:mwp:mission:crash"


def make_batch(store: DuckDBLogStore, number: int, rng: random.Random) -> Batch:
    """Batch ``number`` (1-based): random size, mixed Groups, a receipt and projection rows."""
    factory = LogFactory(
        sequences={g: store.last_sequence(g) for g in (GROUP_A, GROUP_B)},
        start=number * 10_000,
    )
    size = rng.randint(1, 400)
    groups = [rng.choice((GROUP_A, GROUP_A, GROUP_B, None)) for _ in range(size)]
    events = tuple(
        factory.event(group, payload={"batch": number, "size": size, "i": i})
        for i, group in enumerate(groups)
    )
    receipt = factory.receipt(events, actor_id=ACTOR, action_id=f"urn:mwp:action:{number}")
    mission = {"mission_id": MISSION, "state": "active", "revision": number}
    item = {"work_item_id": f"urn:mwp:work-item:{number}", "attempts": size}
    return Batch(
        events=events,
        receipts=(receipt,),
        rejections=(factory.rejection(),) if number % 3 == 0 else (),
        projections=ProjectionDelta(
            upserts={"proj_missions": (mission,), "proj_work_items": (item,)}
        ),
    )


def main(path: str, seed: int) -> None:
    rng = random.Random(seed)
    store = DuckDBLogStore(path)
    number = sum(1 for _ in store.receipts())
    for _ in range(100_000):  # a bound, in case nobody kills us
        number += 1
        store.commit(make_batch(store, number, rng))
        print(store.event_count(), flush=True)
        if number % 7 == 0:
            store.checkpoint()  # so that some kills land inside a checkpoint
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
