"""Charts of the analysis queries (docs/sql.md), for notebooks: matplotlib figures.

Each function takes the Arrow table of one analysis query (``views.ANALYSES``) and returns a
``Chart``: a matplotlib figure that a notebook shows as a static PNG image (``_repr_png_``,
whatever the matplotlib backend), so it renders in JupyterLab, in a saved notebook and in
nbconvert's HTML with no network and no JavaScript.
matplotlib is imported here and only when a chart is drawn (the ``plots`` extra); the figures
are drawn on their own canvas, never through pyplot's global state.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

__all__ = [
    "CHART_OF",
    "Chart",
    "comparison",
    "declines_by_reason",
    "state_durations",
    "worker_load",
]


class Chart:
    """A drawn chart: ``figure`` is the matplotlib Figure; shows as PNG in a notebook."""

    def __init__(self, figure: Any) -> None:
        self.figure = figure

    def png(self) -> bytes:
        """The chart as PNG bytes."""
        import io

        buffer = io.BytesIO()
        self.figure.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

    def svg(self) -> str:
        """The chart as SVG text."""
        import io

        buffer = io.StringIO()
        self.figure.savefig(buffer, format="svg")
        return buffer.getvalue()

    def _repr_png_(self) -> bytes:
        return self.png()


def _figure(width: float = 7.0, height: float = 3.2) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _short(identifier: Any) -> str:
    return str(identifier).rsplit(":", 1)[-1]


def _minutes(value: timedelta | None) -> float:
    return 0.0 if value is None else value / timedelta(minutes=1)


def _interval(value: Any) -> timedelta | None:
    """A duration as a timedelta: a timedelta, or a DuckDB ``INTERVAL`` as Arrow gives it
    (``MonthDayNano``: months, days, nanoseconds); None for anything else."""
    if isinstance(value, timedelta):
        return value
    if all(hasattr(value, a) for a in ("months", "days", "nanoseconds")):
        if value.months:
            raise ValueError(f"a duration of {value.months} months has no fixed length in minutes")
        return timedelta(days=value.days, microseconds=value.nanoseconds / 1000)
    return None


def state_durations(table: Any) -> Chart:
    """Mean and longest stay per WorkItem state (the ``time_per_state`` analysis)."""
    rows = table.to_pylist()
    figure, ax = _figure()
    states = [r["state"] for r in rows]
    ax.barh(states, [_minutes(r["longest"]) for r in rows], color="#c6dbef", label="longest")
    ax.barh(states, [_minutes(r["mean"]) for r in rows], color="#2171b5", label="mean")
    for y, r in enumerate(rows):
        ax.annotate(f"{r['stays']} stays", (_minutes(r["longest"]), y), xytext=(4, 0),
                    textcoords="offset points", va="center", fontsize=8)  # fmt: skip
    ax.invert_yaxis()
    ax.set_xlabel("minutes in the state")
    ax.set_title("Time per WorkItem state")
    ax.legend(loc="lower right", fontsize=8)
    return Chart(figure)


def worker_load(table: Any) -> Chart:
    """Executions running at once, per Worker, over time (the ``concurrent_executions``
    analysis: a step line per Worker)."""
    lines: dict[str, tuple[list[Any], list[int]]] = {}
    for r in table.to_pylist():
        times, counts = lines.setdefault(_short(r["worker"]), ([], []))
        times.append(r["changed_at"])
        counts.append(r["running"])
    figure, ax = _figure(height=3.6)
    for worker, (times, counts) in sorted(lines.items()):
        ax.step(times, counts, where="post", label=worker)
    ax.set_ylabel("executions running")
    ax.set_title("Worker load over time")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.legend(fontsize=8, ncols=min(len(lines), 4) or 1)
    ax.set_ylim(bottom=0)
    figure.autofmt_xdate()
    return Chart(figure)


def declines_by_reason(table: Any) -> Chart:
    """Declined offers per structured reason, stacked by Worker (the ``declines_by_reason``
    analysis)."""
    counts: dict[str, dict[str, int]] = {}
    for r in table.to_pylist():
        counts.setdefault(str(r["decline_reason"]), {})[_short(r["agent_id"])] = r["declines"]
    figure, ax = _figure()
    reasons = sorted(counts, key=lambda reason: -sum(counts[reason].values()))
    workers = sorted({w for per in counts.values() for w in per})
    left = [0] * len(reasons)
    for worker in workers:
        widths = [counts[reason].get(worker, 0) for reason in reasons]
        ax.barh(reasons, widths, left=left, label=worker)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    if not reasons:
        ax.text(0.5, 0.5, "no declines in this log", ha="center", transform=ax.transAxes)
    ax.invert_yaxis()
    ax.set_xlabel("declined offers")
    ax.set_title("Declines by reason")
    if workers:
        ax.legend(fontsize=8)
    return Chart(figure)


def comparison(table: Any, by: str = "strategy", title: str = "Compared") -> Chart:
    """One small bar chart per measure, a bar per row: runs compared side by side.

    ``table`` has a label column ``by`` (one row per run, e.g. per strategy) and a column per
    measure: numbers, or durations (drawn in minutes). Any query of that shape will do, such
    as one over several logs attached to one DuckDB connection (notebook 09).
    """
    rows = table.to_pylist()
    if not rows or by not in rows[0]:
        raise ValueError(f"comparison needs a table with a {by!r} column and one row per run")
    measures = [name for name in rows[0] if name != by]
    labels = [str(r[by]) for r in rows]
    figure = _figure(width=2.4 * max(len(measures), 1) + 1, height=2.8)[0]
    figure.clear()  # _figure's single axes: replaced by one per measure
    axes = figure.subplots(1, max(len(measures), 1), squeeze=False)[0]
    colours = ["#2171b5", "#fd8d3c", "#74c476", "#9e9ac8"]
    for ax, name in zip(axes, measures, strict=False):
        durations = any(_interval(r[name]) is not None for r in rows)
        values = [_minutes(_interval(r[name])) if durations else float(r[name] or 0) for r in rows]
        ax.bar(labels, values, color=[colours[n % len(colours)] for n in range(len(rows))])
        for x, value in enumerate(values):
            text = f"{value:.1f}" if durations else f"{value:.0f}"
            ax.annotate(text, (x, value), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=8)  # fmt: skip
        ax.set_title(name.replace("_", " ") + (" (minutes)" if durations else ""), fontsize=9)
        ax.set_ylim(bottom=0, top=max([*values, 1.0]) * 1.2)
        ax.tick_params(axis="x", labelsize=8)
        if not durations:
            ax.yaxis.get_major_locator().set_params(integer=True)
    figure.suptitle(title)
    return Chart(figure)


#: Which analysis each chart draws.
CHART_OF: Mapping[str, Any] = {
    "time_per_state": state_durations,
    "concurrent_executions": worker_load,
    "declines_by_reason": declines_by_reason,
}
