"""The views, and the timeline's marks query, keep to the shapes DuckDB runs fast on a large log
(the comment above the view texts in ``store/views.py``): no lateral ``CROSS JOIN UNNEST`` of a
column (planned as a delim join that hashes every distinct payload text) and no ``kind IN (...)``
(filtered after every row's ``payload`` was read). ``benchmarks/NOTES.md`` has the figures; the
results of each view are held by ``test_views_fold.py``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.views import create_views, view_sources


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    store = DuckDBLogStore(Path(tmp_path_factory.mktemp("plans")) / "log.duckdb")
    try:
        with store.cursor() as cur:
            create_views(cur)
            return {
                name: "\n".join(
                    row[1] for row in cur.execute(f"EXPLAIN SELECT * FROM {name}").fetchall()
                )
                for name in view_sources()
            }
    finally:
        store.close()


@pytest.mark.parametrize("name", list(view_sources()))
def test_no_view_decorrelates_an_unnest_of_the_payload(plans: dict[str, str], name: str) -> None:
    assert "delim" not in plans[name].lower(), plans[name]


@pytest.mark.parametrize("name", list(view_sources()))
def test_no_view_filters_kinds_after_reading_every_payload(
    plans: dict[str, str], name: str
) -> None:
    assert "IN (...)" not in plans[name], plans[name]
    assert not re.search(r"\bkind\s+IN\s*\(", view_sources()[name], re.IGNORECASE)


def test_the_timelines_marks_query_scans_one_kind_at_a_time(tmp_path: Path) -> None:
    from mwp_local.render.timeline import MARKS, MARKS_SQL

    store = DuckDBLogStore(tmp_path / "log.duckdb")
    try:
        with store.cursor() as cur:
            create_views(cur)
            plan = "\n".join(row[1] for row in cur.execute(f"EXPLAIN {MARKS_SQL}").fetchall())
    finally:
        store.close()
    assert "IN (...)" not in plan, plan
    assert not re.search(r"\bkind\s+IN\s*\(", MARKS_SQL, re.IGNORECASE)
    assert all(f"kind = '{kind}'" in MARKS_SQL for kind in MARKS)
