"""The Coordinator's review of submissions (§13.2, §7.2, MWP-WRK-025).

Every submission is reviewed with ``artifacts.review.review_submission``, in the order of §13.2:
Artifact integrity and output schemas; the deterministic checks of ``coordinator_checks()``;
reviewer-Agent Evidence for semantic criteria; the combined evaluation; a retained
``ReviewRecord``. An accepted record is what ``work.accept_result`` carries into the log (the
MissionOwner reads every one at Approval); a rejected one goes into the ``work.fail`` Evidence,
so a refused submission is kept too.

**How reviewer Evidence is obtained.** When a contract has semantic criteria (a mission file's
``reviewed_by``), or when the Coordinator itself produced the result (it may never be the sole
reviewer of its own output), the Coordinator authorizes a *review WorkItem* linked under the
reviewed one (``parentWorkItemId``) and offers it to the named reviewer only (or, for its own
output, to another Agent with a review capability). Its contract's ``constraints.reviewOf``
names the submission; its deliverable is a JSON Artifact whose content is the reviewer's signed
``reviewer_assessment`` Evidence (see ``reviewer.ReviewerPolicy``). The review WorkItem is itself
reviewed like any other work (integrity, JSON well-formed, the ``assessment-shape`` rule); once
it is verified the Coordinator reads the assessment through its verified content source and
hands it to ``review_submission``, which checks its signature and that its author did not
produce the result. One review WorkItem per submission (per Ownership Epoch).

Content is read only through the injected ``ContentSource`` (the driver passes the sandbox's
``BlobStore``, which re-hashes on every read). Without one (an older driver), the Coordinator
falls back to a review of what the log alone shows (manifests present, the Worker's Evidence
passed) and says so in the retained record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# The Authority package loads before ``artifacts`` (whose package imports the Authority back).
from ... import authority as _authority  # noqa: F401
from ...artifacts.checks import DEFAULT_CHECKS, CheckOutcome, CheckRegistry, ContentSource, is_json
from ...artifacts.checks import ReviewInput as CheckInput
from ...artifacts.evidence import build_evidence
from ...artifacts.review import ReviewRecord, Verdict, review_submission
from ...authority.model import WorkItemRecord
from ...protocol.documents import EvidenceResult
from ...protocol.errors import ProtocolError
from ...protocol.jsontext import parse_strict
from ...protocol.tables import WorkItemState
from ...protocol.timestamps import format_utc
from ..base import Intent, View
from ..naming import review_item_id, short
from .contracts import review_contract, review_of, semantic_criteria

W = WorkItemState
R = EvidenceResult
#: Budget of one review WorkItem (taken from what the Mission has left to allocate).
REVIEW_BUDGET = 2.0


def _text_media(media_type: str) -> bool:
    # JSON is text too: a WorkItem whose contract asks for JSON (``media_type``) gets this
    # independent deterministic test like a Markdown one
    return media_type.startswith("text/") or is_json(media_type)


def coordinator_checks() -> CheckRegistry:
    """The deterministic checks of the Coordinator's reviews (§13.2 step 2)."""
    checks = DEFAULT_CHECKS.copy()

    @checks.register("deliverable-readable", evidence_type="deterministic_test")
    def deliverable_readable(review: CheckInput) -> CheckOutcome | None:
        """Every text deliverable (``text/*`` or JSON) is non-empty UTF-8."""
        texts = [h for h in review.artifact_hashes if _text_media(review.manifests[h]["mediaType"])]
        if not texts:
            return None
        problems = {}
        for h in texts:
            try:
                if not review.content(h).decode("utf-8").strip():
                    problems[h] = "empty"
            except UnicodeDecodeError:
                problems[h] = "not UTF-8"
        return CheckOutcome(
            result=R.FAILED if problems else R.PASSED,
            method="decode every text deliverable as UTF-8 and require content",
            details={"checked": texts, "problems": problems},
        )

    @checks.register("assessment-shape", evidence_type="business_rule")
    def assessment_shape(review: CheckInput) -> CheckOutcome | None:
        """A review WorkItem delivers a reviewer_assessment of exactly the reviewed submission."""
        target = review_of(review.work_item.contract)
        if target is None:
            return None
        problems = []
        for h in review.artifact_hashes:
            try:
                doc = parse_strict(review.content(h))
            except ProtocolError as exc:
                problems.append(f"{h}: {exc.code.value}")
                continue
            if not isinstance(doc, dict) or doc.get("type") != "reviewer_assessment":
                problems.append(f"{h}: not a reviewer_assessment")
            elif doc.get("workItemId") != target["workItemId"]:
                problems.append(f"{h}: assesses another WorkItem")
            elif not set(target["artifactHashes"]) <= set(doc.get("artifactHashes", [])):
                problems.append(f"{h}: does not cover the submitted Artifacts")
        return CheckOutcome(
            result=R.FAILED if problems else R.PASSED,
            method="the assessment is reviewer_assessment Evidence about the reviewed "
            "WorkItem, covering every submitted Artifact",
            details={"reviewOf": target["workItemId"], "problems": problems},
        )

    return checks


@dataclass
class ReviewBook:
    """What the Coordinator keeps between decisions about reviews."""

    #: Review WorkItem ID → the reviewer's assessments read from its verified Artifact.
    assessments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: (WorkItem ID, revision, assessments) → the review made then (reviews are not redone).
    records: dict[tuple[str, int, int], ReviewRecord] = field(default_factory=dict)


def _assessments(
    view: View, review: WorkItemRecord, content: ContentSource, book: ReviewBook
) -> list[dict[str, Any]]:
    if review.work_item_id not in book.assessments:
        found = []
        for h in review.submitted_artifacts:
            manifest = view.state.manifest_of(h, work_item_id=review.work_item_id) or {}
            try:
                doc = parse_strict(content.get(h, name=manifest.get("artifactId")))
            except ProtocolError:
                continue  # the content failed verification: review_submission never sees it
            if isinstance(doc, dict):
                found.append(doc)
        book.assessments[review.work_item_id] = found
    return book.assessments[review.work_item_id]


def _reviewer_for(
    view: View, item: WorkItemRecord, named: str | None, producers: set[str]
) -> str | None:
    """The Agent to ask: the one the mission file names, or (for the Coordinator's own output)
    the first other Agent with a review capability."""
    if named is not None:
        return named if named in view.state.agents and named not in producers else None
    for agent in sorted(view.state.agents.values(), key=lambda a: a.agent_id):
        if agent.agent_id in producers or agent.agent_id == view.me or agent.session_epoch == 0:
            continue
        if any("review" in cap for cap, _ in agent.capabilities):
            return agent.agent_id
    return None


def _review_capability(view: View, reviewer: str) -> tuple[str, str]:
    caps = view.state.agents[reviewer].capabilities
    return next(((c, v) for c, v in caps if "review" in c), caps[0])


def _review_budget(view: View, item: WorkItemRecord) -> dict[str, Any]:
    ledger = view.state.budgets.get(("mission", item.mission_id))
    budget: dict[str, Any] = {}
    if ledger is not None and ledger.currency:
        budget["currency"] = ledger.currency
    limit = ledger.limits.get("financial") if ledger is not None else None
    free = REVIEW_BUDGET
    if ledger is not None and limit is not None:
        free = limit - ledger.allocated.get("financial", 0)
    budget["financialLimit"] = max(0.0, min(REVIEW_BUDGET, free))
    return budget


def request_review(
    view: View,
    item: WorkItemRecord,
    needed: Sequence[str],
    reviewer: str,
    deadline: str,
) -> Intent:
    """Authorize the review WorkItem that asks ``reviewer`` to assess ``item``'s submission."""
    wid = review_item_id(item.work_item_id, item.ownership_epoch)
    contract = review_contract(
        reviewed_id=item.work_item_id,
        goal=item.contract["goal"],
        artifacts=item.submitted_artifacts,
        criteria=needed,
        submitted_at=(item.submission or {}).get("submittedAt", item.updated_at or ""),
        capability=_review_capability(view, reviewer),
        reviewer=reviewer,
        deadline=deadline,
        budget=_review_budget(view, item),
    )
    return Intent(
        kind="work.authorize",
        group=item.group_id,
        why=f"§13.2 step 3: '{short(item.work_item_id)}' needs a reviewer Agent's assessment "
        f"of {', '.join(needed)}; ask {short(reviewer)} through a review WorkItem",
        payload={
            "workItemId": wid,
            "contract": contract,
            "parentWorkItemId": item.work_item_id,
        },
    )


def review(
    view: View,
    item: WorkItemRecord,
    items: Mapping[str, WorkItemRecord],
    now_us: int,
    *,
    content: ContentSource | None,
    checks: CheckRegistry,
    book: ReviewBook,
    reviewer: str | None,
    deadline: str,
) -> Intent | None:
    """What to do about a submitted WorkItem: accept it, fail it, ask for a reviewer, or wait."""
    if content is None:
        return _review_without_content(view, item, now_us)
    producers = {item.owner["agentId"]} if item.owner else set()
    manifests = view.state.item_manifests(item.work_item_id)
    producers |= {
        manifests[h]["producer"]["agentId"] for h in item.submitted_artifacts if h in manifests
    }
    evidence: list[dict[str, Any]] = []
    review_item = items.get(review_item_id(item.work_item_id, item.ownership_epoch))
    if review_item is not None and review_item.state is W.VERIFIED:
        evidence = _assessments(view, review_item, content, book)
    key = (item.work_item_id, item.revision, len(evidence))
    record = book.records.get(key)
    if record is None:
        record = review_submission(
            item,
            manifests=manifests,
            source=content,
            reviewer=view.member,
            registry=view.state.registry,
            now=format_utc(now_us),
            reviewer_evidence=evidence,
            checks=checks,
        )
        book.records[key] = record
    if record.verdict is Verdict.ACCEPTED:
        return Intent(
            kind="work.accept_result",
            group=item.group_id,
            why=f"the review of '{short(item.work_item_id)}' passed every step of §13.2; the "
            "record goes into the log for the human",
            payload=record.accept_result_payload(),
        )
    needs_reviewer = record.verdict is Verdict.NEEDS_INDEPENDENT_REVIEW or (
        record.verdict is Verdict.INCOMPLETE and bool(record.reviewer_requests)
    )
    if needs_reviewer and review_item is None:
        asked = _reviewer_for(view, item, reviewer, producers)
        if asked is None:
            return _fail(view, item, record, now_us)  # no one may review it: say so, retry
        needed = (
            list(record.reviewer_requests)
            if record.verdict is Verdict.INCOMPLETE
            else [c["criterionId"] for c in item.contract["acceptanceCriteria"]]
        )
        return request_review(
            view, item, needed or semantic_criteria(item.contract), asked, deadline
        )
    if needs_reviewer and review_item is not None and review_item.state is not W.VERIFIED:
        return None  # wait for the reviewer's WorkItem
    return _fail(view, item, record, now_us)


def _fail(view: View, item: WorkItemRecord, record: ReviewRecord, now_us: int) -> Intent:
    """Reject the submission, keeping the whole review in the failure Evidence."""
    report = _failure_report(
        view, item, now_us, "Coordinator review in the order of §13.2", record.to_json()
    )
    own = [e for e in record.evidence if e["workItemId"] == item.work_item_id]
    return Intent(
        kind="work.fail",
        group=item.group_id,
        why=f"the review of '{short(item.work_item_id)}' ended {record.verdict}: "
        + "; ".join(record.reasons[:3]),
        payload={
            "workItemId": item.work_item_id,
            "reason": f"review {record.verdict}",
            "evidence": [report, *own],
        },
        overrides={"expected_revision": item.revision},
    )


def _failure_report(
    view: View, item: WorkItemRecord, now_us: int, method: str, review: dict[str, Any]
) -> dict[str, Any]:
    """The signed failure-report Evidence of a rejected submission, keeping the whole review."""
    return build_evidence(
        view.member,
        mission_id=item.mission_id,
        group_id=item.group_id,
        work_item_id=item.work_item_id,
        type="failure_report",
        subject=("work_item", item.work_item_id),
        criteria=[c["criterionId"] for c in item.contract["acceptanceCriteria"]],
        method=method,
        result=R.FAILED,
        artifact_hashes=item.submitted_artifacts,
        created_at=format_utc(now_us),
        details={"review": review},
    )


def _review_without_content(view: View, item: WorkItemRecord, now_us: int) -> Intent | None:
    """The fallback when no content source was injected: what the log alone shows. It can
    reject a submission (a missing manifest, failed Evidence) but never accept one."""
    steps = [
        {
            "step": "artifact_integrity",
            "artifact": h,
            "ok": view.state.manifest_of(h, work_item_id=item.work_item_id) is not None,
            "note": "manifest present; content not re-hashed (no content source)",
        }
        for h in item.submitted_artifacts
    ]
    steps += [
        {"step": "deterministic_test", "evidence": ev["evidenceId"], "ok": ev["result"] == "passed"}
        for ev in item.submitted_evidence
    ]
    if item.owner is not None and item.owner["agentId"] == view.me:
        return None  # never the sole reviewer of its own output
    ok = all(s["ok"] for s in steps)
    if ok:
        # A log-only review is no §13.2 review (nothing was re-hashed), and the Authority
        # verifies a result only on one (authority.review_rules): wait for a content source.
        return None
    review = {"steps": steps, "verdict": "rejected", "limited": True}
    report = _failure_report(
        view, item, now_us, "Coordinator review in the order of §13.2 (log only)", review
    )
    return Intent(
        kind="work.fail",
        group=item.group_id,
        why="review found a failed check: the submission is rejected (§13.2)",
        payload={"workItemId": item.work_item_id, "reason": "review failed", "evidence": [report]},
    )
