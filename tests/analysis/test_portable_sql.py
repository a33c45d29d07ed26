"""The packaged Spark SQL is what the transpiler makes of the current views and analyses."""

from __future__ import annotations

import pytest

from mwp_local.store.portable_sql import render_spark_file, spark_statements
from mwp_local.store.views import ANALYSES, VIEW_DOCS


def test_the_packaged_spark_sql_is_the_transpiled_views() -> None:
    pytest.importorskip("sqlglot")
    from importlib import resources

    packaged = resources.files("mwp_local.store").joinpath("sql/spark.sql").read_text("utf-8")
    assert packaged == render_spark_file(), "run: python -m mwp_local.store.portable_sql"


def test_the_packaged_file_holds_every_view_in_order_and_every_analysis() -> None:
    statements = spark_statements()
    assert list(statements["view"]) == list(VIEW_DOCS)
    assert list(statements["analysis"]) == list(ANALYSES)
    for name, text in statements["view"].items():
        assert text.startswith(f"CREATE OR REPLACE TEMPORARY VIEW {name} AS")
        assert not text.endswith(";")
