"""What an assignment records, exactly as the specification names it: the structured selection
basis of an offer (§10.3, MWP-WRK-006) and the Worker's schedule estimate on acceptance (§11.2,
MWP-WRK-012).

Both land in the WorkItem document, whose schema allows no other member. ``selection_basis``
requires every member §10.3 names (capability matches, authorization eligibility, availability
estimate, expected cost, reliability Evidence, applied policy rules) and refuses anything else,
private chain-of-thought above all; the required capabilities and the verified matches are the
Authority's own. ``schedule_estimate`` allows exactly the five members of §11.2 (start window,
completion, confidence, capacity status, calculation time), so nothing about another Group (its
names, content, assignments, a global queue position) can be disclosed through it. Each refusal
is ``SCHEMA_VALIDATION_FAILED`` naming what was wrong and the rule. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..protocol.documents import validate_shape
from ..protocol.documents.work import SCHEDULE_ESTIMATE, SELECTION_BASIS
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.reasoning import is_private_reasoning_name

__all__ = ["STATED_BASIS", "schedule_estimate", "selection_basis"]

#: The members of a selection basis the Coordinator states (§10.3), in the specification's order.
STATED_BASIS = (
    "authorizationEligible",
    "availabilityEstimate",
    "expectedCost",
    "reliabilityEvidence",
    "policyRulesApplied",
)
#: The members the Authority itself records: the contract's required capabilities and the
#: matches it verified against the Agent Cards (a Command's own values are replaced).
VERIFIED_BASIS = ("requiredCapabilities", "verifiedMatches")
#: The members of a schedule estimate (§11.2).
ESTIMATE_MEMBERS = (
    "estimatedStart",
    "estimatedCompletion",
    "confidence",
    "capacityStatus",
    "lastCalculatedAt",
)
_BASIS_RULE = "§10.3 every assignment records a structured selection basis, no chain-of-thought"
_ESTIMATE_RULE = (
    "§11.2 a schedule estimate never exposes another Group's names, content, assignments or "
    "exact global queue position"
)


def _refuse(explanation: str, rule: str, **details: Any) -> ProtocolError:
    return ProtocolError(
        ErrorCode.SCHEMA_VALIDATION_FAILED,
        explanation,
        details=details,
        rule=rule,
        stage="schema",
    )


def selection_basis(
    stated: Mapping[str, Any],
    required: Sequence[Mapping[str, str]],
    matches: Sequence[Mapping[str, str]],
) -> dict[str, Any]:
    """The selection basis to record: ``stated`` (the Command's) with the Authority's required
    capabilities and verified matches, or ``SCHEMA_VALIDATION_FAILED``."""
    extra = sorted(set(stated) - set(STATED_BASIS) - set(VERIFIED_BASIS))
    private = [m for m in extra if is_private_reasoning_name(m)]
    if private:
        raise _refuse(
            f"The selection basis carries private reasoning ({', '.join(private)}): an "
            "assignment records its structured basis only, never chain-of-thought. State the "
            "policy rules applied instead.",
            _BASIS_RULE,
            members=extra,
        )
    if extra:
        raise _refuse(
            f"The selection basis has members §10.3 does not name: {', '.join(extra)}. It "
            f"records exactly {', '.join(STATED_BASIS)} (and the Authority adds "
            f"{' and '.join(VERIFIED_BASIS)}).",
            _BASIS_RULE,
            members=extra,
        )
    missing = [m for m in STATED_BASIS if m not in stated]
    if missing:
        raise _refuse(
            f"The selection basis lacks {', '.join(missing)}: every assignment records "
            f"{', '.join(STATED_BASIS)} (§10.3).",
            _BASIS_RULE,
            missing=missing,
        )
    basis = {**stated, "requiredCapabilities": list(required), "verifiedMatches": list(matches)}
    _conforms(basis, SELECTION_BASIS, "selection basis", _BASIS_RULE)
    return basis


def schedule_estimate(estimate: Any) -> dict[str, Any] | None:
    """The schedule estimate to record (None when the Command gives none), or
    ``SCHEMA_VALIDATION_FAILED``: exactly the members of §11.2, nothing about other Groups."""
    if estimate is None:
        return None
    if isinstance(estimate, Mapping):
        extra = sorted(set(estimate) - set(ESTIMATE_MEMBERS))
        if extra:
            raise _refuse(
                f"The schedule estimate discloses more than §11.2 allows: {', '.join(extra)}. "
                f"It carries exactly {', '.join(ESTIMATE_MEMBERS)}; another Group's names, "
                "content, assignments and the exact global queue position stay with the Worker.",
                _ESTIMATE_RULE,
                members=extra,
            )
    _conforms(estimate, SCHEDULE_ESTIMATE, "schedule estimate", _ESTIMATE_RULE)
    return dict(estimate)


def _conforms(value: Any, shape: Any, what: str, rule: str) -> None:
    try:
        validate_shape(shape, value, what)
    except ProtocolError as exc:
        raise _refuse(exc.explanation, rule, **exc.details) from None
