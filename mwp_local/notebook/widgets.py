"""Widgets for a step-mode Sandbox (ipywidgets, imported here and only here).

Widgets compose ipywidgets rather than subclass them (trait names such as ``value`` or
``layout`` would clash) and read frozen values: a ``StepReport``, a replay of the log. They work
without a browser: tests click their buttons and read their HTML.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from ..authority.evolve import evolve
from ..authority.state import AuthorityState
from ..protocol.jsontext import parse_strict
from ..render.html import step_html, summary_html
from ..render.svg import allowed_transitions_html, state_machine_svg


class Stepper:
    """ "next" performs one agent action and shows it; "run to the end" finishes the run."""

    def __init__(self, sandbox: Any) -> None:
        self.sandbox = sandbox
        self.next_button = w.Button(description="next", button_style="primary")
        self.run_button = w.Button(description="run to the end")
        self.view = w.HTML("<i>Press next to perform the first agent action.</i>")
        self.machine = w.HTML(state_machine_svg())
        self.allowed = w.HTML(allowed_transitions_html(None))
        self.progress = w.IntProgress(min=0, max=1, description="steps")
        self.next_button.on_click(lambda _b: self.next())
        self.run_button.on_click(lambda _b: self.run())
        self.view.add_class("mwp-step")
        self.widget = w.VBox(
            [
                w.HBox([self.next_button, self.run_button, self.progress]),
                self.view,
                self.machine,
                self.allowed,
            ]
        )
        self.widget.add_class("mwp-stepper")
        self.last: Any = None

    def next(self) -> Any:
        """Perform one step and show it (None at the end)."""
        report = self.sandbox.step()
        self.last = report
        if report is None:
            self.view.value = summary_html(self.sandbox.summary())
            self.next_button.disabled = True
            return None
        self.view.value = step_html(report)
        state = report.after.get("state") if "workItem" in report.after else None
        self.machine.value = state_machine_svg(state)
        self.allowed.value = allowed_transitions_html(state)
        return report

    def run(self, max_steps: int = 10_000) -> Any:
        """Run to the end with a progress bar; show the summary."""
        self.progress.max = max_steps

        def tick(step: int, _report: Any) -> None:
            self.progress.value = min(step, max_steps)

        summary = self.sandbox.run(max_steps=max_steps, progress=tick)
        self.progress.max = max(self.progress.value, 1)  # the bar ends full
        self.view.value = summary_html(summary)
        self.next_button.disabled = True
        return summary

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]


class TimeTravel:
    """A slider over a Group's sequence showing every WorkItem's state, owner, epoch and lease
    at that point, rebuilt from the log by replay."""

    def __init__(self, sandbox: Any, group_id: str) -> None:
        self.sandbox = sandbox
        self.group_id = group_id
        self.events = [
            parse_strict(e.document)
            for e in sandbox.log.store.events()
            if e.group_id in (None, group_id)
        ]
        last = max((e.get("sequence", 0) for e in self.events if e.get("groupId")), default=0)
        self.slider = w.IntSlider(min=0, max=last, value=last, description="sequence")
        self.table = w.HTML()
        self.slider.observe(lambda change: self.show(change["new"]), names="value")
        self.widget = w.VBox([self.slider, self.table])
        self.widget.add_class("mwp-time-travel")
        self.show(last)

    def state_at(self, sequence: int) -> AuthorityState:
        """The state after the Group's Event ``sequence`` (replayed from the log)."""
        org = self.sandbox.log.org
        state = AuthorityState(registry=org.registry(), organization_id=org.organization_id)
        for event in self.events:
            if event.get("groupId") == self.group_id and event["sequence"] > sequence:
                break
            evolve(state, event)
        return state

    def show(self, sequence: int) -> None:
        """Render the table for ``sequence``."""
        state = self.state_at(sequence)
        rows = "".join(
            f"<tr><td>{i.work_item_id.rsplit(':', 1)[-1]}</td><td>{i.state}</td>"
            f"<td>{(i.owner or {}).get('agentId', '').rsplit(':', 1)[-1]}</td>"
            f"<td>{i.ownership_epoch}</td><td>{(i.execution_lease_id or '')[-12:]}</td></tr>"
            for i in sorted(state.work_items.values(), key=lambda i: i.work_item_id)
            if i.group_id == self.group_id
        )
        self.table.value = (
            "<table><tr><th>WorkItem</th><th>state</th><th>owner</th><th>Ownership Epoch</th>"
            f"<th>Execution Lease</th></tr>{rows}</table>"
        )

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)  # type: ignore[no-untyped-call]
