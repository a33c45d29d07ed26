"""Work Contracts the Coordinator writes for the WorkItems a mission file declares (§10.1)."""

from __future__ import annotations

from typing import Any

from ..protocol.timestamps import format_utc
from ..sim.mission_file import WorkSpec

_BUDGET_NAMES = {
    "financial": "financialLimit",
    "tool_calls": "toolCallLimit",
    "model_tokens": "modelTokenLimit",
    "compute_seconds": "computeSecondsLimit",
    "wall_clock_seconds": "wallClockSecondsLimit",
    "side_effects": "externalSideEffectLimit",
}


def budget_document(budget: dict[str, float]) -> dict[str, Any]:
    """A Budget document from a mission file's budget table."""
    doc: dict[str, Any] = {"currency": "EUR"} if "financial" in budget else {}
    for key, value in budget.items():
        doc[_BUDGET_NAMES[key]] = value if key == "financial" else int(value)
    return doc


def work_contract(
    spec: WorkSpec, *, dependencies: list[str], deadline_us: int, version: int = 1
) -> dict[str, Any]:
    """A complete, versioned Work Contract for ``spec``."""
    cap, cap_version = spec.capability
    return {
        "contractVersion": version,
        "goal": spec.goal,
        "requiredDeliverables": [
            {
                "deliverableId": spec.id,
                "description": f"The result of: {spec.goal}",
                "mediaType": "text/markdown",
                "schema": f"urn:mwp-local:schema:{cap}",
            }
        ],
        "acceptanceCriteria": [
            {
                "criterionId": "deliverable-complete",
                "description": "The deliverable exists, matches its schema and is complete",
                "evidenceRequired": ["artifact_integrity", "deterministic_test"],
            }
        ],
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
    }
