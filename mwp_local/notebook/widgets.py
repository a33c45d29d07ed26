"""Widgets for a step-mode Sandbox: the Stepper and TimeTravel (ipywidgets, imported here and
only here).

Widgets compose ipywidgets rather than subclass them (trait names such as ``value`` or
``layout`` would clash) and read frozen values: the ``StepReport`` of every step, and the log
replayed to a point (``replay.LogReplay``). Each leaves a static copy of its current state in
the output (``static.StaticCopy``), so saved notebooks and HTML exports show it. They work
without a browser: tests click their buttons and read their HTML.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from html import escape
from typing import Any

import ipywidgets as w

from ..protocol.tables import WORK_ITEM_TABLE
from ..render.html import STYLE, history_html, step_html, summary_html
from ..render.svg import allowed_transitions_html, state_machine_svg
from .clickable import ClickableRows
from .replay import LogReplay
from .static import StaticCopy

_TERMINAL = frozenset(str(s) for s in WORK_ITEM_TABLE.terminal)

#: What a view following the Stepper is told: the selected step (None before any) and the log
#: position to draw (how many Events to replay).
Follower = Callable[[Any, int], None]


def _short(identifier: Any) -> str:
    return str(identifier or "").rsplit(":", 1)[-1]


def _item_of(document: Mapping[str, Any]) -> str | None:
    """The WorkItem an Event is about, if any."""
    payload = document.get("payload", {})
    found = payload.get("workItemId") or (payload.get("workItem") or {}).get("workItemId")
    return str(found) if found else None


class Stepper:
    """Step through a Mission: "next" performs one agent action; the history lists every step
    since the start (Command, outcome, why), a click on a row or "back"/"forward" shows that
    step again, redrawn from the log; "run to the end" finishes the run."""

    def __init__(self, sandbox: Any) -> None:
        self.sandbox = sandbox
        self.replay = LogReplay(sandbox)
        self.back_button = w.Button(description="◀ back", tooltip="show the step before")
        self.forward_button = w.Button(description="forward ▶", tooltip="show the step after")
        self.next_button = w.Button(
            description="next",
            tooltip="perform one more agent action",
            # the main action, dark enough for white text in every theme (primary's blue is not)
            style={"button_color": "#0d47a1", "text_color": "#ffffff", "font_weight": "bold"},
        )
        self.run_button = w.Button(description="run to the end")
        self.progress = w.IntProgress(
            min=0,
            max=max(self._planned(), 1),
            description="WorkItems done",
            style={"description_width": "initial"},
        )
        self.position = w.HTML()
        self.history = ClickableRows()
        self.history.add_class("mwp-step-history")
        self.status = w.HTML()
        self.view = w.HTML()
        self.view.add_class("mwp-step")
        self.machine = w.HTML(state_machine_svg())
        self.allowed = w.HTML(allowed_transitions_html(None))
        self.back_button.on_click(lambda _b: self.back())
        self.forward_button.on_click(lambda _b: self.forward())
        self.next_button.on_click(lambda _b: self.next())
        self.run_button.on_click(lambda _b: self.run())
        self.history.observe(self._clicked, names="selected")
        self.widget = w.VBox(
            [
                w.HBox(
                    [
                        self.back_button,
                        self.forward_button,
                        self.next_button,
                        self.run_button,
                        self.progress,
                    ]
                ),
                self.position,
                self.history,
                self.status,
                self.view,
                self.machine,
                self.allowed,
            ]
        )
        self.widget.add_class("mwp-stepper")
        self.static = StaticCopy("stepper", self.static_html)
        self.followers: list[Follower] = []
        #: The number of the step shown (None before the first step).
        self.selected: int | None = None
        self.last: Any = None
        self.finished = False
        self._seen = 0  # how many steps there were when last drawn
        self.refresh()

    # ------------------------------------------------------------------ reading

    @property
    def reports(self) -> list[Any]:
        """The report of every step since the start, in order (the Sandbox keeps them)."""
        return list(self.sandbox.history)

    def report(self, number: int | None) -> Any:
        """The report of step ``number`` (None: none)."""
        reports = self.reports
        if number is None or not 1 <= number <= len(reports):
            return None
        return reports[number - 1]

    def _planned(self) -> int:
        spec = getattr(self.sandbox, "spec", None)
        planned = sum(len(m.work) for m in spec.missions) if spec is not None else 0
        return max(planned, len(self.sandbox.log.state.work_items))

    # ------------------------------------------------------------------ actions

    def next(self) -> Any:
        """Perform one step and show it (None at the end)."""
        report = self.sandbox.step()
        self.last = report
        if report is None:
            self.finished = True
            self.status.value = summary_html(self.sandbox.summary())
            self.next_button.disabled = self.run_button.disabled = True
            self._show()
            return None
        self.select(report.number)
        return report

    def run(self, max_steps: int = 10_000) -> Any:
        """Run to the end (the progress bar counts WorkItems done as it goes); then show the
        summary and select the last step."""

        def tick(step: int, _report: Any) -> None:
            if step % 10 == 0:
                items = self.sandbox.log.state.work_items.values()
                self.progress.max = max(self._planned(), 1)
                self.progress.value = sum(1 for i in items if str(i.state) in _TERMINAL)

        summary = self.sandbox.run(max_steps=max_steps, progress=tick)
        self.finished = summary.finished
        self.status.value = summary_html(summary)
        self.next_button.disabled = self.run_button.disabled = summary.finished
        reports = self.reports
        self.last = reports[-1] if reports else None
        self.select(reports[-1].number if reports else None)
        return summary

    def back(self) -> Any:
        """Show the step before the one shown."""
        if self.selected is not None and self.selected > 1:
            self.select(self.selected - 1)
        return self.report(self.selected)

    def forward(self) -> Any:
        """Show the step after the one shown (in the history; "next" performs a new one)."""
        if self.selected is not None and self.selected < len(self.reports):
            self.select(self.selected + 1)
        return self.report(self.selected)

    def refresh(self) -> None:
        """Take in steps performed elsewhere (``sandbox.step()`` in another cell): the latest
        is shown if the latest was."""
        reports = self.reports
        if reports and (self.selected is None or self.selected == self._seen):
            self.select(reports[-1].number)
        else:
            self._show()

    def select(self, number: int | None) -> None:
        """Show step ``number`` of the history (the views following the Stepper follow)."""
        self.selected = number
        if number is not None:
            self.history.selected = str(number)
        self._show()

    def follow(self, follower: Follower) -> None:
        """Call ``follower(report, log_position)`` now and whenever another step is shown."""
        self.followers.append(follower)
        report = self.report(self.selected)
        follower(report, report.log_position if report is not None else self._position())

    def _clicked(self, change: dict[str, Any]) -> None:
        try:
            number = int(change["new"])
        except (TypeError, ValueError):
            return
        if number != self.selected:
            self.select(number)

    def _position(self) -> int:
        return int(self.sandbox.log.store.event_count())

    # ------------------------------------------------------------------ drawing

    def _show(self) -> None:
        reports = self.reports
        report = self.report(self.selected)
        count = self._seen = len(reports)
        self.back_button.disabled = self.selected is None or self.selected <= 1
        self.forward_button.disabled = self.selected is None or self.selected >= count
        position = report.log_position if report is not None else self._position()
        state = self.replay.state_at(position)
        done = sum(1 for i in state.work_items.values() if str(i.state) in _TERMINAL)
        planned = max(self._planned(), 1)
        self.progress.max = planned
        self.progress.value = min(done, planned)
        self.progress.bar_style = "success" if done >= planned else ""
        self.position.value = self._position_html(report, count, done, planned)
        self.history.html = f'{STYLE}<div class="mwp">{history_html(reports, self.selected)}</div>'
        if report is None:
            self.view.value = (
                f'{STYLE}<div class="mwp"><i>Press <b>next</b> to perform the first agent '
                "action.</i></div>"
            )
            self.machine.value = state_machine_svg()
            self.allowed.value = allowed_transitions_html(None)
        else:
            self.view.value = step_html(report)
            subject = report.subject
            current = report.after.get("state") if subject and subject[0] == "workItem" else None
            self.machine.value = state_machine_svg(current)
            self.allowed.value = allowed_transitions_html(current)
        for follower in self.followers:
            follower(report, position)
        self.static.update()

    def _position_html(self, report: Any, count: int, done: int, planned: int) -> str:
        where = (
            f"Step <b>{report.number}</b> of {count}" if report is not None else f"{count} steps"
        )
        latest = "" if report is None or report.number == count else " (an earlier step)"
        return (
            f'{STYLE}<div class="mwp mwp-position">{where}{latest} · {done} of {planned} '
            "WorkItems done · click a row of the history, or ◀ back / forward ▶, to see a "
            "step again</div>"
        )

    def static_html(self) -> str:
        """What the Stepper shows now, as HTML (its static copy)."""
        return (
            f"{self.position.value}{self.history.html}{self.status.value}{self.view.value}"
            f"{self.machine.value}{self.allowed.value}"
        )

    def _ipython_display_(self) -> None:
        self.static.display(self.widget)


class TimeTravel:
    """A slider over a Group's sequence: the Event at that sequence, and every WorkItem's
    state, owner, Ownership Epoch and Execution Lease just after it, rebuilt from the log by
    replay."""

    def __init__(self, sandbox: Any, group_id: str) -> None:
        self.sandbox = sandbox
        self.group_id = group_id
        self.replay = LogReplay(sandbox)
        self.events = [d for d in self.replay.documents() if d.get("groupId") in (None, group_id)]
        self.group_events = {
            int(d["sequence"]): d for d in self.events if d.get("groupId") == group_id
        }
        last = max(self.group_events, default=0)
        self.slider = w.IntSlider(min=0, max=last, value=last, description="sequence")
        self.back_button = w.Button(description="◀", tooltip="the Event before")
        self.forward_button = w.Button(description="▶", tooltip="the Event after")
        self.event = w.HTML()
        self.event.add_class("mwp-time-event")
        self.table = w.HTML()
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        self.back_button.on_click(lambda _b: self._move(-1))
        self.forward_button.on_click(lambda _b: self._move(+1))
        self.widget = w.VBox(
            [w.HBox([self.back_button, self.slider, self.forward_button]), self.event, self.table]
        )
        self.widget.add_class("mwp-time-travel")
        self.static = StaticCopy("time-travel", lambda: self.event.value + self.table.value)
        self.show(last)

    def _move(self, by: int) -> None:
        self.slider.value = max(self.slider.min, min(self.slider.max, self.slider.value + by))

    def state_at(self, sequence: int) -> Any:
        """The state after the Group's Event ``sequence`` (replayed from the log)."""
        return self.replay.state_at(self.replay.position_of_sequence(self.group_id, sequence))

    def event_html(self, sequence: int) -> str:
        """Which Event is at ``sequence``: its kind, actor, time and WorkItem, the payload one
        click away."""
        doc = self.group_events.get(sequence)
        if doc is None:
            return (
                f'{STYLE}<div class="mwp"><b>Sequence 0</b>: before the Group\'s first Event '
                "(only Organization Events so far)</div>"
            )
        payload = doc.get("payload", {})
        item = _item_of(doc)
        return (
            f'{STYLE}<div class="mwp"><b>Sequence {sequence}</b>: <code>{escape(doc["kind"])}'
            f"</code> by <b>{escape(_short(doc.get('actor', {}).get('id')))}</b> at "
            f"<code>{escape(doc.get('occurredAt', ''))}</code>"
            + (f" on WorkItem <b>{escape(_short(item))}</b>" if item else "")
            + f" <small>(Event {escape(doc['eventId'])})</small>"
            + "<details><summary>payload</summary><pre>"
            + escape(json.dumps(payload, indent=1))
            + "</pre></details></div>"
        )

    def show(self, sequence: int) -> None:
        """Render the Event and the table for ``sequence``."""
        state = self.state_at(sequence)
        touched = _item_of(self.group_events.get(sequence, {}))
        mark = ' class="changed"'
        rows = "".join(
            f"<tr{mark if i.work_item_id == touched else ''}>"
            f"<td>{escape(_short(i.work_item_id))}</td><td>{escape(str(i.state))}</td>"
            f"<td>{escape(_short((i.owner or {}).get('agentId'))) or '—'}</td>"
            f"<td>{i.ownership_epoch}</td>"
            f'<td title="{escape(i.execution_lease_id or "")}">'
            f"{escape((i.execution_lease_id or '—')[-12:])}</td></tr>"
            for i in sorted(state.work_items.values(), key=lambda i: i.work_item_id)
            if i.group_id == self.group_id
        )
        self.event.value = self.event_html(sequence)
        self.table.value = (
            f'{STYLE}<div class="mwp"><table class="mwp-time-table"><tr><th>WorkItem</th>'
            "<th>state</th><th>owner</th><th>Ownership Epoch</th><th>Execution Lease</th></tr>"
            f"{rows or '<tr><td colspan=5><i>no WorkItem yet</i></td></tr>'}</table></div>"
        )
        self.back_button.disabled = sequence <= self.slider.min
        self.forward_button.disabled = sequence >= self.slider.max
        self.static.update()

    def _ipython_display_(self) -> None:
        self.static.display(self.widget)
