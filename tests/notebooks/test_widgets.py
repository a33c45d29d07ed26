"""Widgets and renderings without a kernel: click buttons, read values and HTML."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

from mwp_local.notebook.html import rejection_html, table_html
from mwp_local.notebook.magic import run_cell
from mwp_local.notebook.svg import dag_svg, state_machine_svg
from mwp_local.notebook.widgets import Stepper, TimeTravel
from mwp_local.protocol.tables import WorkItemState
from mwp_local.sandbox import Sandbox

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"


@pytest.fixture(autouse=True)
def callbacks_raise(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """ipywidgets swallows exceptions in callbacks; here they fail the test."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        value = None
        for callback in self.callbacks:
            value = callback(*args, **kwargs)
        return value

    monkeypatch.setattr(ipywidgets.widgets.widget.CallbackDispatcher, "__call__", call)
    yield
    ipywidgets.Widget.close_all()


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    sb = Sandbox(tmp_path / "s", SAMPLES / "learn.toml", seed=1)
    yield sb
    sb.close()


def test_clicking_next_performs_one_step_and_shows_it(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    stepper.next_button.click()
    assert sandbox.steps == 1
    assert "mission.create" in stepper.view.value and "ACCEPTED" in stepper.view.value
    stepper.next_button.click()
    assert sandbox.steps == 2


def test_run_to_the_end_shows_the_summary_and_disables_next(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    stepper.run_button.click()
    assert "Finished" in stepper.view.value and "approved" in stepper.view.value
    assert stepper.next_button.disabled
    assert stepper.progress.value == sandbox.steps


def test_the_state_machine_is_drawn_from_the_table_with_the_current_state_outlined() -> None:
    svg = state_machine_svg("queued")
    for state in WorkItemState:
        assert f'data-state="{state}"' in svg
    assert 'stroke="#d62728" stroke-width="3"' in svg
    assert "work.start" in svg  # edge titles come from the table


def test_time_travel_rebuilds_earlier_states_from_the_log(sandbox: Sandbox) -> None:
    sandbox.run()
    travel = TimeTravel(sandbox, "urn:mwp-local:group:export-button")
    assert "verified" in travel.table.value
    travel.slider.value = 4
    assert "verified" not in travel.table.value and "open" in travel.table.value


def test_the_sql_magic_binds_parameters_and_keeps_the_result(sandbox: Sandbox) -> None:
    sandbox.run()
    namespace: dict[str, Any] = {"sb": sandbox, "kind": "work.started"}
    table = run_cell(
        "sb -o started", "SELECT count(*) AS n FROM events WHERE kind = $kind", namespace
    )
    assert namespace["started"] is table and table.to_pylist()[0]["n"] >= 3
    with pytest.raises(NameError):
        run_cell("sb", "SELECT $missing", namespace)
    with pytest.raises(ValueError):
        run_cell("sb", "DELETE FROM log_events", namespace)
    assert "<table>" in table_html(table)


def test_renderings_escape_what_they_show() -> None:
    assert "<script>" not in rejection_html("X", "<script>alert(1)</script>", None)
    svg = dag_svg([("a", "<b>", "open"), ("b", "b", "verified")], [("a", "b")])
    assert "&lt;b&gt;" in svg and svg.count('<g class="node"') == 2
