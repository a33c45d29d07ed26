"""Query results as a person reads them, and ``%%mwp_sql`` in a real IPython shell (no kernel):
HTML tables with durations and NULL, nothing cut, a DataFrame on request, and one plain message
for each mistake."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.notebook.magic import SqlCellError, run_cell
from mwp_local.render.html import duration_text, table_html

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path_factory.mktemp("sql") / "s", SAMPLES / "learn.toml", seed=1)
    sb.run()
    yield sb
    sb.close()


@pytest.fixture(scope="module")
def shell(sandbox: Sandbox) -> Iterator[Any]:
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "mwp_local.notebook")
    ip.user_ns.update({"sb": sandbox, "kind": "work.started"})
    yield ip
    InteractiveShell.clear_instance()


def test_durations_show_as_durations_and_null_as_null(sandbox: Sandbox) -> None:
    table = sandbox.sql(
        "SELECT INTERVAL 1280 SECOND AS waited, INTERVAL 1 DAY + INTERVAL 2 HOUR AS long_wait, "
        "NULL AS nothing, 'x' AS letter"
    )
    html = table_html(table)
    assert "<td>21 min 20 s</td>" in html and "<td>1 day 2 h</td>" in html
    assert '<span class="null">NULL</span>' in html and "MonthDayNano" not in html
    assert duration_text(nanoseconds=250_000_000) == "0.25 s"


def test_the_time_between_transitions_reads_as_durations(sandbox: Sandbox) -> None:
    table = sandbox.sql(
        "SELECT work_item_id, CAST(occurred_at AS TIMESTAMP) - lag(CAST(occurred_at AS TIMESTAMP))"
        " OVER (PARTITION BY work_item_id ORDER BY position) AS after "
        "FROM work_item_transitions ORDER BY work_item_id, position"
    )
    html = table_html(table)
    rows = table.to_pylist()
    assert html.count('<span class="null">NULL</span>') == len({r["work_item_id"] for r in rows})
    for row in rows:
        if row["after"] is not None:
            seconds = int(row["after"].total_seconds())  # sql() gives durations as timedelta
            assert f"{seconds % 60} s" in html or f"{seconds // 60} min" in html


def test_a_long_value_is_folded_never_cut(sandbox: Sandbox) -> None:
    text = "".join(f"{i:04d}" for i in range(100))  # 400 characters
    html = table_html(sandbox.sql("SELECT $t AS long", {"t": text}))
    assert text in html and "<details>" in html and "(400 characters)" in html


def test_a_result_converts_to_a_dataframe(sandbox: Sandbox) -> None:
    frame = sandbox.sql("SELECT kind, count(*) AS n FROM events GROUP BY kind").to_pandas()
    assert set(frame.columns) == {"kind", "n"} and frame["n"].sum() > 0


def test_query_results_draw_as_html_tables_once_the_extension_is_loaded(shell: Any) -> None:
    result = shell.run_cell("sb.sql('SELECT kind FROM events LIMIT 2')")
    html = shell.display_formatter.format(result.result)[0]["text/html"]
    assert "<table>" in html and "2 rows" in html


def test_the_magic_binds_parameters_and_keeps_the_result(sandbox: Sandbox) -> None:
    namespace: dict[str, Any] = {"sb": sandbox, "kind": "work.started"}
    table = run_cell(
        "sb -o started", "SELECT count(*) AS n FROM events WHERE kind = $kind", namespace
    )
    assert namespace["started"] is table and table.to_pylist()[0]["n"] >= 3
    with pytest.raises(SqlCellError, match="no notebook variable for parameter"):
        run_cell("sb", "SELECT $missing", namespace)
    with pytest.raises(SqlCellError, match="only SELECT"):
        run_cell("sb", "DELETE FROM log_events", namespace)


def test_a_wrong_column_is_one_plain_message_without_a_traceback(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result = shell.run_cell("%%mwp_sql sb\nSELECT kindd FROM events")
    out = capsys.readouterr()
    text = out.out + out.err
    assert not result.success
    assert 'Referenced column "kindd" not found' in text and "Candidate bindings" in text
    assert "Traceback" not in text and "site-packages" not in text


def test_a_mistyped_sandbox_variable_is_named_not_opened_as_a_path(
    shell: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    result = shell.run_cell("%%mwp_sql sbb\nSELECT 1")
    text = "".join(capsys.readouterr())
    assert not result.success and "Traceback" not in text
    assert "no notebook variable named 'sbb'" in text and "did you mean sb" in text
    assert "Cannot open database" not in text


def test_the_magic_has_help(shell: Any) -> None:
    doc = shell.find_cell_magic("mwp_sql").__doc__
    assert "%%mwp_sql" in doc and "-o" in doc and "$name" in doc


def test_a_300_character_value_comes_out_whole(shell: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    shell.user_ns["long"] = "y" * 300 + "END"
    shown: list[str] = []
    monkeypatch.setattr(
        shell.display_pub, "publish", lambda data, **_: shown.append(data.get("text/html", ""))
    )
    result = shell.run_cell("%%mwp_sql sb\nSELECT $long AS value")
    assert result.success and any("y" * 300 + "END" in s for s in shown)
