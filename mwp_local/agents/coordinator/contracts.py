"""Work Contracts the Coordinator writes (§10.1, MWP-WRK-001/002) and the conventions that ride
in their optional ``constraints`` object.

Every contract is complete and versioned: the fifteen members ``work-contract.schema.json``
requires, ``contractVersion`` starting at 1. The ``constraints`` object carries, by convention
between the Coordinator and the Workers of this sandbox:

* ``dependencyPolicy``: when the WorkItem becomes eligible; ``"all_verified"`` (every
  ``dependencyWorkItemIds`` entry verified) is the only policy the Group Authority enforces at
  ``work.start``, so it is the only one written here (§10.4);
* ``ambiguities``: essential questions the contract leaves open. A Worker must raise them in the
  WorkItem Conversation instead of accepting (a Message, ideally with a ``data_ref`` of schema
  ``QUESTION_SCHEMA`` and data ``{"offerId", "contractVersion", "questions": [...]}``); the
  Coordinator answers with a new ``work.offer`` whose corrected contract has the next
  ``contractVersion``, no ``ambiguities`` and the answers under ``clarifications``;
* ``reviewOf``: on a review WorkItem, the submission a reviewer Agent assesses (WorkItem,
  Artifacts, criteria). Its deliverable is a JSON Artifact of schema ``ASSESSMENT_SCHEMA`` whose
  content is the reviewer's signed ``reviewer_assessment`` Evidence (§13.2 step 3).

Pure functions; nothing here performs I/O.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ...protocol.timestamps import format_utc
from ..specs import WorkSpec

#: Mission-file budget names → Budget document members.
BUDGET_NAMES = {
    "financial": "financialLimit",
    "tool_calls": "toolCallLimit",
    "model_tokens": "modelTokenLimit",
    "compute_seconds": "computeSecondsLimit",
    "wall_clock_seconds": "wallClockSecondsLimit",
    "side_effects": "externalSideEffectLimit",
}
DEPENDENCY_POLICY = "dependencyPolicy"
ALL_VERIFIED = "all_verified"
AMBIGUITIES = "ambiguities"
CLARIFICATIONS = "clarifications"
REVIEW_OF = "reviewOf"
#: A Worker's structured question about an ambiguous contract (a Message ``data_ref``).
QUESTION_SCHEMA = "urn:mwp-local:schema:contract-question"
#: A Worker's structured decline (the Worker's admission control posts it).
DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"
#: The deliverable of a review WorkItem: the reviewer's signed assessment Evidence.
ASSESSMENT_SCHEMA = "urn:mwp-local:schema:reviewer-assessment"
DELIVERABLE_CRITERION = "deliverable-complete"
SEMANTIC_CRITERION = "semantic-review"
ASSESSMENT_CRITERION = "assessment-delivered"


def budget_document(budget: Mapping[str, float]) -> dict[str, Any]:
    """A Budget document from a mission file's budget table."""
    doc: dict[str, Any] = {"currency": "EUR"} if "financial" in budget else {}
    for key, value in budget.items():
        doc[BUDGET_NAMES[key]] = value if key == "financial" else int(value)
    return doc


def work_contract(
    spec: WorkSpec, *, dependencies: list[str], deadline_us: int, version: int = 1
) -> dict[str, Any]:
    """A complete, versioned Work Contract for ``spec``.

    A WorkItem the mission file marks ``ambiguous`` gets its question in ``ambiguities`` in
    version 1 (MWP-WRK-002); one ``reviewed_by`` a reviewer Agent gets a semantic criterion that
    only that reviewer's assessment satisfies (§13.2 step 3).
    """
    cap, cap_version = spec.capability
    criteria = [
        {
            "criterionId": DELIVERABLE_CRITERION,
            "description": "The deliverable exists, matches its schema and is complete",
            "evidenceRequired": ["artifact_integrity", "deterministic_test"],
        }
    ]
    if spec.reviewed_by:
        criteria.append(
            {
                "criterionId": SEMANTIC_CRITERION,
                "description": f"A reviewer Agent ({spec.reviewed_by}) judges that the "
                f"deliverable achieves the goal: {spec.goal}",
                "evidenceRequired": ["reviewer_assessment"],
            }
        )
    constraints: dict[str, Any] = {DEPENDENCY_POLICY: ALL_VERIFIED}
    if spec.ambiguous and version == 1:
        constraints[AMBIGUITIES] = [spec.ambiguous]
    return {
        "contractVersion": version,
        "goal": spec.goal,
        "requiredDeliverables": [
            {
                "deliverableId": spec.id,
                "description": f"The result of: {spec.goal}",
                "mediaType": spec.media_type,
                "schema": f"urn:mwp-local:schema:{cap}",
            }
        ],
        "acceptanceCriteria": criteria,
        "inputArtifacts": [],
        "dependencyWorkItemIds": dependencies,
        "allowedResources": [
            {"resource": f"urn:mwp-local:resource:{cap}", "operations": ["read", "write"]}
        ],
        "requiredCapabilities": [{"id": cap, "version": cap_version}],
        "deadline": format_utc(deadline_us),
        "requestedUrgency": spec.urgency,
        "businessImpact": f"Needed for the Mission: {spec.goal}",
        "retryPolicy": {
            "maxAttempts": spec.max_attempts,
            "backoff": "fixed",
            "maxDelay": "PT1M",
            "retryableFailures": ["TRANSIENT"],
        },
        "budget": budget_document(spec.budget),
        "sideEffectRisk": spec.risk,
        "executionApproval": spec.approval,
        "constraints": constraints,
    }


def constraints_of(contract: Mapping[str, Any]) -> dict[str, Any]:
    """The contract's ``constraints`` object (empty when absent or not an object)."""
    value = contract.get("constraints")
    return dict(value) if isinstance(value, Mapping) else {}


def ambiguities(contract: Mapping[str, Any]) -> list[str]:
    """The essential questions a contract leaves open (MWP-WRK-002)."""
    value = constraints_of(contract).get(AMBIGUITIES, [])
    return [q for q in value if isinstance(q, str)] if isinstance(value, list) else []


def dependency_policy(contract: Mapping[str, Any]) -> str:
    """The contract's dependency policy (``all_verified`` unless it says otherwise)."""
    return str(constraints_of(contract).get(DEPENDENCY_POLICY, ALL_VERIFIED))


def clarified(contract: Mapping[str, Any], answers: Mapping[str, str]) -> dict[str, Any]:
    """The corrected contract: next ``contractVersion``, no open ambiguities, each question
    answered under ``clarifications`` (structured fields; prose only supplements them)."""
    revised = copy.deepcopy(dict(contract))
    revised["contractVersion"] = int(contract["contractVersion"]) + 1
    constraints = constraints_of(revised)
    constraints.pop(AMBIGUITIES, None)
    earlier = list(constraints.get(CLARIFICATIONS, []))
    constraints[CLARIFICATIONS] = earlier + [
        {"question": q, "answer": a} for q, a in sorted(answers.items())
    ]
    revised["constraints"] = constraints
    return revised


def review_of(contract: Mapping[str, Any]) -> dict[str, Any] | None:
    """What a review WorkItem reviews, or None for ordinary work."""
    value = constraints_of(contract).get(REVIEW_OF)
    return dict(value) if isinstance(value, Mapping) else None


def semantic_criteria(contract: Mapping[str, Any]) -> list[str]:
    """The criteria that need a reviewer Agent's assessment (§13.2 step 3)."""
    return [
        c["criterionId"]
        for c in contract["acceptanceCriteria"]
        if "reviewer_assessment" in c["evidenceRequired"]
    ]


def review_contract(
    *,
    reviewed_id: str,
    goal: str,
    artifacts: Sequence[str],
    criteria: Sequence[str],
    submitted_at: str,
    capability: tuple[str, str],
    reviewer: str,
    deadline: str,
    budget: Mapping[str, Any],
) -> dict[str, Any]:
    """The Work Contract of a review WorkItem: the named reviewer assesses a submission."""
    cap, version = capability
    return {
        "contractVersion": 1,
        "goal": f"Assess the submission of {reviewed_id} against criteria "
        f"{', '.join(criteria)} (goal: {goal})",
        "requiredDeliverables": [
            {
                "deliverableId": "assessment",
                "description": "The reviewer's signed reviewer_assessment Evidence, as JSON",
                "mediaType": "application/json",
                "schema": ASSESSMENT_SCHEMA,
            }
        ],
        "acceptanceCriteria": [
            {
                "criterionId": ASSESSMENT_CRITERION,
                "description": "A well-formed assessment of exactly the reviewed submission",
                "evidenceRequired": ["artifact_integrity", "schema_validation", "business_rule"],
            }
        ],
        "inputArtifacts": list(artifacts),
        "dependencyWorkItemIds": [],
        "allowedResources": [{"resource": f"urn:mwp-local:resource:{cap}", "operations": ["read"]}],
        "requiredCapabilities": [{"id": cap, "version": version}],
        "deadline": deadline,
        "requestedUrgency": "high",
        "businessImpact": f"The Coordinator may not accept {reviewed_id} without it (§13.2)",
        "retryPolicy": {
            "maxAttempts": 2,
            "backoff": "fixed",
            "maxDelay": "PT1M",
            "retryableFailures": ["TRANSIENT"],
        },
        "budget": dict(budget),
        "sideEffectRisk": "none",
        "executionApproval": "not_required",
        "constraints": {
            DEPENDENCY_POLICY: ALL_VERIFIED,
            REVIEW_OF: {
                "workItemId": reviewed_id,
                "artifactHashes": list(artifacts),
                "criterionIds": list(criteria),
                "submittedAt": submitted_at,
                "reviewer": reviewer,
            },
        },
    }
