"""Small, complete example documents for notebooks, benchmarks and tests.

Owns ``example_contract``: a Work Contract with every member §10.1 requires (MWP-WRK-001), for
people who send Commands by hand (the concept notebooks' bench, the test World, the benchmark
workload), and ``EXAMPLE_AGENTS``: the small cast those benches sign as. Pure data: no I/O.
"""

from __future__ import annotations

from typing import Any

#: The capability the example contract requires (any Agent declaring 2.x with x ≥ 0 matches).
EXAMPLE_CAPABILITY = ("acme.software.python", "2.0.0")

#: What the example Agents declare: an implementation capability and a review capability.
EXAMPLE_IMPLEMENT = ("acme.software.python", "2.1.0")
EXAMPLE_REVIEW = ("acme.software.review", "1.0.0")
#: A Coordinator, two Workers and a reviewer (``Organization.create(..., agents=...)``).
EXAMPLE_AGENTS: dict[str, dict[str, Any]] = {
    "coordinator": {"capabilities": [EXAMPLE_IMPLEMENT, EXAMPLE_REVIEW], "max_concurrency": 4},
    "worker-a": {"capabilities": [EXAMPLE_IMPLEMENT], "max_concurrency": 2},
    "worker-b": {"capabilities": [EXAMPLE_IMPLEMENT], "max_concurrency": 2},
    "reviewer": {"capabilities": [EXAMPLE_REVIEW], "max_concurrency": 1},
}


def example_contract(**over: Any) -> dict[str, Any]:
    """A complete Work Contract for a small implementation task; ``over`` replaces members."""
    contract: dict[str, Any] = {
        "contractVersion": 1,
        "goal": "Implement the feature",
        "requiredDeliverables": [
            {
                "deliverableId": "patch",
                "description": "The patch",
                "mediaType": "text/x-diff",
                "schema": "urn:mwp-local:schema:patch",
            }
        ],
        "acceptanceCriteria": [
            {
                "criterionId": "tests-pass",
                "description": "Tests pass",
                "evidenceRequired": ["deterministic_test"],
            }
        ],
        "inputArtifacts": [],
        "dependencyWorkItemIds": [],
        "allowedResources": [],
        "requiredCapabilities": [{"id": EXAMPLE_CAPABILITY[0], "version": EXAMPLE_CAPABILITY[1]}],
        "deadline": "2026-07-20T00:00:00Z",
        "requestedUrgency": "normal",
        "businessImpact": "Needed for the release",
        "retryPolicy": {
            "maxAttempts": 2,
            "backoff": "fixed",
            "maxDelay": "PT1M",
            "retryableFailures": ["TRANSIENT"],
        },
        "budget": {"currency": "EUR", "financialLimit": 10, "toolCallLimit": 5},
        "sideEffectRisk": "none",
        "executionApproval": "not_required",
    }
    contract.update(over)
    return contract
