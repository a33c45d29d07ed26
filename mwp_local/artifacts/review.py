"""The Coordinator's ordered review of a submitted WorkItem (§13.2, MWP-WRK-025), as pure code.

Owns ``review_submission``, which runs the five steps of §13.2 in order and keeps every result:

1. ``integrity``: every submitted Artifact's manifest verifies and its stored content re-hashes
   to the signed content hash at the declared size; every required deliverable is covered by an
   Artifact of its media type and schema. A failure here ends the review (nothing downstream
   touches unverified content);
2. ``deterministic``: the registered checks (``checks.CheckRegistry``: schema checks, tests,
   business rules, policy checks) that apply to the contract's acceptance criteria, each a pure
   function of the verified submission;
3. ``reviewer``: Evidence from reviewer Agents for semantic criteria (those that require
   ``reviewer_assessment``), verified and screened; criteria still lacking it are listed as
   requests for a reviewer;
4. ``evaluation``: per criterion, every required kind of Evidence passed and none failed; and
   the Coordinator is never the sole reviewer of its own output (§7.2): when it produced the
   result, each criterion needs passing Evidence from another Principal;
5. ``retention``: a ``ReviewRecord`` with every stage, every Evidence document (the Worker's,
   the review's, the reviewers'), the per-criterion outcome and the verdict. Its
   ``accept_result_payload`` is what ``work.accept_result`` carries, so the record lands in the
   log and the human sees it at Approval (``reviews_for_approval``).

The review's own Evidence is signed by the reviewing Coordinator (``evidence.build_evidence``).
Content is read only through the injected ``ContentSource`` (a ``BlobStore``), which verifies on
every read. Nothing here writes or reads a clock: the caller supplies ``now``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..authority.model import WorkItemRecord
from ..protocol.documents import EvidenceResult, EvidenceType
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.registry import Registry
from ..protocol.signing import profile_for, verify_parsed
from .checks import (
    DEFAULT_CHECKS,
    CheckOutcome,
    CheckRegistry,
    ContentSource,
    ReviewInput,
)
from .evidence import build_evidence, ensure_no_private_reasoning
from .signers import Signer

__all__ = [
    "CriterionOutcome",
    "ReviewRecord",
    "ReviewStage",
    "StageRecord",
    "Verdict",
    "review_submission",
    "reviews_for_approval",
]

E = EvidenceType
R = EvidenceResult


class ReviewStage(StrEnum):
    """The steps of §13.2, in their order."""

    INTEGRITY = "integrity"
    DETERMINISTIC = "deterministic"
    REVIEWER = "reviewer"
    EVALUATION = "evaluation"
    RETENTION = "retention"


class Verdict(StrEnum):
    """What the combined evaluation decided."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    #: Some criterion lacks the Evidence it requires (e.g. a reviewer's assessment).
    INCOMPLETE = "incomplete"
    #: The reviewing Coordinator produced the result and no one else has vouched for it.
    NEEDS_INDEPENDENT_REVIEW = "needs_independent_review"


#: Evidence kinds left to the MissionOwner at final Approval.
DEFERRED_TYPES = frozenset({E.HUMAN_REVIEW})


# --------------------------------------------------------------------------- the record


@dataclass(frozen=True, slots=True, kw_only=True)
class StageRecord:
    """One step of the review: whether it ran, what each part found, what went wrong."""

    stage: ReviewStage
    ran: bool
    results: tuple[dict[str, Any], ...] = ()
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The stage as JSON."""
        return {
            "stage": str(self.stage),
            "status": "ran" if self.ran else "skipped",
            "results": list(self.results),
            "problems": list(self.problems),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CriterionOutcome:
    """How one acceptance criterion fared."""

    criterion_id: str
    #: ``satisfied``, ``failed``, ``missing`` (required Evidence absent) or ``deferred`` (left
    #: to the MissionOwner's review at Approval).
    status: str
    evidence_ids: tuple[str, ...]
    independent: bool
    missing_types: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The outcome as JSON."""
        return {
            "criterionId": self.criterion_id,
            "status": self.status,
            "evidenceIds": list(self.evidence_ids),
            "independent": self.independent,
            "missingEvidence": list(self.missing_types),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewRecord:
    """Everything a review did and found, kept for the log and the human's Approval."""

    review_id: str
    work_item_id: str
    mission_id: str
    group_id: str
    work_item_revision: int
    artifact_hashes: tuple[str, ...]
    reviewer: dict[str, str]
    reviewed_at: str
    stages: tuple[StageRecord, ...]
    criteria: tuple[CriterionOutcome, ...]
    verdict: Verdict
    reasons: tuple[str, ...]
    #: The Worker's submitted Evidence, as submitted.
    submitted_evidence: tuple[dict[str, Any], ...]
    #: Evidence the review produced and reviewer Evidence it accepted, in stage order.
    evidence: tuple[dict[str, Any], ...]
    #: Criteria still needing a reviewer Agent's assessment (stage 3 requests).
    reviewer_requests: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        """The record as the ``review`` member of ``work.accept_result``."""
        return {
            "reviewId": self.review_id,
            "workItemId": self.work_item_id,
            "missionId": self.mission_id,
            "groupId": self.group_id,
            "workItemRevision": self.work_item_revision,
            "artifactHashes": list(self.artifact_hashes),
            "reviewer": dict(self.reviewer),
            "reviewedAt": self.reviewed_at,
            "stages": [s.to_json() for s in self.stages],
            "criteria": [c.to_json() for c in self.criteria],
            "verdict": str(self.verdict),
            "reasons": list(self.reasons),
            "submittedEvidenceIds": [e["evidenceId"] for e in self.submitted_evidence],
            "evidenceIds": [e["evidenceId"] for e in self.evidence],
            "reviewerRequests": list(self.reviewer_requests),
        }

    def accept_result_payload(self) -> dict[str, Any]:
        """The payload of ``work.accept_result`` (``reviewEvidence`` and this record).

        Refuses unless the verdict is ``accepted``: ``AUTH_FORBIDDEN`` when the Coordinator
        would be the sole reviewer of its own output, ``INVALID_COMMAND`` otherwise.
        """
        if self.verdict is Verdict.NEEDS_INDEPENDENT_REVIEW:
            raise ProtocolError(
                ErrorCode.AUTH_FORBIDDEN,
                "The Coordinator produced this result and may not be its sole reviewer; attach "
                "passing Evidence from another reviewer for every criterion.",
                details={"reasons": list(self.reasons)},
                rule="§7.2 never the sole reviewer of its own output",
            )
        if self.verdict is not Verdict.ACCEPTED:
            raise ProtocolError(
                ErrorCode.INVALID_COMMAND,
                f"The review of {self.work_item_id} ended {self.verdict}: "
                + "; ".join(self.reasons),
                details={"reasons": list(self.reasons)},
                rule="§13.2 Evidence-based review",
            )
        return {
            "workItemId": self.work_item_id,
            "reviewEvidence": list(self.evidence),
            "review": self.to_json(),
        }


# --------------------------------------------------------------------------- the pipeline


@dataclass
class _Run:
    """Mutable working state of one review (never escapes ``review_submission``)."""

    item: WorkItemRecord
    reviewer: Signer
    now: str
    all_criteria: list[str]
    evidence: list[dict[str, Any]] = field(default_factory=list)

    def evidence_doc(
        self,
        stage: ReviewStage,
        name: str,
        *,
        type: EvidenceType,
        subject: tuple[str, str],
        criteria: Sequence[str],
        method: str,
        result: EvidenceResult,
        details: Mapping[str, Any] | None = None,
        artifacts: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        item = self.item
        doc = build_evidence(
            self.reviewer,
            mission_id=item.mission_id,
            group_id=item.group_id,
            work_item_id=item.work_item_id,
            type=type,
            subject=subject,
            criteria=criteria,
            method=method,
            result=result,
            artifact_hashes=item.submitted_artifacts if artifacts is None else artifacts,
            created_at=self.now,
            details=details,
            evidence_id=derived_uuid(
                self.reviewer.organization_id,
                "review",
                item.work_item_id,
                str(item.revision),
                str(stage),
                name,
                subject[1],
            ),
        )
        self.evidence.append(doc)
        return doc


def _result_row(name: str, doc: Mapping[str, Any], note: str | None = None) -> dict[str, Any]:
    row = {
        "name": name,
        "type": doc["type"],
        "result": doc["result"],
        "criterionIds": list(doc["criterionIds"]),
        "evidenceId": doc["evidenceId"],
    }
    if note:
        row["note"] = note
    return row


def _integrity(
    run: _Run, manifests: Mapping[str, Mapping[str, Any]], source: ContentSource, registry: Registry
) -> StageRecord:
    rows, problems = [], []
    for artifact_hash in run.item.submitted_artifacts:
        manifest = manifests.get(artifact_hash)
        failure = None
        if manifest is None:
            failure = "no manifest was published for it"
        else:
            try:
                verify_parsed(profile_for("artifact"), manifest, registry)
                if manifest["workItemId"] != run.item.work_item_id:
                    failure = "its manifest names another WorkItem"
                else:
                    ref = source.verify(artifact_hash, name=manifest["artifactId"])
                    if ref.size != manifest["sizeBytes"]:
                        failure = (
                            f"stored size {ref.size} is not the declared {manifest['sizeBytes']}"
                        )
            except ProtocolError as exc:
                failure = f"{exc.code.value}: {exc.explanation}"
        if failure:
            problems.append(f"{artifact_hash}: {failure}")
        doc = run.evidence_doc(
            ReviewStage.INTEGRITY,
            "artifact-integrity",
            type=E.ARTIFACT_INTEGRITY,
            subject=("artifact", artifact_hash),
            criteria=run.all_criteria,
            method="manifest signature; SHA-256 and BLAKE3 re-hash of the stored content at "
            "the declared size",
            result=R.FAILED if failure else R.PASSED,
            details={"problem": failure} if failure else None,
            artifacts=[artifact_hash],
        )
        rows.append(_result_row("artifact-integrity", doc, failure))
    covered: dict[str, str | None] = {}
    for deliverable in run.item.contract["requiredDeliverables"]:
        covered[deliverable["deliverableId"]] = next(
            (
                h
                for h in run.item.submitted_artifacts
                if h in manifests
                and manifests[h]["mediaType"] == deliverable["mediaType"]
                and manifests[h]["schemaUri"] == deliverable["schema"]
            ),
            None,
        )
    uncovered = sorted(d for d, h in covered.items() if h is None)
    if uncovered:
        problems.append(f"no Artifact of the required media type and schema for {uncovered}")
    doc = run.evidence_doc(
        ReviewStage.INTEGRITY,
        "output-schemas",
        type=E.SCHEMA_VALIDATION,
        subject=("work_item", run.item.work_item_id),
        criteria=run.all_criteria,
        method="every required deliverable is covered by an Artifact of its media type and schema",
        result=R.FAILED if uncovered else R.PASSED,
        details={"deliverables": {d: h for d, h in covered.items()}},
    )
    rows.append(_result_row("output-schemas", doc))
    return StageRecord(
        stage=ReviewStage.INTEGRITY, ran=True, results=tuple(rows), problems=tuple(problems)
    )


def _deterministic(run: _Run, review: ReviewInput, checks: CheckRegistry) -> StageRecord:
    rows, problems = [], []
    criteria = run.item.contract["acceptanceCriteria"]
    for check in checks:
        applies = check.applies_to(criteria)
        if not applies:
            continue
        try:
            outcome = check.fn(review)
        except ProtocolError as exc:
            outcome = CheckOutcome(
                result=R.INCONCLUSIVE,
                method=f"check {check.name} {check.version}",
                details={"error": exc.code.value},
            )
        except Exception as exc:  # a broken check is recorded, never fatal to the review
            outcome = CheckOutcome(
                result=R.INCONCLUSIVE,
                method=f"check {check.name} {check.version}",
                details={"error": type(exc).__name__},
            )
        if outcome is None:
            continue
        doc = run.evidence_doc(
            ReviewStage.DETERMINISTIC,
            check.name,
            type=check.evidence_type,
            subject=("work_item", run.item.work_item_id),
            criteria=applies,
            method=f"{check.name} {check.version}: {outcome.method}"[:4000],
            result=outcome.result,
            details=outcome.details,
        )
        rows.append(_result_row(check.name, doc))
        if outcome.result is not R.PASSED:
            problems.append(f"check {check.name} {outcome.result}")
    return StageRecord(
        stage=ReviewStage.DETERMINISTIC, ran=True, results=tuple(rows), problems=tuple(problems)
    )


def _reviewer(
    run: _Run, supplied: Sequence[Mapping[str, Any]], producers: set[str], registry: Registry
) -> tuple[StageRecord, list[str]]:
    rows, problems = [], []
    known = set(run.all_criteria)
    accepted_for: set[str] = set()
    for doc in supplied:
        label = doc.get("evidenceId", "(no evidenceId)") if isinstance(doc, Mapping) else "?"
        try:
            verified = verify_parsed(profile_for("evidence"), doc, registry)
            ensure_no_private_reasoning(doc, f"Reviewer Evidence {label}")
        except ProtocolError as exc:
            problems.append(f"{label} refused: {exc.code.value}: {exc.explanation}")
            continue
        why = None
        if doc["type"] != E.REVIEWER_ASSESSMENT:
            why = f"it is {doc['type']} Evidence, not a reviewer_assessment"
        elif (doc["workItemId"], doc["missionId"]) != (run.item.work_item_id, run.item.mission_id):
            why = "it is about another WorkItem"
        elif not set(doc["criterionIds"]) <= known:
            why = "it names criteria this contract does not have"
        elif verified.principal.id in producers:
            why = "its author produced the result under review"
        if why:
            problems.append(f"{label} refused: {why}")
            continue
        run.evidence.append(dict(doc))
        rows.append(_result_row(f"reviewer {verified.principal.id}", doc))
        if doc["result"] == R.PASSED:
            accepted_for.update(doc["criterionIds"])
    semantic = [
        c["criterionId"]
        for c in run.item.contract["acceptanceCriteria"]
        if E.REVIEWER_ASSESSMENT in c["evidenceRequired"]
    ]
    requests = [c for c in semantic if c not in accepted_for]
    if requests:
        problems.append(f"reviewer Evidence is still needed for {requests}")
    record = StageRecord(
        stage=ReviewStage.REVIEWER, ran=True, results=tuple(rows), problems=tuple(problems)
    )
    return record, requests


def _evaluate(
    run: _Run,
    submitted: Sequence[Mapping[str, Any]],
    producers: set[str],
    self_review: bool,
    accept_submitted: bool,
) -> tuple[list[CriterionOutcome], list[str]]:
    pool = list(run.evidence) + [dict(e) for e in submitted]
    outcomes, reasons = [], []
    for criterion in run.item.contract["acceptanceCriteria"]:
        cid = criterion["criterionId"]
        mine = [e for e in pool if cid in e["criterionIds"]]
        counted = [
            e
            for e in mine
            if e in run.evidence or (accept_submitted and e["type"] != E.REVIEWER_ASSESSMENT)
        ]
        required = [t for t in criterion["evidenceRequired"] if t not in DEFERRED_TYPES]
        missing = tuple(
            t
            for t in required
            if not any(e["type"] == t and e["result"] == R.PASSED for e in counted)
        )
        failed = [e["evidenceId"] for e in mine if e["result"] == R.FAILED]
        independent = any(
            e["result"] == R.PASSED and e["generatedBy"]["id"] not in producers for e in counted
        )
        if failed:
            status = "failed"
            reasons.append(f"criterion {cid}: Evidence {', '.join(failed)} failed")
        elif missing:
            status = "missing"
            reasons.append(f"criterion {cid}: no passing {', '.join(missing)} Evidence")
        elif not required:
            status = "deferred"
        else:
            status = "satisfied"
        if self_review and not independent and status != "failed":
            reasons.append(f"criterion {cid}: only the producing Coordinator vouches for it")
        outcomes.append(
            CriterionOutcome(
                criterion_id=cid,
                status=status,
                evidence_ids=tuple(e["evidenceId"] for e in mine),
                independent=independent,
                missing_types=missing,
            )
        )
    return outcomes, reasons


def review_submission(
    item: WorkItemRecord,
    *,
    manifests: Mapping[str, Mapping[str, Any]],
    source: ContentSource,
    reviewer: Signer,
    registry: Registry,
    now: str,
    reviewer_evidence: Sequence[Mapping[str, Any]] = (),
    checks: CheckRegistry = DEFAULT_CHECKS,
    accept_submitted: bool = False,
) -> ReviewRecord:
    """Review a submitted WorkItem in the order of §13.2 and return the retained record.

    ``manifests`` maps content hash → the manifest published for this WorkItem
    (``AuthorityState.item_manifests``); ``reviewer`` is
    the reviewing Coordinator, who signs the review's Evidence; ``reviewer_evidence`` are signed
    ``reviewer_assessment`` documents from reviewer Agents. With ``accept_submitted`` the Worker's
    own verified Evidence may satisfy deterministic kinds (e.g. a signed CI report); by default
    a Worker's claim counts only if the review confirms it, though a failure it reports always
    counts.
    """
    if str(item.state) != "submitted" or not item.submitted_artifacts:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"WorkItem {item.work_item_id} is {item.state}; only a submission is reviewed.",
            rule="§13.2 Evidence-based review",
        )
    criteria_ids = [c["criterionId"] for c in item.contract["acceptanceCriteria"]]
    run = _Run(item=item, reviewer=reviewer, now=now, all_criteria=criteria_ids)
    producers = {item.owner["agentId"]} if item.owner else set()
    producers |= {
        manifests[h]["producer"]["agentId"] for h in item.submitted_artifacts if h in manifests
    }
    self_review = reviewer.actor["id"] in producers
    stages = [_integrity(run, manifests, source, registry)]
    requests: list[str] = []
    if stages[0].problems:
        reason = "skipped: Artifact integrity or output schemas failed"
        stages += [
            StageRecord(stage=ReviewStage.DETERMINISTIC, ran=False, problems=(reason,)),
            StageRecord(stage=ReviewStage.REVIEWER, ran=False, problems=(reason,)),
        ]
        outcomes: list[CriterionOutcome] = []
        reasons = [f"integrity: {p}" for p in stages[0].problems]
        verdict = Verdict.REJECTED
    else:
        review_input = ReviewInput(work_item=item, manifests=manifests, source=source)
        stages.append(_deterministic(run, review_input, checks))
        reviewer_stage, requests = _reviewer(run, reviewer_evidence, producers, registry)
        stages.append(reviewer_stage)
        outcomes, reasons = _evaluate(
            run, item.submitted_evidence, producers, self_review, accept_submitted
        )
        statuses = {o.status for o in outcomes}
        if "failed" in statuses:
            verdict = Verdict.REJECTED
        elif self_review and not all(o.independent for o in outcomes if o.status != "failed"):
            verdict = Verdict.NEEDS_INDEPENDENT_REVIEW
        elif "missing" in statuses:
            verdict = Verdict.INCOMPLETE
        else:
            verdict = Verdict.ACCEPTED
    stages.append(
        StageRecord(
            stage=ReviewStage.EVALUATION,
            ran=True,
            results=tuple({"criterionId": o.criterion_id, "status": o.status} for o in outcomes),
            problems=tuple(reasons),
        )
    )
    stages.append(
        StageRecord(
            stage=ReviewStage.RETENTION,
            ran=True,
            results=(
                {
                    "submittedEvidence": len(item.submitted_evidence),
                    "reviewEvidence": len(run.evidence),
                },
            ),
        )
    )
    return ReviewRecord(
        review_id=derived_uuid(
            run.reviewer.organization_id, "review", item.work_item_id, str(item.revision), now
        ),
        work_item_id=item.work_item_id,
        mission_id=item.mission_id,
        group_id=item.group_id,
        work_item_revision=item.revision,
        artifact_hashes=item.submitted_artifacts,
        reviewer=dict(reviewer.actor),
        reviewed_at=now,
        stages=tuple(stages),
        criteria=tuple(outcomes),
        verdict=verdict,
        reasons=tuple(reasons),
        submitted_evidence=tuple(item.submitted_evidence),
        evidence=tuple(run.evidence),
        reviewer_requests=tuple(requests),
    )


def reviews_for_approval(
    events: Iterable[Mapping[str, Any]], mission_id: str
) -> list[dict[str, Any]]:
    """Every retained review of a Mission, from its ``work.result.accepted`` Events: what the
    MissionOwner sees beside the Artifact set at final Approval."""
    out = []
    for event in events:
        payload = event["payload"]
        if event["kind"] != "work.result.accepted" or payload.get("missionId") != mission_id:
            continue
        out.append(
            {
                "workItemId": payload["workItemId"],
                "eventId": event["eventId"],
                "sequence": event["sequence"],
                "review": payload.get("review"),
                "reviewEvidence": list(payload.get("reviewEvidence", [])),
            }
        )
    return out
