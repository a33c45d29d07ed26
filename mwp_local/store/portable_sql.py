"""The documented views and analysis queries in Spark SQL, for the Parquet export.

The views (``store.views``) are written once, in a portable subset of DuckDB's SQL; this module
turns each into Spark SQL with sqlglot and writes them, in creation order, to the packaged file
``store/sql/spark.sql`` (``python -m mwp_local.store.portable_sql`` rewrites it; a test keeps it
equal to what the transpiler makes of the current views). Reading the file needs nothing but
this package: ``store.spark.register`` runs it on a SparkSession, and anyone may run it with
``spark-sql`` after naming the export's three datasets (see its header).

sqlglot is imported only to write the file (the ``engines`` extra).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from importlib import resources

from .views import ANALYSES, view_sources

__all__ = ["SPARK_FILE", "render_spark_file", "spark_statements", "to_spark"]

#: The packaged Spark SQL file (a resource of ``mwp_local.store``).
SPARK_FILE = "sql/spark.sql"

_HEADER = """\
-- mwp_local: the documented views and the analysis queries of docs/sql.md in Spark SQL, over the
-- Parquet export of a Group log (`mwp-local export DIR --parquet OUT`). Generated from
-- mwp_local.store.views by mwp_local.store.portable_sql; do not edit.
--
-- First name the export's three datasets (Spark reads the `group` partition as the Group ID):
--   CREATE OR REPLACE TEMPORARY VIEW log_events USING parquet OPTIONS (path 'OUT/events');
--   CREATE OR REPLACE TEMPORARY VIEW log_receipts USING parquet OPTIONS (path 'OUT/receipts');
--   CREATE OR REPLACE TEMPORARY VIEW log_rejections USING parquet OPTIONS (path 'OUT/rejections');
-- then run the views in this order, with spark.sql.session.timeZone set to UTC for timestamps
-- that read as the log's. In Python, mwp_local.store.spark.register(spark, OUT) does all this.
"""
_MARK = re.compile(r"^-- (view|analysis): (\w+)$", re.M)


def to_spark(query: str) -> str:
    """A query of the portable subset (DuckDB dialect) in Spark SQL."""
    import sqlglot

    (out,) = sqlglot.transpile(query, read="duckdb", write="spark", pretty=True)
    return out


def render_spark_file() -> str:
    """The text of ``store/sql/spark.sql`` for the current views and analyses."""
    parts = [_HEADER]
    for name, select in view_sources().items():
        parts.append(f"-- view: {name}\nCREATE OR REPLACE TEMPORARY VIEW {name} AS\n")
        parts.append(to_spark(select) + ";\n")
    for name, analysis in ANALYSES.items():
        parts.append(f"-- analysis: {name}\n{to_spark(analysis.query)};\n")
    return "\n".join(parts)


def spark_statements(text: str | None = None) -> dict[str, Mapping[str, str]]:
    """The packaged file's statements: ``{"view": {name: statement}, "analysis": {...}}``, each
    without its final semicolon, views in creation order."""
    if text is None:
        text = resources.files("mwp_local.store").joinpath(SPARK_FILE).read_text("utf-8")
    out: dict[str, dict[str, str]] = {"view": {}, "analysis": {}}
    marks = list(_MARK.finditer(text))
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        body = text[mark.end() : following.start() if following else len(text)]
        out[mark[1]][mark[2]] = body.strip().removesuffix(";")
    return out  # type: ignore[return-value]


if __name__ == "__main__":  # pragma: no cover - the generator
    target = resources.files("mwp_local.store").joinpath(SPARK_FILE)
    with resources.as_file(target) as path:
        path.write_text(render_spark_file(), encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
