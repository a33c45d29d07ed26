"""The Spark tier: every documented view and analysis query, as the packaged Spark SQL, runs in
Spark local mode over the Parquet export of sample runs and gives DuckDB's result over the log
file, row for row. Marked ``spark`` (the inner loop may skip it with ``-m "not spark"``); it
needs the ``engines`` extra and Java 17, which ``make test`` and ``.ci/run`` provide. One
SparkSession serves the whole tier."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.parquet import SPARK_VIEWS, export_parquet
from mwp_local.store.portable_sql import spark_statements
from mwp_local.store.spark import analysis_query, register
from mwp_local.store.views import ANALYSES, VIEW_DOCS

pytestmark = pytest.mark.spark

#: The runs the tier reads: together they show every offer outcome, retries, a blocker, a
#: contract revision, a Coordinator replaced, a child Mission and its budget ancestry.
SPARK_RUNS = ("market", "retries", "child")
JAVA_17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")


def _pyspark() -> Any:
    if os.environ.get("CI"):
        import pyspark  # CI installs the engines extra: a missing pyspark is a failure

        return pyspark
    return pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    _pyspark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if "JAVA_HOME" not in os.environ and JAVA_17.is_dir():
        os.environ["JAVA_HOME"] = str(JAVA_17)
    # Spark hands TIMESTAMP values to Python as naive local times: make local time UTC.
    os.environ["TZ"] = "UTC"
    time.tzset()
    session = (
        SparkSession.builder.master("local[2]")
        .appName("mwp_local-spark-tier")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.codegen.wholeStage", "false")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()
        gateway = SparkContext._gateway
        if gateway is not None:  # end the JVM this fixture started, by its own process
            proc = getattr(gateway, "proc", None)
            gateway.shutdown()
            if proc is not None:
                if proc.stdin is not None:
                    proc.stdin.close()  # the gateway JVM exits at the end of its input
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=30)
            SparkContext._gateway = None
            SparkContext._jvm = None


@pytest.fixture(scope="module")
def exports(
    sample_runs: Mapping[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Path]:
    out = {}
    for run in SPARK_RUNS:
        target = tmp_path_factory.mktemp(f"export-{run}")
        with DuckDBLogStore(sample_runs[run] / "group.duckdb", read_only=True) as store:
            export_parquet(store, target)
        out[run] = target
    return out


def _normal(value: Any) -> Any:
    """One value as both engines should agree on it: instants in microseconds, durations in
    milliseconds, JSON text parsed, floats rounded."""
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return ("t", (aware - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1))
    if isinstance(value, timedelta):
        # Milliseconds: the engines' avg() of an INTERVAL rounds its microseconds differently.
        return ("d", round(value / timedelta(milliseconds=1)))
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return ("j", json.dumps(json.loads(value), sort_keys=True))
        except ValueError:
            return value
    if isinstance(value, list | tuple):
        return tuple(_normal(v) for v in value)
    return value


def _rows(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted((tuple(_normal(v) for v in row) for row in rows), key=repr)


def _duckdb(path: Path, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    con = duckdb.connect(str(path / "group.duckdb"), read_only=True)
    try:
        result = con.execute(query)
        return [d[0] for d in result.description], result.fetchall()
    finally:
        con.close()


def _spark_rows(spark: Any, query: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    frame = spark.sql(query)
    return list(frame.columns), [tuple(row) for row in frame.collect()]


@pytest.mark.parametrize("run", SPARK_RUNS)
def test_every_view_and_analysis_gives_duckdbs_result_on_spark(
    spark: Any, sample_runs: Mapping[str, Path], exports: dict[str, Path], run: str
) -> None:
    assert register(spark, exports[run]) == list(VIEW_DOCS)
    checked = 0
    for view in VIEW_DOCS:
        names, want = _duckdb(sample_runs[run], f"SELECT * FROM {view}")
        spark_names, got = _spark_rows(spark, f"SELECT * FROM {view}")
        assert spark_names == names, view
        assert _rows(got) == _rows(want), view
        checked += len(want)
    for name, analysis in ANALYSES.items():
        names, want = _duckdb(sample_runs[run], analysis.query)
        spark_names, got = _spark_rows(spark, analysis_query(name))
        assert spark_names == names, name
        # The analyses order their rows: the order must agree too.
        assert [tuple(_normal(v) for v in r) for r in got] == [
            tuple(_normal(v) for v in r) for r in want
        ], name
    assert checked > 100


def test_the_export_carries_the_spark_views(exports: dict[str, Path]) -> None:
    text = (exports["market"] / SPARK_VIEWS).read_text(encoding="utf-8")
    assert list(spark_statements(text)["view"]) == list(VIEW_DOCS)
    assert list(spark_statements(text)["analysis"]) == list(ANALYSES)


def test_spark_reads_the_partition_column_as_the_group_id(
    spark: Any, exports: dict[str, Path]
) -> None:
    frame = spark.read.parquet(str(exports["market"] / "events"))
    pairs = {(r["group"], r["group_id"]) for r in frame.select("group", "group_id").collect()}
    assert pairs and all(part == group for part, group in pairs)
    assert frame.where(frame["group"] == "urn:mwp-local:group:m").count() > 0
