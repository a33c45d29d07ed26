"""The proof-of-concept report: canonical JSON (RFC 8785) and a table for people.

The JSON report names every check with its verdict, title, section and evidence, and a summary;
``ok`` is true only when every check passed. The Markdown list of checks in ``docs/poc.md`` is
generated here from the check table (``render_markdown``), and a test keeps them equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..protocol.jcs import canonicalize
from .checks import Result, all_checks
from .scenario import ScenarioRun


def report_document(results: Sequence[Result], run: ScenarioRun | None = None) -> dict[str, Any]:
    """The report as a JSON-ready document."""
    failed = sorted(r.name for r in results if not r.ok)
    doc: dict[str, Any] = {
        "report": "mwp-local proof of concept (MWP 0.1 §22)",
        "ok": not failed,
        "summary": {"total": len(results), "passed": len(results) - len(failed), "failed": failed},
        "checks": {r.name: r.to_json() for r in results},
    }
    if run is not None:
        doc["run"] = {
            "directory": str(run.directory),
            "mode": run.mode,
            "seed": run.seed,
            "steps": run.steps,
            "finished": run.finished,
            # RFC 8785 numbers: keep the wall time as whole milliseconds.
            "wallMilliseconds": int(run.wall_seconds * 1000),
        }
    return doc


def canonical_report(results: Sequence[Result], run: ScenarioRun | None = None) -> bytes:
    """The report in RFC 8785 canonical form (sorted keys, no insignificant whitespace)."""
    return canonicalize(report_document(results, run))


def table(results: Sequence[Result]) -> str:
    """A plain-text table: verdict, name, evidence."""
    width = max((len(r.name) for r in results), default=10)
    lines = [f"{'':4}  {'check':{width}}  evidence", f"{'':4}  {'-' * width}  --------"]
    for r in results:
        lines.append(f"{'PASS' if r.ok else 'FAIL'}  {r.name:{width}}  {r.evidence}")
    passed = sum(r.ok for r in results)
    lines.append(f"{passed}/{len(results)} checks passed")
    return "\n".join(lines)


def render_markdown() -> str:
    """The list of checks in ``docs/poc.md``, generated from the check table."""
    lines = ["| check | what the log must show | section |", "| --- | --- | --- |"]
    for name, c in all_checks().items():
        lines.append(f"| `{name}` | {c.title} | {c.section} |")
    return "\n".join(lines) + "\n"


__all__ = ["canonical_report", "render_markdown", "report_document", "table"]
