"""A reviewer Agent's side of §13.2 step 3, as a thin sans-IO wrapper around a Worker policy.

The Coordinator asks for a reviewer's assessment by offering it a *review WorkItem* whose
contract's ``constraints.reviewOf`` names the submission to assess (see ``coordinator_review``).
The wrapped Worker runs that WorkItem like any other (admission, Execution Lease, usage,
publication, submission); this wrapper changes only what it publishes: instead of the Worker's
generic deliverable, a JSON Artifact whose content is the reviewer's own signed
``reviewer_assessment`` Evidence about the reviewed WorkItem (subject, criteria, method,
result, producer, time, the reviewed Artifacts; no private reasoning), derived from the reviewed
Artifacts in the provenance graph. For ordinary work it changes nothing.

The assessment itself is the hook ``ReviewerPolicy.assess`` (subclass and override it for a
reviewer of one's own; ``Sandbox(policies={"name": YourReviewer})`` runs it): it returns the
signed Evidence, whose ``result`` is the verdict and whose ``artifactHashes`` are the Artifacts
the assessment is derived from. The built-in simulated judgement is deterministic: a submission
fails the assessment when a hash of the review WorkItem's ID falls under the reviewer's
``reject_rate``.
"""

from __future__ import annotations

import hashlib
from typing import Any

# The Authority package loads before ``artifacts`` (whose package imports the Authority back).
from .. import authority as _authority  # noqa: F401
from ..artifacts.evidence import build_evidence
from ..authority.model import WorkItemRecord
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.timestamps import format_utc
from .base import Intent, Policy, PolicyWrapper, View
from .coordinator.contracts import ASSESSMENT_SCHEMA, review_of
from .naming import short


def assessment_passes(review_work_item_id: str, reject_rate: float, salt: str = "") -> bool:
    """The deterministic simulated judgement of one review WorkItem."""
    digest = hashlib.sha256(f"{salt}|{review_work_item_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 >= reject_rate


def assessment_evidence(
    view: View, review_item: WorkItemRecord, now_us: int, *, passed: bool, finding: str = ""
) -> dict[str, Any]:
    """The reviewer's signed ``reviewer_assessment`` of the submission its WorkItem names
    (``finding``: what the reviewer found, in a sentence; default: meets the criteria or not)."""
    target = review_of(review_item.contract)
    if target is None:
        raise ValueError(f"{review_item.work_item_id} is not a review WorkItem")
    artifacts = list(target["artifactHashes"])
    return build_evidence(
        view.member,
        mission_id=review_item.mission_id,
        group_id=review_item.group_id,
        work_item_id=target["workItemId"],
        type="reviewer_assessment",
        subject=("artifact", artifacts[0]) if artifacts else ("work_item", target["workItemId"]),
        criteria=target["criterionIds"],
        method=f"reviewer Agent {short(view.me)} assessed the submitted Artifacts against "
        "the listed criteria",
        result="passed" if passed else "failed",
        artifact_hashes=artifacts,
        created_at=format_utc(now_us),
        details={
            "reviewWorkItemId": review_item.work_item_id,
            "finding": finding
            or ("meets the criteria" if passed else "does not meet the criteria"),
        },
        evidence_id=derived_uuid(
            view.member.organization_id, "assessment", review_item.work_item_id, view.me
        ),
    )


class ReviewerPolicy(PolicyWrapper):
    """A Worker policy that, on review WorkItems, publishes its signed assessment (the hook
    ``assess``); every other hook is the wrapped Worker's (``PolicyWrapper``), so the driver
    serves its slots as any Worker's."""

    def __init__(self, inner: Policy, reject_rate: float = 0.0, salt: str = "") -> None:
        super().__init__(inner)
        self.reject_rate = reject_rate
        self.salt = salt

    def __repr__(self) -> str:
        return f"ReviewerPolicy({self.inner!r}, reject_rate={self.reject_rate})"

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """The Worker's Intents, with a review WorkItem's publication replaced."""
        out = []
        for intent in self.inner.decide(view, now_us):
            if intent.kind == "artifact.publish":
                item = view.state.work_items.get(intent.payload.get("workItemId", ""))
                if item is not None and review_of(item.contract) is not None:
                    intent = self._publish_assessment(view, item, intent, now_us)
            out.append(intent)
        return out

    def assess(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        """Hook: the assessment of the submission review WorkItem ``item`` names
        (``review_of(item.contract)``: its WorkItem, Artifacts and criteria), as signed
        ``reviewer_assessment`` Evidence; ``result`` "passed" or "failed" is the verdict.

        Called when the review's deliverable is about to be published; the Evidence becomes
        that JSON Artifact's content, derived from the Artifacts in its ``artifactHashes``.
        ``assessment_evidence(view, item, now_us, passed=..., finding=...)`` builds one.
        The built-in: the seeded judgement of ``reject_rate``.
        """
        passed = assessment_passes(item.work_item_id, self.reject_rate, self.salt)
        return assessment_evidence(view, item, now_us, passed=passed)

    def _publish_assessment(
        self, view: View, item: WorkItemRecord, intent: Intent, now_us: int
    ) -> Intent:
        evidence = self.assess(view, item, now_us)
        passed = evidence.get("result") == "passed"
        content = canonicalize(evidence)
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        manifest = {k: v for k, v in intent.payload["artifact"].items() if k != "signature"}
        target = review_of(item.contract) or {}
        manifest.update(
            artifactId=f"urn:mwp-local:artifact:{digest[7:39]}",
            contentHash=digest,
            uri=f"mwp-local://blobs/{digest[7:]}",
            sizeBytes=len(content),
            mediaType="application/json",
            schemaUri=ASSESSMENT_SCHEMA,
            # the assessment is derived from the Artifacts it assessed (provenance, §13.1)
            sourceArtifactHashes=sorted(evidence.get("artifactHashes", [])),
        )
        payload = dict(intent.payload)
        payload["artifact"] = view.sign("artifact", manifest)
        verdict = "meets" if passed else "does not meet"
        return Intent(
            kind=intent.kind,
            group=intent.group,
            why=f"publish the assessment of '{short(target.get('workItemId', ''))}': it "
            f"{verdict} the criteria (signed reviewer_assessment Evidence, as a JSON Artifact)",
            payload=payload,
            overrides=dict(intent.overrides),
            tag=intent.tag,
            blobs={digest: content},
        )
