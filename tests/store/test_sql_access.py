"""Queries over a sandbox reach only the sandbox's own files, unless opted out explicitly
(issue 24, point 7): through ``sql()``, the Sandbox, ``mwp-local sql``, ``%%mwp_sql`` and the
SQL console."""

from __future__ import annotations

from pathlib import Path

import pytest

from mwp_local.cli import main
from mwp_local.drivers.sandbox import Sandbox
from mwp_local.notebook.magic import run_cell
from mwp_local.store.duckdb_log import DuckDBLogStore
from mwp_local.store.parquet import export_parquet
from mwp_local.store.views import sql

SAMPLE = Path(__file__).resolve().parents[2] / "sample_missions" / "learn.toml"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "elsewhere" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("name,value\nkey,hunter2\n")
    return secret


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    directory = tmp_path / "sbx"
    Sandbox(directory, SAMPLE).close()
    return directory


def test_a_query_cannot_read_a_file_outside_the_sandbox(sandbox: Path, outside: Path) -> None:
    with DuckDBLogStore(sandbox / "group.duckdb", read_only=True) as store:
        for query in (
            f"SELECT * FROM read_csv('{outside}')",
            "SELECT * FROM read_csv('/etc/passwd')",
            f"SELECT * FROM glob('{outside.parent}/*')",
            f"SELECT * FROM read_csv('{sandbox}/../elsewhere/secret.csv')",
        ):
            with pytest.raises(PermissionError, match="read only the sandbox's own files"):
                sql(store, query)


def test_the_sandboxs_own_files_stay_readable(sandbox: Path) -> None:
    with DuckDBLogStore(sandbox / "group.duckdb", read_only=True) as store:
        export_parquet(store, sandbox / "export" / "parquet")
        pattern = f"{sandbox}/export/parquet/events/*/*.parquet"
        (row,) = sql(store, f"SELECT count(*) AS n FROM read_parquet('{pattern}')").to_pylist()
        assert row["n"] == store.event_count()


def test_the_opt_out_is_explicit_and_works(sandbox: Path, outside: Path) -> None:
    with DuckDBLogStore(sandbox / "group.duckdb", read_only=True, external_access=True) as store:
        rows = sql(store, f"SELECT value FROM read_csv('{outside}')").to_pylist()
    assert rows == [{"value": "hunter2"}]


def test_a_running_sandbox_is_contained_and_can_opt_out(tmp_path: Path, outside: Path) -> None:
    sandbox = Sandbox(tmp_path / "a", SAMPLE)
    try:
        with pytest.raises(PermissionError):
            sandbox.sql(f"SELECT * FROM read_csv('{outside}')")
        sandbox.step()  # and the Sandbox still writes its log
    finally:
        sandbox.close()
    opened = Sandbox(tmp_path / "b", SAMPLE, sql_external_access=True)
    try:
        assert opened.sql(f"SELECT value FROM read_csv('{outside}')").num_rows == 1
    finally:
        opened.close()


def test_the_command_line_refuses_and_opts_out(
    sandbox: Path, outside: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = f"SELECT value FROM read_csv('{outside}')"
    assert main(["sql", str(sandbox), query]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--allow-external-access" in err and "hunter2" not in err
    assert main(["sql", str(sandbox), query, "--allow-external-access", "--json"]) == 0
    assert "hunter2" in capsys.readouterr().out


def test_the_magic_refuses_and_opts_out_for_a_directory(sandbox: Path, outside: Path) -> None:
    cell = f"SELECT value FROM read_csv('{outside}')"
    namespace = {"d": str(sandbox)}
    with pytest.raises(PermissionError):
        run_cell("d", cell, namespace)
    table = run_cell("d --allow-external-access", cell, namespace)
    assert table.to_pylist() == [{"value": "hunter2"}]


def test_the_magic_says_how_a_running_sandbox_opts_out(tmp_path: Path, outside: Path) -> None:
    sandbox = Sandbox(tmp_path / "a", SAMPLE)
    try:
        with pytest.raises(ValueError, match="sql_external_access=True"):
            run_cell("sb --allow-external-access", "SELECT 1", {"sb": sandbox})
    finally:
        sandbox.close()


def test_the_console_shows_the_refusal(sandbox: Path, outside: Path) -> None:
    pytest.importorskip("ipywidgets")
    from mwp_local.notebook.sql_console import SqlConsole

    console = SqlConsole(str(sandbox), f"SELECT * FROM read_csv('{outside}')")
    assert console.run() is None
    assert "sandbox&#x27;s own files" in console.output.value
    console.store.close()
