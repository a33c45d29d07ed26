"""Execution Commands of the owning Worker (§11.3, §11.4, §12, §13): start under an Execution
Lease, renew it, checkpoint, block, publish Artifacts, record usage, submit, fail.

Every one of them after ``work.start`` must cite the current Execution Lease ID and Ownership
Epoch: a delayed Command with an older Lease ID is refused even if the epoch is unchanged
(MWP-WRK-013). Checkpoint, block and submit release the lease; failure revokes it. The row of
each transition (``decide``) checks the source state first, then runs the owner and lease
fences; the in-state actions (renew, publish, record usage) check ``IN_STATE_ACTIONS`` first,
then the same fences.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.kinds import ExtensionCommandKind as XC
from ...protocol.documents.kinds import ExtensionEventKind as XE
from ...protocol.errors import ErrorCode, ProtocolError
from ...protocol.hashing import is_sha256_id
from ...protocol.signing import profile_for, verify_parsed
from ...protocol.tables import IN_STATE_ACTIONS, LeaseTransition, WorkItemAction
from .. import budgets, fences, leases, offline
from ..command import CommandView, Draft, item_draft
from ..context import Context, forbidden, invalid, payload_field
from ..decide import Decision, decide, named_item
from ..isolation import check_group_artifacts
from ..model import WorkItemRecord
from ..registry import command

LT = LeaseTransition
USAGE_RECORDED = XE.RESOURCE_USAGE_RECORDED

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


def _in_state(ctx: Context, cmd: CommandView, action: WorkItemAction) -> tuple[WorkItemRecord, Any]:
    """The item of an in-state action, checked in the order of a row: the states
    ``IN_STATE_ACTIONS`` allows first, then the Ownership Epoch and the Lease ID."""
    item = ctx.work_item(cmd.payload.get("workItemId"), cmd.group_id)
    if item.state not in IN_STATE_ACTIONS[action]:
        raise ProtocolError(
            ErrorCode.INVALID_STATE_TRANSITION,
            f"{action} needs WorkItem {item.work_item_id} to be active; it is {item.state}.",
            rule="in-state actions of a WorkItem",
        )
    fences.owner(ctx, cmd, item)
    lease = fences.execution_lease(ctx, cmd, item)
    return item, lease


def _executing(ctx: Context, cmd: CommandView) -> tuple[Decision, Any]:
    """The owner's move of its executing item (the table checks the state, then its row's fences
    check the Ownership Epoch and the Execution Lease) and the lease it cites."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    return move, move.lease


@command(C.WORK_START, aggregate="work_item")
def start(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The owner starts work under a fresh Execution Lease (§11.3): from ``queued`` only (the
    table first), by the owner at its current Ownership Epoch."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item, ownership = move.item, move.lease
    assert ownership is not None
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
    released = leases.close(ctx, ownership, LT.RELEASE, "execution started")
    yield move.draft(
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


@command(XC.WORK_EXECUTION_LEASE_RENEW)
def renew(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Renew the current Execution Lease before it expires, optionally reporting progress."""
    item, lease = _in_state(ctx, cmd, WorkItemAction.RENEW_LEASE)
    renewed = leases.renew(ctx, lease, _duration(ctx, cmd))
    yield item_draft(
        item,
        E.WORK_PROGRESSED,
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


@command(C.WORK_CHECKPOINT, extensions=(offline.BOUNDED_OFFLINE,))
def checkpoint(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Durable progress: release execution, keep a bounded ownership lease (§10.2, §11.3).

    A checkpoint buffered offline (bounded-offline binding, §11.5) is reconciled instead: the
    row's owner and lease fences check the binding against the historical lease, the offline
    usage is charged first, and the checkpoint follows in the same transaction
    (``mwp_local.authority.offline``)."""
    binding = offline.binding_of(cmd)
    if binding is not None:
        yield from _reconcile(ctx, cmd, binding)
        return
    move, lease = _executing(ctx, cmd)
    item = move.item
    point = _checkpoint(cmd)
    released = leases.close(ctx, lease, LT.RELEASE, point.get("reason", "checkpoint"))
    ownership = _ownership_after(ctx, item, "ownership", ctx.config.ownership_after_checkpoint_us)
    yield move.draft(
        checkpoint=point,
        preempted=bool(cmd.payload.get("preempted", False)),
        leases=leases.documents(released, ownership),
    )


def _reconcile(
    ctx: Context, cmd: CommandView, binding: dict[str, Any]
) -> Generator[Draft, Any, None]:
    """Charge the offline usage, then apply the buffered checkpoint (MWP-WRK-021, 022)."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd), binding=binding)
    item, lease = move.item, move.lease
    assert lease is not None
    point = _checkpoint(cmd)
    usage = offline.charge(ctx, cmd, item, binding)  # BUDGET_EXCEEDED before any draft
    closed = []
    if lease.is_active:
        closed.append(leases.close(ctx, lease, LT.RELEASE, "offline progress reconciled"))
    ownership = _ownership_after(ctx, item, "ownership", ctx.config.ownership_after_checkpoint_us)
    if usage is not None:
        yield usage
    draft = move.draft(
        checkpoint=point,
        preempted=False,
        leases=leases.documents(*closed, ownership),
    )
    yield replace(draft, extensions={offline.BOUNDED_OFFLINE: offline.extension_of(cmd)})


@command(C.WORK_BLOCK)
def block(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Checkpoint, state the required resolution, release the slot (§11.4, MWP-WRK-017)."""
    move, lease = _executing(ctx, cmd)
    item = move.item
    resolution = payload_field(cmd, "requiredResolution")
    point = _checkpoint(cmd)
    released = leases.close(ctx, lease, LT.RELEASE, "blocked")
    blocked = _ownership_after(ctx, item, "blocked", ctx.config.blocked_lease_us)
    yield move.draft(
        requiredResolution=resolution,
        checkpoint=point,
        leases=leases.documents(released, blocked),
    )


@command(C.ARTIFACT_PUBLISH)
def publish(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Publish a signed, content-addressed Artifact manifest under the current lease (§13.1)."""
    item, _lease = _in_state(ctx, cmd, WorkItemAction.PUBLISH_ARTIFACT)
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
        if not ctx.state.has_content(source):
            problems.append(f"source Artifact {source} is unknown (provenance must resolve)")
    if not problems:
        # Mission isolation (§13.3, MWP-WRK-028): a source from another Group must have been
        # forwarded here with permission or published as Organization knowledge.
        check_group_artifacts(ctx.state, item.group_id, manifest["sourceArtifactHashes"])
    if manifest["artifactId"] in ctx.state.artifacts:
        # The same content may back several manifests (content addressing names the bytes,
        # §13.1); an artifactId names one manifest, once.
        problems.append(f"an Artifact with ID {manifest['artifactId']} is already published")
    if problems:
        raise invalid("The Artifact manifest was refused: " + "; ".join(problems) + ".")
    yield Draft(
        kind=E.ARTIFACT_PUBLISHED,
        group_id=cmd.group_id,
        work_item_id=item.work_item_id,
        payload={
            "missionId": item.mission_id,
            "workItemId": item.work_item_id,
            "leaseId": cmd.payload["leaseId"],
            "artifact": manifest,
        },
    )


@command(XC.RESOURCE_USAGE_RECORD)
def record_usage(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Charge usage to the WorkItem and its whole budget ancestry at once (§12)."""
    item, _lease = _in_state(ctx, cmd, WorkItemAction.RECORD_USAGE)
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


@command(C.WORK_SUBMIT)
def submit(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Submit Artifacts with Evidence mapped to every acceptance criterion (§13.2)."""
    move, lease = _executing(ctx, cmd)
    item = move.item
    hashes = payload_field(cmd, "artifactHashes", list)
    if not hashes or not all(is_sha256_id(h) for h in hashes):
        raise invalid("A submission names at least one Artifact by its sha256: hash.")
    for h in hashes:
        if ctx.state.manifest_of(h, work_item_id=item.work_item_id) is None:
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
    released = leases.close(ctx, lease, LT.RELEASE, "submitted")
    submission = {
        "artifactHashes": sorted(set(hashes)),
        "evidenceIds": [e["evidenceId"] for e in evidence],
        "submittedAt": ctx.now.text,
    }
    yield move.draft(
        submission=submission,
        evidence=evidence,
        leases=leases.documents(released),
    )


@command(C.WORK_FAIL, actors=("agent",))
def fail(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """The owner (citing its lease) or the Coordinator fails the WorkItem with Evidence."""
    move = decide(ctx, cmd, ctx.tables.work_item, named_item(ctx, cmd))
    item = move.item
    evidence = _evidence(ctx, item, cmd.payload.get("evidence"), "A failure")
    closed = leases.close_all_of_item(ctx, item, LT.REVOKE, "failed")
    yield move.draft(
        reason=cmd.payload.get("reason", "failed"),
        permanent=bool(cmd.payload.get("permanent", False)),
        attempt=item.attempts,
        evidence=evidence,
        leases=leases.documents(*closed),
    )
