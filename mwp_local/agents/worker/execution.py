"""Running one execution slot of a Worker (§11.3, §11.4, §12, §13): what the work in the slot
needs next, as an Intent.

In order: renew the Execution Lease before it runs out (with structured progress), report a
material change of the estimate, block with a checkpoint and the required resolution, checkpoint
(when due, or when the Scheduler asked it to yield at a safe point), then, at the end of the
attempt, wait for its external operation (performed by the driver with the slot's own token),
record usage, and either fail (permanently once retries are spent, ``retries.py``) or publish
and submit with Evidence. Every Command cites the slot's current Lease ID and Ownership Epoch.

Which of these steps comes next is the slot's ``state`` (``lifecycle.py``), moved only through
``Execution.move``; the time-driven points (renewal, block, checkpoint, the end of the work) are
the slot's clock. Pure functions over the slot and the Worker's view (apart from the slot's own
state); the seeded ``rng`` is the Worker's.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ...artifacts.checks import ContentSource
from ...authority.model import WorkItemRecord
from ...protocol.errors import ProtocolError
from ...protocol.timestamps import format_utc, parse_timestamp
from ..base import Intent, View
from ..naming import short
from .admission import CostModel
from .documents import evidence, manifest, progress
from .lifecycle import SlotState as S
from .lifecycle import SlotTransition as ST
from .lifecycle import SlotTransitionError
from .retries import retry_verdict
from .slots import Execution, execution_key
from .work import Fail, Produced, WorkFunction, WorkRequest, normalize, read_inputs

__all__ = [
    "BLOCK_RESOLUTION",
    "LEASE_SECONDS",
    "WorkFunction",
    "WorkRequest",
    "produce",
    "request_for",
    "run_slot",
]

#: The Execution Lease a simulated Worker asks for by default (renewed a third before it runs
#: out).
LEASE_SECONDS = 600
#: A revised completion estimate differing by more than this (or a quarter of the work) from the
#: last one reported is a material change and is reported at once (§11.4).
MATERIAL_CHANGE_US = 600_000_000


def renewed_us(lease: Any) -> int:
    """When a lease was issued or last renewed."""
    return parse_timestamp(lease.last_renewed_at or lease.issued_at).epoch_micros


def run_slot(
    view: View,
    slot: Execution,
    now_us: int,
    *,
    rng: random.Random,
    capabilities: dict[str, str],
    cost: CostModel,
    estimate_us: Callable[[WorkItemRecord], int],
    lease_seconds: int = LEASE_SECONDS,
    failures: int = 0,
    work_functions: Mapping[str, WorkFunction] | None = None,
    work: Callable[[View, WorkItemRecord, Execution], Produced] | None = None,
    report: Callable[[Execution, dict[str, Any], int], dict[str, Any]] | None = None,
) -> Intent | None:
    """The one thing the work in ``slot`` needs next, if anything (``failures``: failed attempts
    of its WorkItem so far; ``work``: the Worker's ``work`` hook, producing the deliverables
    when the attempt's time is up (default: ``produce`` with ``work_functions``, capability ID
    → the function doing work requiring it, else the simulated deliverable); ``report``: the
    Worker's ``progress`` hook, given each structured progress report before it is sent)."""

    def progress_of(phase: str, **kw: Any) -> dict[str, Any]:
        built = progress(slot, phase, now_us, **kw)
        return built if report is None else report(slot, built, now_us)

    item = view.state.work_items[slot.work_item_id]
    lease = view.state.leases[slot.lease_id]
    ref = {
        "workItemId": slot.work_item_id,
        "ownershipEpoch": slot.ownership_epoch,
        "leaseId": slot.lease_id,
    }
    name = short(slot.work_item_id)
    remaining = slot.finish_us - now_us
    finished = slot.failing(now_us) or remaining <= 0
    span = lease.expires_us - renewed_us(lease)
    if lease.expires_us - now_us <= span // 3:
        return Intent(
            kind="ext.missionweaveprotocol.core.work_execution_lease_renew",
            group=slot.group_id,
            why=f"renew the Execution Lease of '{name}' before it expires",
            payload={
                **ref,
                "leaseDurationSeconds": lease_seconds,
                "progress": progress_of("executing"),
            },
            tag="progress",
        )
    if not finished and material_change(slot):
        return Intent(
            kind="ext.missionweaveprotocol.core.work_execution_lease_renew",
            group=slot.group_id,
            why=f"the estimate of '{name}' changed materially: report structured progress",
            payload={
                **ref,
                "leaseDurationSeconds": lease_seconds,
                "progress": progress_of("executing"),
            },
            tag="progress",
        )
    if slot.block_at_us is not None and now_us >= slot.block_at_us:
        return block_intent(slot, ref, slot.block_resolution or BLOCK_RESOLUTION, now_us, report)
    preempted = slot.preempt and not finished
    due = slot.checkpoint_at_us is not None and now_us >= slot.checkpoint_at_us
    if (due or preempted) and not finished:
        return Intent(
            kind="work.checkpoint",
            group=slot.group_id,
            why=(
                f"the Scheduler asked '{name}' to yield: checkpoint at a safe point, pause, "
                "release the slot, re-enter the Group queue (§11.3)"
                if preempted
                else f"a safe, idempotent checkpoint of '{name}' (the slot is released)"
            ),
            payload={
                **ref,
                "preempted": preempted,
                "checkpoint": checkpoint_of(
                    slot, "preempted" if preempted else "checkpointed", now_us, [], report
                ),
            },
            tag="checkpoint",
        )
    if not finished:
        return None
    if slot.state in (S.RUNNING, S.AWAITING_EXTERNAL):
        if slot.operations and slot.tool_budget.get("toolCalls", 1.0) >= 1:
            if slot.state is S.RUNNING:
                slot.move(ST.AWAIT_EXTERNAL)
            return None  # the driver performs the external operation with the slot's token
        if slot.operations:
            slot.fail_with(ST.FINISH, "BUDGET_EXHAUSTED")
        elif slot.failing(now_us):
            slot.fail_with(ST.FINISH, "TRANSIENT")
        else:
            slot.move(ST.FINISH, S.PRODUCING)
    if not slot.usage_recorded:
        return Intent(
            kind="ext.missionweaveprotocol.core.resource_usage_record",
            group=slot.group_id,
            why=f"record what '{name}' consumed (charged up the budget ancestry)",
            payload={
                **ref,
                "delta": {
                    "computeSeconds": max(1, (now_us - slot.started_us) // 1_000_000),
                    "toolCalls": slot.tool_calls + rng.randrange(3),
                },
            },
            tag="usage",
        )
    if slot.state is S.FAILING:
        return fail_intent(
            view, item, slot, ref, now_us, cost=cost, estimate_us=estimate_us, failures=failures
        )
    if slot.state is S.PRODUCING:
        produced = (
            work(view, item, slot)
            if work is not None
            else produce(view, item, slot, work_functions or {})
        )
        if produced.block is not None:
            return block_intent(slot, ref, produced.block.resolution, now_us, report)
        if produced.fail is not None:
            slot.fail_with(ST.WORK_FAILED, produced.fail.reason)
            slot.failure_permanent = produced.fail.permanent
            return fail_intent(
                view, item, slot, ref, now_us, cost=cost, estimate_us=estimate_us, failures=failures
            )
        slot.outputs, slot.claims = produced.deliverables, produced.evidence
        slot.move(ST.PRODUCE)
    if slot.state is not S.PUBLISHING or slot.outputs is None:
        raise SlotTransitionError(
            f"slot {slot.slot_id} of '{name}' is '{slot.state}': nothing to publish"
        )
    for content, media, schema in slot.outputs[len(slot.published) :]:
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        if digest in slot.published:
            raise ValueError(
                f"the work of '{name}' returned two identical deliverables ({digest}); "
                "each deliverable of one WorkItem must differ"
            )
        if view.state.manifest_of(digest, work_item_id=item.work_item_id) is not None:
            # An earlier run of this WorkItem published these very bytes (its outcome may never
            # have reached this slot: a restart, a lapsed lease): this WorkItem's Artifact over
            # them exists, so submit it rather than publish it again.
            slot.published.append(digest)
            continue
        return _publish(view, item, slot, ref, content, capabilities, now_us, name, media, schema)
    return Intent(
        kind="work.submit",
        group=slot.group_id,
        why=f"submit '{name}' with Evidence mapped to every acceptance criterion",
        payload={
            **ref,
            "artifactHashes": list(slot.published),
            "evidence": submission_evidence(view, item, slot, now_us),
        },
    )


def raised(slot: Execution, exc: Exception) -> Produced:
    """The attempt's failure when the Worker's own code raised ``exc``: a refusal the
    Authority's rules make (a ``ProtocolError``, such as ``AUTH_FORBIDDEN`` for an input it may
    not read) fails with its section-19 code, anything else as ``TRANSIENT``; the contract's
    retry policy decides whether another attempt follows. The exception is named in the
    ``work.fail`` reason and its Evidence, so it is never silent."""
    slot.failure_exception = f"{type(exc).__name__}: {exc}"
    code = exc.code.value if isinstance(exc, ProtocolError) else "TRANSIENT"
    return Produced(fail=Fail(reason=code))


def hook_raised(slot: Execution, exc: Exception, now_us: int, hook: str) -> None:
    """A Worker hook running during the attempt (``progress``) raised ``exc``: the report it
    was given goes out unchanged, and the attempt fails at once as ``TRANSIENT`` with the
    exception named (the retry policy decides what follows)."""
    slot.failure_exception = f"{type(exc).__name__}: {exc} (in {hook})"
    slot.fail_at_us = now_us


#: The resolution a simulated blocker asks for.
BLOCK_RESOLUTION = "Clarify the expected output format."


def block_intent(
    slot: Execution,
    ref: dict[str, Any],
    resolution: str,
    now_us: int,
    report: Callable[[Execution, dict[str, Any], int], dict[str, Any]] | None = None,
) -> Intent:
    """``work.block``: checkpoint, name the resolution the work needs, release the slot."""
    return Intent(
        kind="work.block",
        group=slot.group_id,
        why=f"'{short(slot.work_item_id)}' needs a decision: checkpoint, block, release the slot",
        payload={
            **ref,
            "requiredResolution": resolution,
            "checkpoint": checkpoint_of(slot, "blocked", now_us, [resolution], report),
        },
    )


def submission_evidence(
    view: View, item: WorkItemRecord, slot: Execution, now_us: int
) -> list[dict[str, Any]]:
    """The signed Evidence of a submission: what the work claimed, then the Worker's own checks
    for every acceptance criterion the claims leave uncovered."""
    claimed = [
        evidence(view, item, slot, now_us, claim=c, number=n) for n, c in enumerate(slot.claims, 1)
    ]
    covered = {c for claim in slot.claims for c in claim.criteria}
    rest = [
        c["criterionId"]
        for c in item.contract["acceptanceCriteria"]
        if c["criterionId"] not in covered
    ]
    if not rest:
        return claimed
    return [*claimed, evidence(view, item, slot, now_us, criteria=rest if claimed else None)]


def _publish(
    view: View,
    item: WorkItemRecord,
    slot: Execution,
    ref: dict[str, Any],
    content: bytes,
    capabilities: dict[str, str],
    now_us: int,
    name: str,
    media_type: str,
    schema: str,
) -> Intent:
    which = (
        f" ({len(slot.published) + 1} of {len(slot.outputs or ())})"
        if len(slot.outputs or ()) > 1
        else ""
    )
    return Intent(
        kind="artifact.publish",
        group=slot.group_id,
        why=f"publish the deliverable{which} of '{name}' (content-addressed, signed manifest)",
        payload={
            **ref,
            "artifact": manifest(view, item, content, capabilities, now_us, media_type, schema),
        },
        blobs={"sha256:" + hashlib.sha256(content).hexdigest(): content},
        tag="publish",
    )


def request_for(
    view: View, item: WorkItemRecord, slot: Execution, content: ContentSource | None
) -> WorkRequest:
    """The ``WorkRequest`` of the work in ``slot`` (its inputs are read when first asked for)."""
    return WorkRequest(
        work_item_id=slot.work_item_id,
        mission_id=slot.mission_id,
        goal=str(item.contract["goal"]),
        contract=item.contract,
        attempt=slot.attempt,
        idempotency_key=slot.idempotency_key,
        worker=view.me,
        _load=lambda: read_inputs(view.state, view.me, item, content),
    )


def simulated(view: View, item: WorkItemRecord, slot: Execution) -> Produced:
    """The simulated deliverable: a Markdown note of what was done, by whom, when."""
    note = (
        f"# {item.contract['goal']}\n\nProduced by {view.me} for {slot.work_item_id}, "
        f"attempt {slot.attempt}.\nIdempotency key: {slot.idempotency_key}\n"
    )
    media = str(item.contract["requiredDeliverables"][0]["mediaType"])
    schema = str(item.contract["requiredDeliverables"][0]["schema"])
    return Produced(deliverables=((note.encode(), media, schema),))


def bound_function(
    contract: Mapping[str, Any], functions: Mapping[str, WorkFunction]
) -> tuple[str, WorkFunction] | None:
    """The work function bound to one of a contract's required capabilities, if any."""
    for cap in contract["requiredCapabilities"]:
        function = functions.get(cap["id"])
        if function is not None:
            return str(cap["id"]), function
    return None


def produce(
    view: View,
    item: WorkItemRecord,
    slot: Execution,
    functions: Mapping[str, WorkFunction],
    content: ContentSource | None = None,
) -> Produced:
    """What the work in ``slot`` produced: the work function bound to one of the WorkItem's
    required capabilities, called once per run of the attempt, or the simulated note."""
    bound = bound_function(item.contract, functions)
    if bound is None:
        return simulated(view, item, slot)
    cap, function = bound
    try:
        result = function(request_for(view, item, slot, content))
    except Exception as exc:  # the author's code fails the attempt, never the run
        return raised(slot, exc)
    return normalize(result, item.contract, f"the work function for {cap!r}")


def material_change(slot: Execution) -> bool:
    """Whether the slot's completion estimate moved materially since it was last reported."""
    reported = slot.reported_completion_us
    if reported is None:
        return False
    threshold = max(MATERIAL_CHANGE_US, slot.remaining_us // 4)
    return abs(slot.finish_us - reported) > threshold


def checkpoint_of(
    slot: Execution,
    phase: str,
    now_us: int,
    blockers: list[str],
    report: Callable[[Execution, dict[str, Any], int], dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A checkpoint of the slot's work: structured progress and where to resume."""
    built = progress(slot, phase, now_us, blockers=blockers, checkpoint=True)
    return {
        "progress": built if report is None else report(slot, built, now_us),
        "attempt": slot.attempt,
        "takenAt": format_utc(now_us),
        "completedUs": slot.done_before_us + (now_us - slot.started_us),
        "checkpoints": slot.checkpoints_done + (0 if blockers else 1),
    }


def fail_intent(
    view: View,
    item: WorkItemRecord,
    slot: Execution,
    ref: dict[str, Any],
    now_us: int,
    *,
    cost: CostModel,
    estimate_us: Callable[[WorkItemRecord], int],
    failures: int = 0,
) -> Intent:
    """A failed attempt (after ``failures`` earlier failed ones): ``work.fail`` with Evidence,
    permanent when retries are spent."""
    ledger = view.state.budgets.get(("work_item", item.work_item_id))
    expected = cost.expected(estimate_us(item))
    failure = slot.failure or "TRANSIENT"
    verdict = retry_verdict(
        contract=item.contract,
        failure=failure,
        failed_attempts=failures + 1,
        failed_at_us=now_us,
        remaining_budget={d: ledger.remaining(d) if ledger else None for d in expected},
        expected_cost=expected,
        estimate_us=estimate_us(item),
        deadline_us=parse_timestamp(item.contract["deadline"]).epoch_micros,
    )
    if slot.failure_permanent and verdict.retry:
        verdict = replace(verdict, retry=False, why="the work says no retry can help")
    details = {
        "failure": failure,
        "attempt": slot.attempt,
        "failedAttempts": failures + 1,
        "maxAttempts": item.contract["retryPolicy"]["maxAttempts"],
        "sideEffectKeys": list(slot.side_effect_keys),
        "retryAllowed": verdict.retry,
        "notBefore": format_utc(verdict.not_before_us),
    }
    if verdict.why:
        details["whyNoRetry"] = verdict.why
    reason = failure
    if slot.failure_exception is not None:
        details["exception"] = slot.failure_exception
        reason = f"{failure}: {slot.failure_exception}"
    name = short(slot.work_item_id)
    return Intent(
        kind="work.fail",
        group=slot.group_id,
        why=(
            f"attempt {slot.attempt} of '{name}' failed ({reason}); a retry is allowed "
            "after the backoff"
            if verdict.retry
            else f"attempt {slot.attempt} of '{name}' failed for good: {verdict.why}"
        ),
        payload={
            **ref,
            "reason": reason,
            "permanent": not verdict.retry,
            "evidence": [evidence(view, item, slot, now_us, failed=True, details=details)],
        },
    )


def give_up_intent(view: View, item: WorkItemRecord, now_us: int, failures: int) -> Intent:
    """``work.fail`` for good of an owned item whose attempts are all used (never a start)."""
    maximum = item.contract["retryPolicy"]["maxAttempts"]
    slot = Execution(
        slot_id="none",
        work_item_id=item.work_item_id,
        group_id=item.group_id,
        mission_id=item.mission_id,
        lease_id="",
        ownership_epoch=item.ownership_epoch,
        attempt=item.attempts,
        started_us=now_us,
        remaining_us=0,
        checkpoint_at_us=None,
        fail_at_us=None,
        block_at_us=None,
        idempotency_key=execution_key(item.mission_id, item.work_item_id, item.ownership_epoch),
    )
    details = {
        "attempt": item.attempts,
        "failedAttempts": failures,
        "maxAttempts": maximum,
        "retryAllowed": False,
    }
    return Intent(
        kind="work.fail",
        group=item.group_id,
        why=f"all {maximum} attempts of '{short(item.work_item_id)}' failed: "
        "fail for good instead of starting another",
        payload={
            "workItemId": item.work_item_id,
            "ownershipEpoch": item.ownership_epoch,
            "reason": "ATTEMPTS_EXHAUSTED",
            "permanent": True,
            "evidence": [evidence(view, item, slot, now_us, failed=True, details=details)],
        },
        overrides={"expected_revision": item.revision},
        tag="give-up",
    )
