"""Execution Commands of the owning Worker (§11.3, §11.4, §12, §13): start under an Execution
Lease, renew it, checkpoint, block, publish Artifacts, record usage, submit, fail.

Every one of them after ``work.start`` must cite the current Execution Lease ID and Ownership
Epoch: a delayed Command with an older Lease ID is refused even if the epoch is unchanged
(MWP-WRK-013). Checkpoint, block and submit release the lease; failure revokes it.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.hashing import is_sha256_id
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import (
    IN_STATE_ACTIONS,
    WORK_ITEM_TABLE,
    WorkItemAction,
    WorkItemState,
    WorkTransition,
)
from .. import budgets, fences, leases, offline
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..isolation import check_group_artifacts
from ..model import WorkItemRecord
from ..registry import command
from .offers import needs_execution_approval

W = WorkItemState
T = WorkTransition
USAGE_RECORDED = "ext.missionweaveprotocol.core.resource_usage_recorded"

_PROGRESS_MEMBERS = (
    "currentPhase",
    "completedMilestones",
    "nextCheckpoint",
    "blockers",
    "updatedCompletionEstimate",
    "evidenceIds",
)


def _progress(cmd: CommandView, source: Any) -> dict[str, Any] | None:
    """A structured progress report (§11.4) or None; percentages carry no authority."""
    if source is None:
        return None
    if not isinstance(source, dict) or set(source) != set(_PROGRESS_MEMBERS):
        raise invalid(
            "A progress report has exactly: " + ", ".join(_PROGRESS_MEMBERS) + " (§11.4).",
            rule="§11.4 structured progress",
        )
    return dict(source)


_TRANSITIONS = {t.value for t in WorkTransition}


def _executing(ctx: Context, cmd: CommandView, action: str) -> tuple[WorkItemRecord, Any]:
    """The item, checked in the pipeline's order: Ownership Epoch, Lease ID, then the table."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    fences.owner(ctx, cmd, item)
    lease = fences.execution_lease(ctx, cmd, item)
    if action in _TRANSITIONS:
        WORK_ITEM_TABLE.lookup(item.state, WorkTransition(action), subject=item.work_item_id)
    elif item.state not in IN_STATE_ACTIONS[WorkItemAction(action)]:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"{action} needs WorkItem {item.work_item_id} to be active; it is {item.state}.",
            rule="in-state actions of a WorkItem",
        )
    return item, lease


@command("work.start", aggregate="work_item")
def start(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The owner starts work under a fresh Execution Lease (§11.3); the Ownership Epoch fence
    comes before the table, in the pipeline's order, so a stale owner learns it is stale."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    fences.owner(ctx, cmd, item)
    WORK_ITEM_TABLE.lookup(item.state, T.START, subject=item.work_item_id)
    ownership = ctx.state.leases.get(item.ownership_lease_id or "")
    if ownership is None or not ownership.live_at(ctx.now_us):
        raise ProtocolError(
            ErrorCode.WORK_LEASE_EXPIRED,
            f"The ownership lease of {item.work_item_id} has expired (start-by "
            f"{ownership.start_by if ownership else 'unknown'}); the item may be reassigned.",
            rule="§11.3 an ownership grant has a start-by deadline",
        )
    if needs_execution_approval(ctx, item) and not item.execution_approved:
        raise ProtocolError(
            ErrorCode.APPROVAL_REQUIRED,
            f"WorkItem {item.work_item_id} is awaiting execution approval "
            f"({item.contract['executionApproval']}, risk {item.contract['sideEffectRisk']}).",
            rule="§12 awaiting_execution_approval",
        )
    pending = [d for d in item.dependencies if ctx.state.work_items[d].state is not W.VERIFIED]
    if pending:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"WorkItem {item.work_item_id} is not eligible: its dependencies "
            f"{', '.join(pending)} are not verified yet.",
            details={"pendingDependencies": pending},
            rule="§10.4 eligible only when dependencies satisfy the dependency policy",
        )
    duration = _duration(ctx, cmd)
    agent = ctx.state.agents[cmd.actor_id]
    execution = leases.issue(
        ctx,
        lease_type="execution",
        mission_id=item.mission_id,
        group_id=item.group_id,
        holder=cmd.actor_id,
        session_epoch=agent.session_epoch,
        duration_us=duration,
        work_item_id=item.work_item_id,
        ownership_epoch=item.ownership_epoch,
    )
    released = leases.close(ctx, ownership, "released", "execution started")
    yield item_draft(
        item,
        "work.started",
        to="active",
        attempt=item.attempts + (item.ownership_epoch != item.attempt_epoch),
        executionLeaseId=execution.lease_id,
        idempotencyKey=f"{item.mission_id}|{item.work_item_id}|{item.ownership_epoch}",
        leases=leases.documents(released, execution),
    )


def _duration(ctx: Context, cmd: CommandView) -> int:
    seconds = cmd.payload.get("leaseDurationSeconds")
    if seconds is None:
        return ctx.config.execution_lease_us
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        raise invalid("leaseDurationSeconds must be a positive integer.")
    micros = seconds * 1_000_000
    if micros > ctx.config.max_execution_lease_us:
        raise invalid(
            f"An Execution Lease may last at most {ctx.config.max_execution_lease_us // 1_000_000}"
            " seconds."
        )
    return micros


@command("ext.missionweaveprotocol.core.execution_lease_renew")
def renew(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Renew the current Execution Lease before it expires, optionally reporting progress."""
    item, lease = _executing(ctx, cmd, WorkItemAction.RENEW_LEASE.value)
    renewed = leases.renew(ctx, lease, _duration(ctx, cmd))
    yield item_draft(
        item,
        "work.progressed",
        progress=_progress(cmd, cmd.payload.get("progress")),
        leases=leases.documents(renewed),
    )


def _ownership_after(ctx: Context, item: WorkItemRecord, lease_type: str, duration: int) -> Any:
    assert item.owner is not None
    agent = ctx.state.agents[item.owner["agentId"]]
    return leases.issue(
        ctx,
        lease_type=lease_type,
        mission_id=item.mission_id,
        group_id=item.group_id,
        holder=item.owner["agentId"],
        session_epoch=agent.session_epoch,
        duration_us=duration,
        work_item_id=item.work_item_id,
        ownership_epoch=item.ownership_epoch,
        start_by_us=ctx.now_us + duration if lease_type == "ownership" else None,
    )


def _checkpoint(cmd: CommandView) -> dict[str, Any]:
    checkpoint = payload_field(cmd, "checkpoint", dict)
    progress = _progress(cmd, checkpoint.get("progress"))
    if progress is None:
        raise invalid("A checkpoint carries a structured progress report (§11.4).")
    return {**checkpoint, "progress": progress}


@command("work.checkpoint", extensions=(offline.BOUNDED_OFFLINE,))
def checkpoint(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Durable progress: release execution, keep a bounded ownership lease (§10.2, §11.3).

    A checkpoint buffered offline (bounded-offline binding, §11.5) is reconciled instead: the
    binding is checked against the historical lease, the offline usage is charged first, and
    the checkpoint follows in the same transaction (``mwp_local.authority.offline``)."""
    binding = offline.binding_of(cmd)
    if binding is not None:
        yield from _reconcile(ctx, cmd, binding)
        return
    item, lease = _executing(ctx, cmd, T.CHECKPOINT.value)
    point = _checkpoint(cmd)
    released = leases.close(ctx, lease, "released", point.get("reason", "checkpoint"))
    ownership = _ownership_after(ctx, item, "ownership", ctx.config.ownership_after_checkpoint_us)
    yield item_draft(
        item,
        "work.checkpointed",
        to="queued",
        checkpoint=point,
        preempted=bool(cmd.payload.get("preempted", False)),
        leases=leases.documents(released, ownership),
    )


def _reconcile(
    ctx: Context, cmd: CommandView, binding: dict[str, Any]
) -> Generator[Draft, Any, None]:
    """Charge the offline usage, then apply the buffered checkpoint (MWP-WRK-021, 022)."""
    item, lease = offline.check(ctx, cmd, binding)
    WORK_ITEM_TABLE.lookup(item.state, T.CHECKPOINT, subject=item.work_item_id)
    point = _checkpoint(cmd)
    usage = offline.charge(ctx, cmd, item, binding)  # BUDGET_EXCEEDED before any draft
    closed = []
    if lease.is_active:
        closed.append(leases.close(ctx, lease, "released", "offline progress reconciled"))
    ownership = _ownership_after(ctx, item, "ownership", ctx.config.ownership_after_checkpoint_us)
    if usage is not None:
        yield usage
    draft = item_draft(
        item,
        "work.checkpointed",
        to="queued",
        checkpoint=point,
        preempted=False,
        leases=leases.documents(*closed, ownership),
    )
    yield replace(draft, extensions={offline.BOUNDED_OFFLINE: offline.extension_of(cmd)})


@command("work.block")
def block(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Checkpoint, state the required resolution, release the slot (§11.4, MWP-WRK-017)."""
    item, lease = _executing(ctx, cmd, T.BLOCK.value)
    resolution = payload_field(cmd, "requiredResolution")
    point = _checkpoint(cmd)
    released = leases.close(ctx, lease, "released", "blocked")
    blocked = _ownership_after(ctx, item, "blocked", ctx.config.blocked_lease_us)
    yield item_draft(
        item,
        "work.blocked",
        to="blocked",
        requiredResolution=resolution,
        checkpoint=point,
        leases=leases.documents(released, blocked),
    )


@command("artifact.publish")
def publish(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Publish a signed, content-addressed Artifact manifest under the current lease (§13.1)."""
    item, _lease = _executing(ctx, cmd, WorkItemAction.PUBLISH_ARTIFACT.value)
    manifest = payload_field(cmd, "artifact", dict)
    verified = verify_parsed(profile_for("artifact"), manifest, ctx.state.registry)
    if verified.principal.id != cmd.actor_id:
        raise forbidden("An Artifact manifest is signed by its producing Agent, the actor.")
    agent = ctx.state.agents[cmd.actor_id]
    problems = []
    if manifest["workItemId"] != item.work_item_id or manifest["groupId"] != item.group_id:
        problems.append("it names another WorkItem or Group")
    if manifest["missionId"] != item.mission_id:
        problems.append("it names another Mission")
    if manifest["producer"]["agentCardVersion"] != agent.card_version:
        problems.append(
            f"it records Agent Card version {manifest['producer']['agentCardVersion']}, "
            f"not the current {agent.card_version}"
        )
    for source in manifest["sourceArtifactHashes"]:
        if source not in ctx.state.artifacts:
            problems.append(f"source Artifact {source} is unknown (provenance must resolve)")
    if not problems:
        # Mission isolation (§13.3, MWP-WRK-028): a source from another Group must have been
        # forwarded here with permission or published as Organization knowledge.
        check_group_artifacts(ctx.state, item.group_id, manifest["sourceArtifactHashes"])
    if manifest["contentHash"] in ctx.state.artifacts:
        problems.append("an Artifact with this content hash is already published")
    if problems:
        raise invalid("The Artifact manifest was refused: " + "; ".join(problems) + ".")
    yield Draft(
        kind="artifact.published",
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "leaseId": cmd.payload["leaseId"],
            "artifact": manifest,
        },
    )


@command("ext.missionweaveprotocol.core.resource_usage_record")
def record_usage(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Charge usage to the WorkItem and its whole budget ancestry at once (§12)."""
    item, _lease = _executing(ctx, cmd, WorkItemAction.RECORD_USAGE.value)
    delta = budgets.parse_delta(cmd.payload.get("delta"))
    chain = budgets.charge(budgets.ancestry(ctx.state, ("work_item", item.work_item_id)), delta)
    yield Draft(
        kind=USAGE_RECORDED,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "ownershipEpoch": item.ownership_epoch,
            "leaseId": cmd.payload["leaseId"],
            "sessionEpoch": cmd.session_epoch,
            "delta": {budgets.DELTA_MEMBER[d]: v for d, v in sorted(delta.items())},
            "ancestry": [budgets.ledger_summary(ledger) for ledger in chain],
        },
    )


def _evidence(
    ctx: Context, item: WorkItemRecord, documents: Any, what: str
) -> list[dict[str, Any]]:
    if not isinstance(documents, list) or not documents:
        raise invalid(f"{what} needs at least one signed Evidence document.")
    out = []
    for evidence in documents:
        verify_parsed(profile_for("evidence"), evidence, ctx.state.registry)
        if evidence["workItemId"] != item.work_item_id or evidence["missionId"] != item.mission_id:
            raise invalid(f"Evidence {evidence['evidenceId']} is about another WorkItem.")
        out.append(evidence)
    return out


@command("work.submit")
def submit(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Submit Artifacts with Evidence mapped to every acceptance criterion (§13.2)."""
    item, lease = _executing(ctx, cmd, T.SUBMIT.value)
    hashes = payload_field(cmd, "artifactHashes", list)
    if not hashes or not all(is_sha256_id(h) for h in hashes):
        raise invalid("A submission names at least one Artifact by its sha256: hash.")
    for h in hashes:
        artifact = ctx.state.artifacts.get(h)
        if artifact is None or artifact["workItemId"] != item.work_item_id:
            raise invalid(f"Artifact {h} was not published for this WorkItem.")
    evidence = _evidence(ctx, item, cmd.payload.get("evidence"), "A submission")
    covered = {c for e in evidence for c in e["criterionIds"]}
    required = {c["criterionId"] for c in item.contract["acceptanceCriteria"]}
    missing = sorted(required - covered)
    if missing:
        raise invalid(
            f"A completion claim is not enough: no Evidence maps to acceptance criteria "
            f"{', '.join(missing)}.",
            rule="§13.2 submission includes Evidence mapped to acceptance criteria",
            missing=missing,
        )
    released = leases.close(ctx, lease, "released", "submitted")
    submission = {
        "artifactHashes": sorted(set(hashes)),
        "evidenceIds": [e["evidenceId"] for e in evidence],
        "submittedAt": ctx.now.text,
    }
    yield item_draft(
        item,
        "work.submitted",
        to="submitted",
        submission=submission,
        evidence=evidence,
        leases=leases.documents(released),
    )


@command("work.fail", actors=("agent",))
def fail(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The owner (citing its lease) or the Coordinator fails the WorkItem with Evidence."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    mission = ctx.mission_of(cmd.group_id)
    if cmd.actor_id == mission.coordinator_agent_id and (
        item.owner is None or item.owner["agentId"] != cmd.actor_id
    ):
        fences.coordinator(ctx, cmd)
    else:
        fences.owner(ctx, cmd, item)
        if item.state is W.ACTIVE:
            fences.execution_lease(ctx, cmd, item)
    fences.revision(item.revision, cmd, f"WorkItem {item.work_item_id}")
    WORK_ITEM_TABLE.lookup(item.state, T.FAIL, subject=item.work_item_id)
    evidence = _evidence(ctx, item, cmd.payload.get("evidence"), "A failure")
    closed = leases.close_all_of_item(ctx, item, "revoked", "failed")
    yield item_draft(
        item,
        "work.failed",
        to="failed",
        reason=cmd.payload.get("reason", "failed"),
        permanent=bool(cmd.payload.get("permanent", False)),
        attempt=item.attempts,
        evidence=evidence,
        leases=leases.documents(*closed),
    )
