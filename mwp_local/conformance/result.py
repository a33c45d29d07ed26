"""The outcome of running one official bundle: a line per evaluation and a score."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class EvaluationResult:
    """One vector or evaluation: its identifier, whether it matched, and what was seen."""

    id: str
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class BundleResult:
    """A bundle's score (``passed``/``total``), its failures in words, and every evaluation."""

    name: str
    passed: int
    total: int
    failures: list[str] = field(default_factory=list)
    evaluations: list[EvaluationResult] = field(default_factory=list)

    @classmethod
    def from_evaluations(
        cls, name: str, evaluations: list[EvaluationResult], extra_failures: list[str] | None = None
    ) -> BundleResult:
        """Score a list of evaluations; ``extra_failures`` covers bundle-level checks."""
        failures = [f"{e.id}: {e.detail}" for e in evaluations if not e.ok]
        failures.extend(extra_failures or [])
        return cls(
            name=name,
            passed=sum(1 for e in evaluations if e.ok),
            total=len(evaluations),
            failures=failures,
            evaluations=evaluations,
        )
