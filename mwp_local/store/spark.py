"""The documented views on a SparkSession, over a Parquet export (the scale path of DESIGN 9).

``register(spark, export_dir)`` names the export's three datasets ``log_events``,
``log_receipts`` and ``log_rejections`` and creates every documented view as a temporary view,
from the packaged Spark SQL (``store/sql/spark.sql``, see ``portable_sql``); then
``spark.sql("SELECT ... FROM offers ...")`` works as in DuckDB. pyspark is never imported here:
``spark`` is any object with the SparkSession's ``sql`` method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .parquet import DATASETS
from .portable_sql import spark_statements

__all__ = ["analysis_query", "register"]

_TABLES = dict(zip(DATASETS, ("log_events", "log_receipts", "log_rejections"), strict=True))


def register(spark: Any, export_dir: Path | str) -> list[str]:
    """Create the log tables and every documented view on ``spark``; return the view names."""
    root = Path(export_dir)
    for dataset, table in _TABLES.items():
        path = str((root / dataset).resolve()).replace("'", "\\'")
        spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {table} USING parquet OPTIONS (path '{path}')")
    views = spark_statements()["view"]
    for statement in views.values():
        spark.sql(statement)
    return list(views)


def analysis_query(name: str) -> str:
    """The Spark SQL of one analysis query of docs/sql.md (``views.ANALYSES``)."""
    return spark_statements()["analysis"][name]
