"""Running one execution slot of a Worker (§11.3, §11.4, §12, §13): what the work in the slot
needs next, as an Intent.

In order: renew the Execution Lease before it runs out (with structured progress), report a
material change of the estimate, block with a checkpoint and the required resolution, checkpoint
(when due, or when the Scheduler asked it to yield at a safe point), then, at the end of the
attempt, wait for its external operation (performed by the driver with the slot's own token),
record usage, and either fail (permanently once retries are spent, ``retries.py``) or publish
and submit with Evidence. Every Command cites the slot's current Lease ID and Ownership Epoch.

Pure functions over the slot and the Worker's view; the seeded ``rng`` is the Worker's.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...authority.model import WorkItemRecord
from ...protocol.timestamps import format_utc, parse_timestamp
from ..base import Intent, View
from ..naming import short
from .admission import CostModel
from .documents import evidence, manifest, progress
from .retries import retry_verdict
from .slots import Execution, execution_key

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
) -> Intent | None:
    """The one thing the work in ``slot`` needs next, if anything (``failures``: failed attempts
    of its WorkItem so far; ``work_functions``: capability ID → the function producing the
    deliverable of work requiring it, instead of the simulated one)."""
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
                "progress": progress(slot, "executing", now_us),
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
                "progress": progress(slot, "executing", now_us),
            },
            tag="progress",
        )
    if slot.block_at_us is not None and now_us >= slot.block_at_us:
        resolution = "Clarify the expected output format."
        return Intent(
            kind="work.block",
            group=slot.group_id,
            why=f"'{name}' needs a decision: checkpoint, block, release the slot",
            payload={
                **ref,
                "requiredResolution": resolution,
                "checkpoint": checkpoint_of(slot, "blocked", now_us, [resolution]),
            },
        )
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
                    slot, "preempted" if preempted else "checkpointed", now_us, []
                ),
            },
            tag="checkpoint",
        )
    if not finished:
        return None
    if slot.external is None:
        if slot.operations and slot.tool_budget.get("toolCalls", 1.0) >= 1:
            return None  # the driver performs the external operation with the slot's token
        slot.external = "failed" if slot.failing(now_us) or slot.operations else "ok"
        if slot.external == "failed":
            slot.failure = "BUDGET_EXHAUSTED" if slot.operations else "TRANSIENT"
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
    if slot.external == "failed":
        return fail_intent(
            view, item, slot, ref, now_us, cost=cost, estimate_us=estimate_us, failures=failures
        )
    if slot.published is None:
        if slot.deliverable is None:
            slot.deliverable, slot.deliverable_type = produce(
                view, item, slot, work_functions or {}
            )
        content = slot.deliverable
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        if view.state.manifest_of(digest, work_item_id=item.work_item_id) is not None:
            # An earlier attempt of this WorkItem published these very bytes (its outcome may
            # never have reached this slot: a restart, a lapsed lease): the Artifact exists,
            # content-addressed, so submit it rather than publish it again (refused forever).
            slot.published = digest
        else:
            return _publish(view, item, slot, ref, content, capabilities, now_us, name)
    return Intent(
        kind="work.submit",
        group=slot.group_id,
        why=f"submit '{name}' with Evidence mapped to every acceptance criterion",
        payload={
            **ref,
            "artifactHashes": [slot.published],
            "evidence": [evidence(view, item, slot, now_us)],
        },
    )


def _publish(
    view: View,
    item: WorkItemRecord,
    slot: Execution,
    ref: dict[str, Any],
    content: bytes,
    capabilities: dict[str, str],
    now_us: int,
    name: str,
) -> Intent:
    return Intent(
        kind="artifact.publish",
        group=slot.group_id,
        why=f"publish the deliverable of '{name}' (content-addressed, signed manifest)",
        payload={
            **ref,
            "artifact": manifest(view, item, content, capabilities, now_us, slot.deliverable_type),
        },
        blobs={"sha256:" + hashlib.sha256(content).hexdigest(): content},
        tag="publish",
    )


@dataclass(frozen=True, slots=True)
class WorkRequest:
    """What a work function is given: the WorkItem, its Work Contract and the attempt."""

    work_item_id: str
    mission_id: str
    goal: str
    contract: Mapping[str, Any]
    attempt: int
    #: The WorkItem execution idempotency key: use it for any external effect (MWP-WRK-031).
    idempotency_key: str
    worker: str


#: A function that really does the work of a capability and returns the deliverable the Work
#: Contract requires, as ``bytes`` or ``str`` (UTF-8); it is published with the media type the
#: contract's required deliverable names (the sandbox's contracts ask for ``text/markdown``).
#: It runs in the Worker's decision step, once per attempt, when the simulated duration has
#: elapsed; an exception it raises propagates to the caller of ``Sandbox.step``/``run`` (in
#: threads mode too), so a bug in it is seen, not hidden.
WorkFunction = Callable[[WorkRequest], "bytes | str"]


def produce(
    view: View, item: WorkItemRecord, slot: Execution, functions: Mapping[str, WorkFunction]
) -> tuple[bytes, str]:
    """The deliverable of ``slot`` and its media type: from the work function bound to one of
    the WorkItem's required capabilities, or a simulated Markdown note."""
    for cap in item.contract["requiredCapabilities"]:
        function = functions.get(cap["id"])
        if function is None:
            continue
        request = WorkRequest(
            work_item_id=slot.work_item_id,
            mission_id=slot.mission_id,
            goal=str(item.contract["goal"]),
            contract=item.contract,
            attempt=slot.attempt,
            idempotency_key=slot.idempotency_key,
            worker=view.me,
        )
        result = function(request)
        media = str(item.contract["requiredDeliverables"][0]["mediaType"])
        if isinstance(result, str):
            result = result.encode()
        if not isinstance(result, bytes | bytearray):
            raise TypeError(
                f"the work function for {cap['id']!r} returned {type(result).__name__}; "
                "it must return the deliverable as bytes or str"
            )
        return bytes(result), media
    note = (
        f"# {item.contract['goal']}\n\nProduced by {view.me} for {slot.work_item_id}, "
        f"attempt {slot.attempt}.\nIdempotency key: {slot.idempotency_key}\n"
    )
    return note.encode(), "text/markdown"


def material_change(slot: Execution) -> bool:
    """Whether the slot's completion estimate moved materially since it was last reported."""
    reported = slot.reported_completion_us
    if reported is None:
        return False
    threshold = max(MATERIAL_CHANGE_US, slot.remaining_us // 4)
    return abs(slot.finish_us - reported) > threshold


def checkpoint_of(slot: Execution, phase: str, now_us: int, blockers: list[str]) -> dict[str, Any]:
    """A checkpoint of the slot's work: structured progress and where to resume."""
    return {
        "progress": progress(slot, phase, now_us, blockers=blockers, checkpoint=True),
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
    name = short(slot.work_item_id)
    return Intent(
        kind="work.fail",
        group=slot.group_id,
        why=(
            f"attempt {slot.attempt} of '{name}' failed ({failure}); a retry is allowed "
            "after the backoff"
            if verdict.retry
            else f"attempt {slot.attempt} of '{name}' failed for good: {verdict.why}"
        ),
        payload={
            **ref,
            "reason": failure,
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
