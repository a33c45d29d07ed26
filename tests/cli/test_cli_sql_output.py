"""``mwp-local sql`` output (issue 24, point 6): a cut value is marked, NULL reads NULL, and
``--format csv|json|markdown`` prints every value whole."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from mwp_local.cli import main

NOW = "2026-07-15T09:00:00Z"
#: A 71-character value: one of the log's ``sha256:`` hashes.
HASH_QUERY = "SELECT command_hash AS h, NULL AS nothing FROM receipts ORDER BY position LIMIT 1"


@pytest.fixture
def sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    directory = tmp_path / "sbx"
    assert main(["init", str(directory), "--seed", "5", "--now", NOW]) == 0
    capsys.readouterr()
    return directory


def _out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(["sql", *argv]) == 0
    return capsys.readouterr().out


def _hash(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> str:
    (row,) = [
        json.loads(line) for line in _out(capsys, str(sandbox), HASH_QUERY, "--json").splitlines()
    ]
    assert len(row["h"]) == 71 and row["h"].startswith("sha256:")
    return str(row["h"])


def test_the_table_marks_a_cut_value_and_prints_null(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = _hash(sandbox, capsys)
    out = _out(capsys, str(sandbox), HASH_QUERY)
    row = out.splitlines()[2]
    shown, null = row.split()
    assert shown == whole[:59] + "…" and whole not in out
    assert null == "NULL"
    assert "--format csv, json or markdown prints every value whole" in out


def test_a_table_with_nothing_cut_has_no_note(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _out(capsys, str(sandbox), "SELECT count(*) AS n FROM events")
    assert "…" not in out and "cut" not in out


@pytest.mark.parametrize("output", ["csv", "json", "markdown"])
def test_every_other_format_prints_the_whole_value(
    sandbox: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    whole = _hash(sandbox, capsys)
    out = _out(capsys, str(sandbox), HASH_QUERY, "--format", output)
    if output == "csv":
        assert list(csv.reader(io.StringIO(out))) == [["h", "nothing"], [whole, ""]]
    elif output == "json":
        assert json.loads(out) == {"h": whole, "nothing": None}
    else:
        assert out.splitlines() == ["| h | nothing |", "| --- | --- |", f"| {whole} | NULL |"]


def test_typed_values_print_as_iso_8601(sandbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = (
        "SELECT occurred_at, occurred_at - occurred_at + INTERVAL 90 SECOND AS d "
        "FROM events ORDER BY position LIMIT 1"
    )
    (row,) = [json.loads(x) for x in _out(capsys, str(sandbox), query, "--json").splitlines()]
    assert row == {"occurred_at": "2026-07-15T09:00:00+00:00", "d": "PT90S"}


def test_json_and_another_format_together_are_a_usage_error(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sql", str(sandbox), "SELECT 1", "--json", "--format", "csv"]) == 2
    assert "contradict" in capsys.readouterr().err


def test_the_table_shows_durations_as_a_clock(
    sandbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = (
        "SELECT INTERVAL 3172 SECOND + INTERVAL 666672 MICROSECOND AS a, "
        "INTERVAL 49 HOUR AS b, INTERVAL 0 SECOND - INTERVAL 90 SECOND AS c"
    )
    out = _out(capsys, str(sandbox), query)
    row = out.splitlines()[2].split()
    assert row == ["00:52:52.666672", "2", "days", "01:00:00", "-00:01:30"]
