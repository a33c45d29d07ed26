"""Widgets and renderings without a kernel: click buttons, read values and HTML."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.notebook.magic import run_cell
from mwp_local.notebook.widgets import Stepper, TimeTravel
from mwp_local.protocol.tables import WorkItemState
from mwp_local.render.html import rejection_html, table_html
from mwp_local.render.svg import dag_svg, state_machine_svg

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


def test_clicking_a_provenance_node_shows_manifest_evidence_and_hash_check(
    sandbox: Sandbox,
) -> None:
    from mwp_local.notebook.graphs import ProvenanceGraph

    sandbox.run()
    graph = ProvenanceGraph(sandbox)
    artifacts = [n.node_id for n in graph.model.nodes if n.node_type == "artifact"]
    assert len(artifacts) == 3 and all(f'data-id="{a}"' in graph.graph.svg for a in artifacts)
    graph.graph.selected = artifacts[0]  # what the front end does on a click
    shown = graph.inspector.value
    assert "signed manifest" in shown and f"&quot;contentHash&quot;: &quot;{artifacts[0]}" in shown
    assert "content re-hashed" in shown and "deterministic_test" in shown
    assert 'stroke="#d62728" stroke-width="3"' in graph.graph.svg  # the clicked node outlined


def test_a_tampered_blob_fails_the_hash_check_in_the_inspector(sandbox: Sandbox) -> None:
    from mwp_local.notebook.graphs import ProvenanceGraph
    from mwp_local.store.blobs import BlobStore

    sandbox.run()
    graph = ProvenanceGraph(sandbox)
    digest = next(n.node_id for n in graph.model.nodes if n.node_type == "artifact")
    blobs = BlobStore(sandbox.directory / "blobs")
    path = blobs.blob_path(blobs.ref(digest).b3)
    path.chmod(0o644)
    path.write_bytes(b"tampered")
    assert "PROTOCOL_VIOLATION" in graph.inspect(digest)


def test_the_sql_console_runs_a_query_binding_only_the_named_parameters(
    sandbox: Sandbox,
) -> None:
    from mwp_local.notebook.sql_console import SqlConsole

    sandbox.run()
    console = SqlConsole(sandbox, params="kind=work.started\nunused=1")
    console.query.value = "SELECT count(*) AS n FROM events WHERE kind = $kind"
    console.run_button.click()
    assert console.result.to_pylist()[0]["n"] >= 3 and "<table>" in console.output.value
    console.query.value = "SELECT $missing"
    console.run_button.click()
    assert console.result is None and "missing" in console.output.value
    console.query.value = "DELETE FROM log_events"
    console.run_button.click()
    assert "only SELECT" in console.output.value


def test_the_stepper_lists_the_transitions_the_table_allows(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    for _ in range(50):  # a WorkItem is touched within the first few steps of learn.toml
        stepper.next_button.click()
        if "workItem" in stepper.last.after:
            break
    state = stepper.last.after["state"]
    assert f"From <b>{state}</b> the table allows" in stepper.allowed.value


def test_the_timeline_draws_one_bar_per_execution_lease(sandbox: Sandbox) -> None:
    from mwp_local.render.timeline import timeline_html

    sandbox.run()
    leases = sandbox.sql("SELECT count(*) AS n FROM leases WHERE lease_type = 'execution'")
    html = timeline_html(sandbox.log.store)
    assert html.count('<g class="lease">') == leases.to_pylist()[0]["n"] > 0
    assert html.count('<g class="mark">') >= 3  # the checkpoints


def test_the_scheduler_panel_shows_each_groups_queue_and_share(sandbox: Sandbox) -> None:
    from mwp_local.render.timeline import find_scheduler, scheduler_panel_html

    sandbox.run(max_steps=30)
    snapshot = find_scheduler(sandbox.runtime("ana").policy).snapshot()
    html = scheduler_panel_html(snapshot, "ana")
    assert "export-button" in html and "service share" in html


def test_rich_reprs_draw_sandbox_records_events_artifacts_and_rejections(
    sandbox: Sandbox,
) -> None:
    from mwp_local.protocol.errors import ErrorCode, ProtocolError
    from mwp_local.protocol.jsontext import parse_strict
    from mwp_local.render import reprs

    sandbox.run()
    assert "approved" in reprs.sandbox_html(sandbox)
    mission = next(iter(sandbox.log.state.missions.values()))
    assert "Coordinator Epoch" in reprs.mission_html(mission)
    item = next(iter(sandbox.log.state.work_items.values()))
    assert "verified" in reprs.work_item_html(item)
    events = [parse_strict(e.document) for e in sandbox.log.store.events()]
    assert events[-1]["kind"] in reprs.Event(events[-1])._repr_html_()
    published = next(e for e in events if e["kind"] == "artifact.published")
    assert "never identity" in reprs.Artifact(published["payload"]["artifact"])._repr_html_()
    error = ProtocolError(ErrorCode.WORK_LEASE_EXPIRED, "old <lease>", rule="§11.3")
    shown = reprs.rejected_html(error)
    assert "WORK_LEASE_EXPIRED" in shown and "&lt;lease&gt;" in shown


def test_the_step_view_marks_what_changed_in_the_work_item(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    for _ in range(50):
        stepper.next_button.click()
        report = stepper.last
        if "workItem" in report.before and report.before["state"] != report.after["state"]:
            break
    assert '<tr class="changed"' in stepper.view.value
    assert f"<td>{report.before['state']}</td><td>{report.after['state']}</td>" in (
        stepper.view.value
    )
