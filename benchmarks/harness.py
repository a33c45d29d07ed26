"""What a benchmark figure is, how its repetitions are summarized, and how results are shown.

Owns :class:`Entry` (one measured figure: its repetitions, the same-run ceiling it is compared
with, its target and whether the target is met), :class:`Target`, the table printed at the end
of a run and the ``results.json`` document. It measures nothing itself and never asserts speed:
the targets are reported, not enforced.

Every figure is the median of its repetitions, because this machine (2 cores, shared) is noisy;
min and max are kept so a reader can see the spread. A *ceiling* is what the same work costs
when done with the raw building blocks (canonical JSON, pynacl, hashlib, DuckDB) in the same
run; ``ratio`` is ``median / ceiling median`` and means "how close to the ceiling" for rates,
"how many times the reference" for times.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOISE_NOTE = (
    "This machine has 2 cores and is shared and noisy: every figure is the median of its "
    "repetitions (min-max beside it), and every ratio compares with a ceiling measured in the "
    "same run. Differences below ~15% between runs are noise."
)


@dataclass(frozen=True, slots=True)
class Measure:
    """Repetitions of one quantity."""

    name: str
    unit: str
    values: tuple[float, ...]

    @property
    def median(self) -> float:
        """The median repetition."""
        return statistics.median(self.values)

    def to_json(self) -> dict[str, Any]:
        """The summary written to ``results.json``."""
        return {
            "name": self.name,
            "unit": self.unit,
            "median": _round(self.median),
            "min": _round(min(self.values)),
            "max": _round(max(self.values)),
            "repetitions": len(self.values),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """A target from the issue: bounds on the median and/or on the ratio to the ceiling."""

    text: str
    at_least: float | None = None
    at_most: float | None = None
    ratio_at_least: float | None = None
    ratio_at_most: float | None = None

    def met(self, median: float, ratio: float | None) -> bool:
        """Whether every bound holds (a ratio bound without a ratio does not hold)."""
        checks = []
        if self.at_least is not None:
            checks.append(median >= self.at_least)
        if self.at_most is not None:
            checks.append(median <= self.at_most)
        if self.ratio_at_least is not None:
            checks.append(ratio is not None and ratio >= self.ratio_at_least)
        if self.ratio_at_most is not None:
            checks.append(ratio is not None and ratio <= self.ratio_at_most)
        return all(checks)


@dataclass(kw_only=True)
class Entry:
    """One figure of the report: measured, or pending with the reason."""

    figure: str
    name: str
    unit: str
    values: Sequence[float] = ()
    ceiling: Measure | None = None
    target: Target | None = None
    #: What the ratio means for this figure (shown in ``results.json``).
    ratio_meaning: str | None = None
    notes: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    pending: str | None = None

    @property
    def measure(self) -> Measure:
        """The figure's repetitions."""
        return Measure(self.name, self.unit, tuple(self.values))

    @property
    def ratio(self) -> float | None:
        """``median / ceiling median``, when there is a ceiling."""
        if self.pending or self.ceiling is None or not self.values:
            return None
        base = self.ceiling.median
        return self.measure.median / base if base else None

    @property
    def met(self) -> bool | None:
        """Whether the target is met (``None`` without a target or while pending)."""
        if self.pending or self.target is None or not self.values:
            return None
        return self.target.met(self.measure.median, self.ratio)

    def to_json(self) -> dict[str, Any]:
        """The entry as written to ``results.json``."""
        doc: dict[str, Any] = {"figure": self.figure}
        if self.pending:
            doc.update(name=self.name, unit=self.unit, status="pending", reason=self.pending)
            doc.update(median=None, min=None, max=None, repetitions=0)
            return doc
        doc.update(self.measure.to_json())
        doc["status"] = "measured"
        doc["samples"] = [_round(v) for v in self.values]
        if self.ceiling is not None:
            doc["ceiling"] = self.ceiling.to_json()
            ratio = self.ratio
            doc["ratio"] = None if ratio is None else round(ratio, 4)
            doc["ratio_meaning"] = self.ratio_meaning
        # Every entry says whether it has a target and whether it is met (null: no target).
        doc["target"] = None if self.target is None else self.target.text
        doc["met"] = self.met
        if self.parameters:
            doc["parameters"] = self.parameters
        if self.notes:
            doc["notes"] = self.notes
        return doc


def _round(value: float) -> float:
    if value == 0 or abs(value) >= 100:
        return round(value, 1)
    return float(f"{value:.4g}")


def repeat(times: int, run: Callable[[], float]) -> list[float]:
    """Call ``run`` ``times`` times and return what each call measured."""
    return [run() for _ in range(times)]


class Stopwatch:
    """Accumulates the seconds spent inside ``with`` blocks."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> Stopwatch:
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds += time.perf_counter() - self._started


# ------------------------------------------------------------------ output


def _number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        text = f"{value:,.0f}"
    elif abs(value) >= 100:
        text = f"{value:.0f}"
    elif abs(value) >= 10:
        text = f"{value:.1f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def table_rows(entries: Sequence[Entry]) -> list[list[str]]:
    """The rows of the printed table (also used for benchmarks/README.md)."""
    rows = []
    for e in entries:
        if e.pending:
            rows.append([e.figure, e.name, "pending", "", e.unit, "", "", "", "-", e.pending])
            continue
        m = e.measure
        ratio = e.ratio
        met = e.met
        rows.append(
            [
                e.figure,
                e.name,
                _number(m.median),
                f"{_number(min(m.values))}–{_number(max(m.values))}",
                e.unit,
                str(len(m.values)),
                "" if e.ceiling is None else _number(e.ceiling.median, e.ceiling.unit),
                "" if ratio is None else f"{ratio:.2f}",
                "" if e.target is None else e.target.text,
                "" if met is None else ("met" if met else "MISSED"),
            ]
        )
    return rows


HEADER = ["fig", "figure", "median", "min–max", "unit", "reps", "ceiling", "ratio", "target", ""]


def render_table(entries: Sequence[Entry]) -> str:
    """A plain-text table of every entry."""
    rows = [HEADER, *table_rows(entries)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = []
    for n, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in lines)


def markdown_from_results(doc: dict[str, Any]) -> str:
    """The benchmarks/README.md table of a ``results.json`` document."""
    lines = [
        "| fig | figure | median | min–max | unit | reps | ceiling | ratio | target | met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for e in doc["entries"]:
        if e["status"] == "pending":
            cells = [e["figure"], e["name"], "pending", "", e["unit"], "", "", "", "", e["reason"]]
        else:
            ceiling = e.get("ceiling")
            met = e.get("met")
            cells = [
                e["figure"],
                e["name"],
                _number(e["median"]),
                f"{_number(e['min'])}–{_number(e['max'])}",
                e["unit"],
                str(e["repetitions"]),
                "" if ceiling is None else f"{_number(ceiling['median'], ceiling['unit'])}",
                "" if e.get("ratio") is None else f"{e['ratio']:.2f}",
                e.get("target") or "",
                "" if met is None else ("met" if met else "**missed**"),
            ]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def load_average() -> float | None:
    """The 1-minute load average (how busy the machine was), where the OS tells it."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine(load: Sequence[float | None] = ()) -> dict[str, Any]:
    """What the run was measured on, with the load averages sampled during the run."""
    import duckdb

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "duckdb": duckdb.__version__,
        "load_average_1min": [v for v in load if v is not None],
    }


def write_results(
    path: Path,
    entries: Sequence[Entry],
    *,
    quick: bool,
    seconds: float,
    load: Sequence[float | None] = (),
) -> None:
    """Write ``results.json``: the run's context and one object per entry."""
    doc = {
        "format": "mwp_local benchmark results",
        "version": 1,
        "quick": quick,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_seconds": round(seconds, 1),
        "machine": machine(load),
        "noise": NOISE_NOTE,
        "entries": [e.to_json() for e in entries],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
