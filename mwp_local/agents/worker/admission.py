"""A Worker's admission control before it accepts an offer (§10.1, §10.3; MWP-WRK-002, 005).

Acceptance is a durable scheduling commitment, so the Worker first checks, from its own replica
and its own policy, that it can make a credible one: queue capacity and concurrency, capability
availability and version, deadline feasibility, authorization eligibility, dependencies and
budgets (including the retry budget of a re-offered item). Each failed check yields one of the
structured decline reasons of §10.3. Separately, an essential ambiguity in the Work Contract is
a question, not a decline: it is raised in the WorkItem Conversation and the offer is not
accepted until a revised contract answers it.

Sandbox convention (agreed with the Coordinator): the Work Contract's optional ``constraints``
object carries ``"ambiguities": ["question", ...]``; a non-empty list is an essential ambiguity.

Pure code: no I/O, no clock, no randomness. The Worker's own eligibility and cost model are
values given to it (by its mission file or a test), never read from the offer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field
from typing import Any

from ...authority.model import LIMIT_MEMBER, WorkItemRecord
from ...authority.state import AuthorityState
from ...protocol.documents.work import DeclineReason
from ...protocol.tables import WorkItemState
from ...protocol.timestamps import parse_timestamp

W = WorkItemState
#: The ``data_ref`` schema of a structured decline Message.
DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"
#: The ``data_ref`` schema of a question about an essential ambiguity.
QUESTION_SCHEMA = "urn:mwp-local:schema:contract-question"
#: ``sideEffectRisk`` values from least to most dangerous (§10.1).
RISK_ORDER = ("none", "reversible", "external", "high_risk", "destructive")


@dataclass(frozen=True, slots=True, kw_only=True)
class Eligibility:
    """What the Organization has cleared this Worker for (authorization eligibility, §12).

    Capability is not authorization (§6.1): a Worker able to do the work may still not be
    allowed to touch a resource, take a risk class or run work behind an execution approval.
    """

    #: Resource URN prefixes the Worker may be granted; ``None``: any resource.
    resources: tuple[str, ...] | None = None
    #: The most dangerous ``sideEffectRisk`` it may take on.
    max_risk: str = "destructive"
    #: The ``executionApproval`` gates it may work behind.
    execution_approvals: tuple[str, ...] = ("not_required", "policy_required", "human_required")

    def __post_init__(self) -> None:
        if self.max_risk not in RISK_ORDER:
            raise ValueError(f"max_risk must be one of {RISK_ORDER}, not {self.max_risk!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CostModel:
    """What the Worker expects one attempt to consume, from its duration estimate."""

    financial_per_hour: float = 0.0
    tool_calls_per_attempt: int = 3
    #: Compute seconds per second of estimated work.
    compute_ratio: float = 1.0

    def expected(self, estimate_us: int) -> dict[str, float]:
        """Expected consumption of one attempt, per budget dimension (§12 names)."""
        seconds = estimate_us / 1_000_000
        cost = {
            "computeSeconds": seconds * self.compute_ratio,
            "toolCalls": float(self.tool_calls_per_attempt),
        }
        if self.financial_per_hour:
            cost["financial"] = self.financial_per_hour * seconds / 3600
        return cost


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """The outcome of admission control: accept, or every reason to decline with its detail."""

    reasons: tuple[DeclineReason, ...] = ()
    details: dict[str, str] = field(default_factory=dict)

    @property
    def accepted(self) -> bool:
        """Whether the Worker can make a credible commitment."""
        return not self.reasons

    @property
    def reason(self) -> DeclineReason | None:
        """The first reason (the one named in the decline), or None."""
        return self.reasons[0] if self.reasons else None

    @classmethod
    def accept(cls) -> Admission:
        """Accept the offer."""
        return cls()

    @classmethod
    def decline(cls, reason: DeclineReason | str, detail: str) -> Admission:
        """Decline for ``reason`` (one of the structured reasons of §10.3: ``capacity``,
        ``deadline``, ``capability``, ``authorization``, ``dependency``, ``budget``, ``other``),
        saying why in ``detail``."""
        code = DeclineReason(reason)
        return cls(reasons=(code,), details={str(code): detail})


def ambiguities(contract: dict[str, Any]) -> list[str]:
    """The essential ambiguities a Work Contract declares (sandbox convention above)."""
    constraints = contract.get("constraints")
    if not isinstance(constraints, dict):
        return []
    found = constraints.get("ambiguities")
    if not isinstance(found, list):
        return []
    return [q for q in found if isinstance(q, str) and q.strip()]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("-", 1)[0].split("+", 1)[0].split("."))


@dataclass(frozen=True, slots=True, kw_only=True)
class AdmissionInputs:
    """What admission control reads: the offered item, the Worker's replica and its policy."""

    item: WorkItemRecord
    state: AuthorityState
    agent_id: str
    now_us: int
    capabilities: dict[str, str]
    unavailable_capabilities: frozenset[str]
    max_concurrency: int
    queue_capacity: int
    eligibility: Eligibility
    cost: CostModel
    #: The Worker's duration estimate of an item (what it still needs, in microseconds).
    estimate_us: Callable[[WorkItemRecord], int]
    #: The earliest instant a new attempt of this item may start (retry backoff), if any.
    not_before_us: int | None = None
    #: WorkItem → its failed attempts, and the WorkItems failed for good (from Events).
    failures: Mapping[str, int] = field(default_factory=dict)
    given_up: Set[str] = frozenset()
    #: The other WorkItems this Worker owns queued, active or blocked, if the Worker keeps them
    #: indexed (in the replica's order); ``None``: found by scanning ``state``.
    owned: tuple[WorkItemRecord, ...] | None = None


def _owned(inputs: AdmissionInputs) -> list[WorkItemRecord]:
    """The other WorkItems the Worker owns queued, active or blocked (a scan of the state)."""
    return [
        i
        for i in inputs.state.work_items.values()
        if i.owner is not None
        and i.owner["agentId"] == inputs.agent_id
        and i.state in (W.QUEUED, W.ACTIVE, W.BLOCKED)
        and i.work_item_id != inputs.item.work_item_id
    ]


def admit(inputs: AdmissionInputs) -> Admission:
    """Run every check of §10.3 and collect the reasons to decline (in the spec's order)."""
    reasons: list[DeclineReason] = []
    details: dict[str, str] = {}

    def no(reason: DeclineReason, detail: str) -> None:
        if reason not in reasons:
            reasons.append(reason)
            details[str(reason)] = detail

    item, state = inputs.item, inputs.state
    owned = list(inputs.owned) if inputs.owned is not None else _owned(inputs)
    # queue capacity and concurrency
    if inputs.max_concurrency < 1:
        no(DeclineReason.CAPACITY, "no execution slot is declared")
    elif len(owned) >= inputs.queue_capacity:
        no(DeclineReason.CAPACITY, f"the queue holds {len(owned)} of {inputs.queue_capacity}")
    # capability availability and version
    for cap in item.contract["requiredCapabilities"]:
        have = inputs.capabilities.get(cap["id"])
        if have is None:
            no(DeclineReason.CAPABILITY, f"{cap['id']} is not among this Worker's capabilities")
        elif _version(have)[0] != _version(cap["version"])[0] or _version(have) < _version(
            cap["version"]
        ):
            no(DeclineReason.CAPABILITY, f"{cap['id']} {have} does not satisfy {cap['version']}")
        elif cap["id"] in inputs.unavailable_capabilities:
            no(DeclineReason.CAPABILITY, f"{cap['id']} is currently unavailable")
    # deadline feasibility
    estimate = inputs.estimate_us(item)
    backlog = sum(inputs.estimate_us(i) for i in owned) // max(inputs.max_concurrency, 1)
    start = max(inputs.now_us, inputs.not_before_us or 0)
    deadline = parse_timestamp(item.contract["deadline"]).epoch_micros
    if start + backlog + estimate > deadline:
        no(DeclineReason.DEADLINE, "the estimated completion falls after the contract deadline")
    # authorization eligibility
    eligible = inputs.eligibility
    if eligible.resources is not None:
        for grant in item.contract["allowedResources"]:
            if not any(grant["resource"].startswith(p) for p in eligible.resources):
                no(
                    DeclineReason.AUTHORIZATION,
                    f"this Worker is not eligible for resource {grant['resource']}",
                )
    risk = item.contract["sideEffectRisk"]
    if RISK_ORDER.index(risk) > RISK_ORDER.index(eligible.max_risk):
        no(DeclineReason.AUTHORIZATION, f"this Worker is not cleared for {risk} side effects")
    if item.contract["executionApproval"] not in eligible.execution_approvals:
        no(
            DeclineReason.AUTHORIZATION,
            f"this Worker may not run work gated by {item.contract['executionApproval']}",
        )
    # dependencies
    for dep in item.dependencies:
        other = state.work_items.get(dep)
        if other is None:
            no(DeclineReason.DEPENDENCY, f"dependency {dep} is unknown to this Worker")
        elif other.state is W.CANCELLED or (
            other.state is W.FAILED
            and (
                dep in inputs.given_up
                or inputs.failures.get(dep, 0) >= other.contract["retryPolicy"]["maxAttempts"]
            )
        ):
            no(DeclineReason.DEPENDENCY, f"dependency {dep} can no longer be satisfied")
    # budgets: the retry budget, then the expected cost of one attempt
    attempts = item.contract["retryPolicy"]["maxAttempts"]
    if inputs.failures.get(item.work_item_id, 0) >= attempts:
        no(DeclineReason.BUDGET, f"all {attempts} attempts of the contract failed")
    ledger = state.budgets.get(("work_item", item.work_item_id))
    for dim, expected in sorted(inputs.cost.expected(estimate).items()):
        remaining: float | None
        if ledger is not None:
            remaining = ledger.remaining(dim)
        else:
            limit = item.contract["budget"].get(LIMIT_MEMBER[dim])
            remaining = None if limit is None else float(limit)
        if remaining is not None and remaining < expected:
            no(
                DeclineReason.BUDGET,
                f"{dim}: {remaining:g} left, one attempt is expected to need {expected:g}",
            )
    return Admission(reasons=tuple(reasons), details=details)
