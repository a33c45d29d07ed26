"""Widgets and renderings without a kernel: click buttons, read values and HTML.

What a view shows is checked against the log the test wrote, read through the SQL views (the
``events``, ``receipts`` and ``work_item_transitions`` of ``docs/sql.md``), never against the
code that builds the view.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets
import pytest

from mwp_local.drivers.sandbox import Sandbox
from mwp_local.notebook.widgets import Stepper, TimeTravel
from mwp_local.protocol.tables import WorkItemState
from mwp_local.protocol.timestamps import format_utc
from mwp_local.render.html import rejection_html
from mwp_local.render.svg import dag_svg, state_machine_svg

SAMPLES = Path(__file__).resolve().parents[2] / "sample_missions"
GROUP = "urn:mwp-local:group:export-button"
TERMINAL = ("verified", "failed", "cancelled")


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


def state_at(sb: Sandbox, work_item: str, position: int) -> str | None:
    """The WorkItem's state once the first ``position`` Events are in: the last ``to_state``
    the log records for it (None before it exists)."""
    rows = sb.sql(
        "SELECT to_state FROM work_item_transitions WHERE work_item_id = $w AND position <= $p "
        "ORDER BY position DESC LIMIT 1",
        {"w": work_item, "p": position},
    ).to_pylist()
    return rows[0]["to_state"] if rows else None


def done_at(sb: Sandbox, position: int) -> int:
    """How many WorkItems are verified, failed or cancelled once ``position`` Events are in."""
    items = sb.sql("SELECT DISTINCT work_item_id FROM work_item_transitions").to_pylist()
    return sum(state_at(sb, r["work_item_id"], position) in TERMINAL for r in items)


class FakeDisplay:
    """Stands in for ``IPython.display.display``: records what is shown and every update."""

    def __init__(self) -> None:
        self.shown: list[Any] = []
        self.updates: list[str] = []

    def display(self, obj: Any, display_id: bool = False, **_: Any) -> Any:
        self.shown.append(obj)
        if not display_id:
            return None
        fake = self

        class Handle:
            def update(self, new: Any) -> None:
                fake.updates.append(new.data)

        return Handle()


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> FakeDisplay:
    import IPython.display

    fake = FakeDisplay()
    monkeypatch.setattr(IPython.display, "display", fake.display)
    return fake


# ---------------------------------------------------------------------- the Stepper


def test_clicking_next_performs_one_step_and_shows_it(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    stepper.next_button.click()
    assert sandbox.steps == 1
    assert "mission.create" in stepper.view.value and "ACCEPTED" in stepper.view.value
    stepper.next_button.click()
    assert sandbox.steps == 2 and stepper.selected == 2


def test_the_history_lists_every_step_since_the_start_with_its_command_outcome_and_why(
    sandbox: Sandbox,
) -> None:
    for _ in range(3):
        sandbox.step()  # before the Stepper exists
    stepper = Stepper(sandbox)
    for _ in range(4):
        stepper.next_button.click()
    rows = re.findall(
        r'<tr data-id="(\d+)"[^>]*><td>\d+</td><td><code>[^<]*</code></td><td>([^<]*)</td>'
        r"<td><code>([^<]*)</code></td><td>(.*?)</td><td>(.*?)</td></tr>",
        stepper.history.html,
    )
    assert [int(r[0]) for r in rows] == list(range(1, 8))
    receipts = sandbox.sql(  # the agents' and the human's, not the bootstrap's services'
        "SELECT kind FROM receipts WHERE actor_id NOT LIKE '%:service:%' ORDER BY position"
    ).to_pylist()
    assert [r[2] for r in rows] == [r["kind"] for r in receipts]  # every step was accepted
    events = sandbox.sql("SELECT kind, event_id FROM events ORDER BY position").to_pylist()
    for (_, _, _, outcome, why), report in zip(rows, sandbox.history, strict=True):
        mine = [e["kind"] for e in events if e["event_id"] in {x["eventId"] for x in report.events}]
        assert outcome == ", ".join(mine) and why  # its Events, and a reason


def test_back_forward_and_a_click_show_a_step_again_as_the_log_had_it(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    for _ in range(10):
        stepper.next_button.click()
    stepper.back_button.click()
    assert stepper.selected == 9 and "<b>Step 9</b>" in stepper.view.value
    stepper.forward_button.click()
    assert stepper.selected == 10 and stepper.forward_button.disabled
    stepper.history.selected = "6"  # what a click on row 6 does
    assert stepper.selected == 6 and "<b>Step 6</b>" in stepper.view.value
    report = sandbox.history[5]
    wid = report.after["workItem"]
    expected = state_at(sandbox, wid, report.log_position)
    assert f'data-state="{expected}"><rect' in stepper.machine.value
    assert re.search(rf'data-state="{expected}"><rect [^>]*stroke="#d62728" stroke-width="3"',
                     stepper.machine.value)  # fmt: skip
    for _ in range(7):
        stepper.back_button.click()
    assert stepper.selected == 1 and stepper.back_button.disabled


def test_the_progress_bar_counts_the_work_items_done_at_the_step_shown(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    assert stepper.progress.max == 3 and stepper.progress.value == 0
    stepper.run_button.click()
    final = sandbox.history[-1].log_position
    assert stepper.progress.value == done_at(sandbox, final) == 3
    for number in (10, 20, 30, 40):
        stepper.history.selected = str(number)
        position = sandbox.history[number - 1].log_position
        assert stepper.progress.value == done_at(sandbox, position), number
    assert "Finished" in stepper.status.value and "approved" in stepper.status.value
    assert stepper.next_button.disabled


def test_every_before_and_after_compares_one_entity(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    stepper.run()
    created = {
        r["work_item_id"]: r["position"]
        for r in sandbox.sql(
            "SELECT work_item_id, position FROM events WHERE kind = 'work.authorized'"
        ).to_pylist()
    }
    checked = 0
    for report in sandbox.history:
        wid = report.command["payload"].get("workItemId")
        exists = wid in created and created[wid] <= report.log_position
        key = "workItem" if exists else "mission"
        assert key in report.after, (report.number, report.kind)
        assert not report.before or report.before[key] == report.after[key]
        first = min((int(e["sequence"]) for e in report.events), default=None)
        if exists and first is not None and report.kind == "work.authorize":
            assert report.before == {}  # it did not exist: not the Mission
            stepper.history.selected = str(report.number)
            assert "<i>did not exist</i>" in stepper.view.value
            assert "urn:mwp-local:mission" not in stepper.view.value.split("mwp-diff")[1]
            checked += 1
        if exists:
            assert report.after["state"] == state_at(sandbox, wid, report.log_position)
    assert checked == 3  # the three WorkItems of learn.toml


def test_the_step_view_marks_what_changed_in_the_work_item(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    for _ in range(50):
        stepper.next_button.click()
        report = stepper.last
        if "workItem" in report.before and report.before["state"] != report.after["state"]:
            break
    assert re.search(
        rf'<tr class="changed"><th>state</th><td>{report.before["state"]}</td>'
        rf"<td>{report.after['state']}</td></tr>",
        stepper.view.value,
    )


def test_the_stepper_lists_the_transitions_the_table_allows(sandbox: Sandbox) -> None:
    stepper = Stepper(sandbox)
    for _ in range(50):  # a WorkItem is touched within the first few steps of learn.toml
        stepper.next_button.click()
        if "workItem" in stepper.last.after:
            break
    state = stepper.last.after["state"]
    assert f"From <b>{state}</b> the table allows" in stepper.allowed.value


def test_the_state_machine_is_drawn_from_the_table_with_the_current_state_outlined() -> None:
    svg = state_machine_svg("queued")
    for state in WorkItemState:
        assert f'data-state="{state}"' in svg
    assert 'stroke="#d62728" stroke-width="3"' in svg
    assert "work.start" in svg  # edge titles come from the table


def test_the_why_of_a_step_is_shown(sandbox: Sandbox) -> None:
    report = sandbox.step()
    assert report is not None and report.why
    assert f"<b>Why:</b> {escape(report.why)}" in report._repr_html_()


# ---------------------------------------------------------------------- static copies


def test_each_widget_leaves_a_static_copy_that_follows_it(
    sandbox: Sandbox, shown: FakeDisplay
) -> None:
    from mwp_local.notebook.graphs import MissionGraph, ProvenanceGraph
    from mwp_local.notebook.sql_console import SqlConsole

    stepper = Stepper(sandbox)
    stepper._ipython_display_()
    assert shown.shown[0] is stepper.widget and "mwp-live" in stepper.widget._dom_classes
    copy = shown.shown[1].data
    assert 'class="mwp mwp-static" data-view="stepper"' in copy and "Press <b>next</b>" in copy
    stepper.next_button.click()
    assert "<b>Step 1</b>" in shown.updates[-1] and "mission.create" in shown.updates[-1]
    graph = MissionGraph(sandbox, stepper=stepper)
    graph._ipython_display_()
    for _ in range(3):
        stepper.next_button.click()
    latest = [u for u in shown.updates if 'data-view="mission-graph"' in u][-1]
    assert latest.count('<g class="node work_item"') == 3  # the graph followed
    sandbox.run()
    for view in (ProvenanceGraph(sandbox), SqlConsole(sandbox), TimeTravel(sandbox, GROUP)):
        view._ipython_display_()
        assert 'class="mwp mwp-static"' in shown.shown[-1].data
        assert "<svg" in shown.shown[-1].data or "<table" in shown.shown[-1].data


# ---------------------------------------------------------------------- graphs


def test_a_mission_graph_before_any_work_item_says_why_it_is_empty(sandbox: Sandbox) -> None:
    from mwp_local.notebook.graphs import MissionGraph

    graph = MissionGraph(sandbox)
    assert "No WorkItem yet" in graph.graph.svg and "0 of 0 WorkItems" in graph.caption.value


def test_a_mission_graph_follows_the_step_the_stepper_shows(sandbox: Sandbox) -> None:
    from mwp_local.notebook.graphs import MissionGraph

    stepper = Stepper(sandbox)
    graph = MissionGraph(sandbox, stepper=stepper)
    stepper.run()
    for number in (3, 8, 20, 47):
        stepper.history.selected = str(number)
        position = sandbox.history[number - 1].log_position
        drawn = dict(re.findall(r'data-id="([^"]+)" data-kind="work_item" data-group="[^"]*" '
                                r'data-mission="[^"]*" data-state="([^"]+)"', graph.graph.svg))  # fmt: skip
        items = sandbox.sql(
            "SELECT DISTINCT work_item_id FROM events WHERE kind = 'work.authorized' "
            "AND position <= $p",
            {"p": position},
        ).to_pylist()
        assert drawn == {r["work_item_id"]: state_at(sandbox, r["work_item_id"], position)
                         for r in items}, number  # fmt: skip


def test_graph_filters_keep_the_chosen_mission_group_or_state(tmp_path: Path) -> None:
    from mwp_local.notebook.graphs import MissionGraph, ProvenanceGraph

    sb = Sandbox(tmp_path / "f", SAMPLES / "flagship.toml", seed=1)
    sb.run()
    authorized = sb.sql(
        "SELECT work_item_id, mission_id, group_id FROM events WHERE kind = 'work.authorized'"
    ).to_pylist()
    missions = sorted({r["mission_id"] for r in authorized})
    assert len(missions) >= 2
    graph = MissionGraph(sb)
    graph.filters.mission.value = missions[1]
    drawn = set(re.findall(r'data-id="([^"]+)" data-kind="work_item"', graph.graph.svg))
    assert drawn == {r["work_item_id"] for r in authorized if r["mission_id"] == missions[1]}
    graph.filters.mission.value = "all"
    group = authorized[0]["group_id"]
    graph.filters.group.value = group
    drawn = set(re.findall(r'data-id="([^"]+)" data-kind="work_item"', graph.graph.svg))
    assert drawn == {r["work_item_id"] for r in authorized if r["group_id"] == group}
    provenance = ProvenanceGraph(sb)
    provenance.filters.state.value = "verified"
    states = {r["work_item_id"]: state_at(sb, r["work_item_id"], 10**9) for r in authorized}
    drawn = set(re.findall(r'data-id="(urn:mwp-local:work:[^"]+)"', provenance.graph.svg))
    assert drawn == {w for w, s in states.items() if s == "verified"}
    sb.close()


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


def test_renderings_escape_what_they_show() -> None:
    assert "<script>" not in rejection_html("X", "<script>alert(1)</script>", None)
    svg = dag_svg([("a", "<b>", "open"), ("b", "b", "verified")], [("a", "b")])
    assert "&lt;b&gt;" in svg and svg.count('<g class="node"') == 2


# ---------------------------------------------------------------------- panels


def test_time_travel_rebuilds_earlier_states_from_the_log(sandbox: Sandbox) -> None:
    sandbox.run()
    travel = TimeTravel(sandbox, GROUP)
    assert "verified" in travel.table.value
    travel.slider.value = 4
    assert "verified" not in travel.table.value and "open" in travel.table.value


def _text(moment: datetime) -> str:
    """A view's TIMESTAMPTZ spelled as the protocol spells timestamps."""
    return format_utc((moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1))


def test_time_travel_names_the_event_at_the_chosen_sequence(sandbox: Sandbox) -> None:
    sandbox.run()
    travel = TimeTravel(sandbox, GROUP)
    for sequence in (1, 7, 12, 30):
        travel.slider.value = sequence
        (row,) = sandbox.sql(
            "SELECT kind, actor_id, occurred_at, event_id FROM events "
            "WHERE group_id = $g AND sequence = $s",
            {"g": GROUP, "s": sequence},
        ).to_pylist()
        shown = travel.event.value
        assert f"<b>Sequence {sequence}</b>: <code>{row['kind']}</code>" in shown
        assert row["event_id"] in shown and _text(row["occurred_at"]) in shown
        assert f"<b>{row['actor_id'].rsplit(':', 1)[-1]}</b>" in shown
    header = re.search(r"<tr>(<th>.*?)</tr>", travel.table.value)
    assert header and header.group(1).count("<th>") == 5  # one cell per column
    assert 'class="mwp-time-table"' in travel.table.value and "div.mwp td" in travel.table.value


def test_the_timeline_draws_one_bar_per_execution_lease_on_a_time_axis(sandbox: Sandbox) -> None:
    from mwp_local.render.timeline import timeline_html

    sandbox.run()
    leases = sandbox.sql(
        "SELECT count(*) AS n, min(issued_at) AS first, "
        "max(coalesce(closed_at, expires_at)) AS last FROM leases WHERE lease_type = 'execution'"
    ).to_pylist()[0]
    html = timeline_html(sandbox.log.store)
    assert html.count('<g class="lease">') == leases["n"] > 0
    assert html.count('<g class="mark">') >= 3  # the checkpoints
    ticks = re.findall(r'<text class="tick"[^>]*>\+(?:(\d+):)?(\d+):(\d\d)</text>', html)
    seconds = [int(h or 0) * 3600 + int(m) * 60 + int(s) for h, m, s in ticks]
    assert seconds[0] == 0 and seconds == sorted(seconds) and len(seconds) >= 3
    span = leases["last"] - leases["first"]  # the view's TIMESTAMPTZ values, as datetimes
    assert seconds[-1] <= span.total_seconds() < seconds[-1] + (seconds[1] - seconds[0])
    assert f"virtual time since {_text(leases['first'])}" in html


def test_the_scheduler_panel_shows_running_work_in_its_slot_and_time_with_a_unit(
    sandbox: Sandbox,
) -> None:
    from mwp_local.render.timeline import find_scheduler, scheduler_panel_html

    seen_running = 0
    for _ in range(60):
        sandbox.step()
        snapshot = find_scheduler(sandbox.runtime("ana").policy).snapshot()
        html = scheduler_panel_html(snapshot, "ana")
        assert "service share" in html
        assert all(g.group_id.rsplit(":", 1)[-1] in html for g in snapshot.groups)
        assert re.search(r"virtual time [\d,.]+ s of service per unit of weight", html)
        for group in snapshot.groups:
            for wid in group.running:
                seen_running += 1
                assert f"running <b>{wid.rsplit(':', 1)[-1]}</b>" in html, html
    assert seen_running > 0


def test_a_run_summary_and_a_restart_draw_themselves(sandbox: Sandbox) -> None:
    summary = sandbox.run(max_steps=20)
    assert "<table>" in summary._repr_html_() and "Stopped" in summary._repr_html_()
    restart = sandbox.restart_agent("ana", delete_local_file=True)
    assert "Worker ana restarted" in restart._repr_html_()


def test_changing_what_the_widgets_hand_out_changes_neither_the_sandbox_nor_their_next_view(
    sandbox: Sandbox,
) -> None:
    """The Stepper's report, a TimeTravel state, a Mission graph's WorkItems and the provenance
    model are values (issue 20 §4): vandalizing them reaches neither the Authority, the agents,
    the log nor what the widget shows next."""
    from mwp_local.notebook.graphs import MissionGraph, ProvenanceGraph
    from tests.sandbox.values import pictures, tables, vandalize

    stepper = Stepper(sandbox)
    for _ in range(30):
        stepper.next_button.click()
    sandbox.run()
    travel = TimeTravel(sandbox, "urn:mwp-local:group:export-button")
    mission = MissionGraph(sandbox)
    graph = ProvenanceGraph(sandbox)
    before = pictures(sandbox)
    earlier = tables(travel.state_at(6))
    table = travel.table.value
    drawn = mission.graph.svg
    model = graph.model
    vandalize(stepper.last)
    vandalize(stepper.reports)
    vandalize(travel.state_at(6))
    vandalize(mission.items)
    for manifest in model.manifests.values():
        vandalize(manifest)
    for cited in model.evidence.values():
        vandalize(cited)
    assert pictures(sandbox) == before
    assert tables(travel.state_at(6)) == earlier
    travel.show(travel.slider.value)
    assert travel.table.value == table
    mission.refresh()
    assert mission.graph.svg == drawn
    graph.refresh()
    assert all("vandalized" not in m for m in graph.model.manifests.values())
