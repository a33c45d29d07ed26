"""Deterministic checks for the Coordinator's review (§13.2 step 2): a registry of named,
versioned check functions.

Owns ``CheckRegistry`` (schema checks, tests, business rules, policy checks, each registered under
a name with the Evidence kind it yields and, optionally, the acceptance criteria it is limited
to), the ``ReviewInput`` a check sees (the submitted WorkItem and its Artifacts, read through a
``ContentSource`` that verifies every read) and ``DEFAULT_CHECKS`` with the built-in
``json-well-formed`` check. A check is a pure function of its input returning a ``CheckOutcome``
(result, method, structured details without private reasoning) or ``None`` when it does not
apply. Which checks run for a submission is decided by the criteria: a check runs for every
criterion whose ``evidenceRequired`` names its Evidence kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..authority.model import WorkItemRecord
from ..protocol.documents import EvidenceResult, EvidenceType
from ..protocol.errors import ProtocolError
from ..protocol.jsontext import parse_strict
from .evidence import ensure_no_private_reasoning

__all__ = [
    "DEFAULT_CHECKS",
    "DETERMINISTIC_TYPES",
    "Check",
    "CheckFn",
    "CheckOutcome",
    "CheckRegistry",
    "ContentSource",
    "ReviewInput",
    "is_json",
]

E = EvidenceType
R = EvidenceResult

#: Evidence kinds stage 2 produces from registered checks.
DETERMINISTIC_TYPES = frozenset(
    {E.SCHEMA_VALIDATION, E.DETERMINISTIC_TEST, E.BUSINESS_RULE, E.POLICY_CHECK}
)


class ContentSource(Protocol):
    """Verified content by content hash (``BlobStore`` is one)."""

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        """The content, verified, or raise."""
        ...

    def verify(self, sha256: str, *, name: str | None = None) -> Any:
        """Re-hash the content; return its reference (with ``size``) or raise."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewInput:
    """What a deterministic check may look at: the WorkItem, its verified Artifacts."""

    work_item: WorkItemRecord
    manifests: Mapping[str, Mapping[str, Any]]
    source: ContentSource

    @property
    def artifact_hashes(self) -> tuple[str, ...]:
        """The submitted Artifacts, in submission order."""
        return self.work_item.submitted_artifacts

    def content(self, artifact_hash: str) -> bytes:
        """A submitted Artifact's content, verified on this read too."""
        return self.source.get(artifact_hash, name=self.manifests[artifact_hash]["artifactId"])


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckOutcome:
    """What a check found: a result, how it checked, structured facts (no private reasoning)."""

    result: EvidenceResult
    method: str
    details: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        ensure_no_private_reasoning(self.details, "A check's details")


#: A deterministic check; ``None`` means it does not apply to this submission.
CheckFn = Callable[[ReviewInput], CheckOutcome | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """A named, versioned deterministic check and the Evidence kind it yields."""

    name: str
    evidence_type: EvidenceType
    fn: CheckFn
    version: str = "1.0.0"
    #: Criterion IDs it is limited to; ``None``: every criterion requiring its Evidence kind.
    criteria: frozenset[str] | None = None

    def applies_to(self, criteria: Sequence[Mapping[str, Any]]) -> list[str]:
        """The IDs of ``criteria`` this check produces Evidence for."""
        return [
            c["criterionId"]
            for c in criteria
            if str(self.evidence_type) in c["evidenceRequired"]
            and (self.criteria is None or c["criterionId"] in self.criteria)
        ]


class CheckRegistry:
    """Named deterministic checks (schema checks, tests, business rules, policy checks)."""

    def __init__(self, checks: Iterable[Check] = ()) -> None:
        self._checks: dict[str, Check] = {}
        for check in checks:
            self.add(check)

    def add(self, check: Check) -> None:
        """Register a check; names are unique."""
        if check.evidence_type not in DETERMINISTIC_TYPES:
            raise ValueError(f"a deterministic check yields one of {sorted(DETERMINISTIC_TYPES)}")
        if check.name in self._checks:
            raise ValueError(f"two checks named {check.name!r}")
        self._checks[check.name] = check

    def register(
        self,
        name: str,
        *,
        evidence_type: EvidenceType | str,
        criteria: Iterable[str] | None = None,
        version: str = "1.0.0",
    ) -> Callable[[CheckFn], CheckFn]:
        """Decorator: register the function as check ``name``."""

        def wrap(fn: CheckFn) -> CheckFn:
            self.add(
                Check(
                    name=name,
                    evidence_type=EvidenceType(evidence_type),
                    fn=fn,
                    version=version,
                    criteria=None if criteria is None else frozenset(criteria),
                )
            )
            return fn

        return wrap

    def __iter__(self) -> Iterator[Check]:
        return iter(self._checks.values())

    def copy(self) -> CheckRegistry:
        """A registry with the same checks, to extend without changing this one."""
        return CheckRegistry(self._checks.values())


#: The checks every review runs unless given another registry.
DEFAULT_CHECKS = CheckRegistry()


def is_json(media_type: str) -> bool:
    """Whether ``media_type`` is JSON (``application/json`` or a ``+json`` type)."""
    return media_type == "application/json" or media_type.endswith("+json")


@DEFAULT_CHECKS.register("json-well-formed", evidence_type=E.SCHEMA_VALIDATION)
def json_well_formed(review: ReviewInput) -> CheckOutcome | None:
    """Every submitted JSON Artifact parses as strict JSON (I-JSON: no duplicate members)."""
    problems = {}
    checked = [h for h in review.artifact_hashes if is_json(review.manifests[h]["mediaType"])]
    if not checked:
        return None
    for artifact_hash in checked:
        try:
            parse_strict(review.content(artifact_hash))
        except ProtocolError as exc:
            problems[artifact_hash] = exc.explanation[:500]
    return CheckOutcome(
        result=R.FAILED if problems else R.PASSED,
        method="strict JSON parse of every application/json Artifact",
        details={"checked": checked, "problems": problems},
    )
