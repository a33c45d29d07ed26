"""What ``work.accept_result`` must show before a submission is verified (§13.2, MWP-WRK-025).

A completion claim is not enough, and neither is a Coordinator's word: the Authority verifies a
submission only when the Command carries the review it rests on, and that review is one §13.2
allows. The Command carries ``reviewEvidence`` (the review's signed Evidence; the handler
verifies each signature) and ``review``, the retained record of the ordered review
(``artifacts.review.ReviewRecord``). ``check_review`` verifies every review Evidence (signed,
about this WorkItem) and refuses a Coordinator that would be the sole reviewer of its own output
(``AUTH_FORBIDDEN``, §7.2); then it refuses (``INVALID_COMMAND``) unless:

* the submission's Evidence covers every acceptance criterion of the contract in force;
* the review record is about this WorkItem, ran the five stages of §13.2 in their order
  (integrity, deterministic, reviewer, evaluation, retention), ended ``accepted`` and found every
  acceptance criterion satisfied;
* there is review Evidence, every piece of it passed, and a criterion that requires a reviewer's
  assessment has a passing ``reviewer_assessment`` about it (a failed assessment alone is no
  review).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.registry import Registry
from ..protocol.signing import profile_for, verify_parsed
from .context import forbidden, invalid
from .model import WorkItemRecord

__all__ = ["REVIEW_STAGES", "check_review"]

#: The steps of §13.2, in their order.
REVIEW_STAGES = ("integrity", "deterministic", "reviewer", "evaluation", "retention")
_RULE = (
    "§13.2 Evidence mapped to every acceptance criterion, reviewed in order: Artifact integrity, "
    "deterministic checks, reviewer Agents, combined evaluation, retention"
)


def _refuse(explanation: str, **details: Any) -> ProtocolError:
    return ProtocolError(
        ErrorCode.INVALID_COMMAND,
        explanation + " The submission stays submitted: review it, or request changes.",
        details=details,
        rule=_RULE,
    )


def _covered(evidence: Sequence[Mapping[str, Any]]) -> set[str]:
    return {c for e in evidence for c in e.get("criterionIds", ())}


def _reviewers(item: WorkItemRecord, evidence: Any, registry: Registry) -> set[str]:
    """The Principals who signed the review Evidence (each verified, about this WorkItem)."""
    if not isinstance(evidence, list):
        raise invalid("reviewEvidence must be a list of signed Evidence documents.")
    reviewers = set()
    for document in evidence:
        verified = verify_parsed(profile_for("evidence"), document, registry)
        if document["workItemId"] != item.work_item_id:
            raise invalid("Review Evidence must be about this WorkItem.")
        reviewers.add(verified.principal.id)
    return reviewers


def check_review(
    item: WorkItemRecord, payload: Mapping[str, Any], actor_id: str, registry: Registry
) -> None:
    """Refuse ``work.accept_result`` of ``item`` by ``actor_id`` unless its ``payload`` shows a
    §13.2 review."""
    wid = item.work_item_id
    reviewers = _reviewers(item, payload.get("reviewEvidence", []), registry)
    if item.owner and item.owner["agentId"] == actor_id and not (reviewers - {actor_id}):
        raise forbidden(
            "The Coordinator produced this result itself and may not be its sole reviewer; "
            "attach Evidence from another reviewer.",
            rule="§7.2 never the sole reviewer of its own output",
        )
    criteria = [c["criterionId"] for c in item.contract["acceptanceCriteria"]]
    uncovered = [c for c in criteria if c not in _covered(item.submitted_evidence)]
    if uncovered:
        raise _refuse(
            f"The submission of {wid} has no Evidence for the acceptance criteria "
            f"{', '.join(uncovered)}.",
            uncovered=uncovered,
        )
    review = payload.get("review")
    evidence = payload.get("reviewEvidence") or []
    if not isinstance(review, Mapping) or not evidence:
        raise _refuse(
            f"work.accept_result of {wid} carries no review: send the review's signed Evidence "
            "(reviewEvidence) and its record (review), as review_submission makes them."
        )
    if review.get("workItemId") != wid:
        raise _refuse(f"The review record is about {review.get('workItemId')}, not {wid}.")
    stages = review.get("stages")
    ran = [
        s.get("stage")
        for s in (stages if isinstance(stages, list) else ())
        if isinstance(s, Mapping) and s.get("status") == "ran"
    ]
    if ran != list(REVIEW_STAGES):
        raise _refuse(
            f"The review of {wid} ran the stages {ran}; §13.2 runs "
            f"{', '.join(REVIEW_STAGES)}, each once and in that order.",
            stages=ran,
        )
    if review.get("verdict") != "accepted":
        raise _refuse(
            f"The review of {wid} ended {review.get('verdict')!r}, not 'accepted'.",
            verdict=review.get("verdict"),
        )
    outcomes = {
        c.get("criterionId"): c.get("status")
        for c in review.get("criteria", ())
        if isinstance(c, Mapping)
    }
    unsatisfied = [c for c in criteria if outcomes.get(c) != "satisfied"]
    if unsatisfied:
        raise _refuse(
            f"The review of {wid} did not find {', '.join(unsatisfied)} satisfied.",
            unsatisfied=unsatisfied,
        )
    failed = [e.get("evidenceId") for e in evidence if e.get("result") != "passed"]
    if failed:
        raise _refuse(
            f"Review Evidence {', '.join(map(str, failed))} did not pass: a result is accepted "
            "only on passing Evidence.",
            evidenceIds=failed,
        )
    assessed = _covered([e for e in evidence if e.get("type") == "reviewer_assessment"])
    unassessed = [
        c["criterionId"]
        for c in item.contract["acceptanceCriteria"]
        if "reviewer_assessment" in c.get("evidenceRequired", ())
        and c["criterionId"] not in assessed
    ]
    if unassessed:
        raise _refuse(
            f"The acceptance criteria {', '.join(unassessed)} require a reviewer's assessment, "
            "and no passing one is attached.",
            unassessed=unassessed,
        )
