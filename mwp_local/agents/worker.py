"""The Worker, a sans-IO policy (§10.3, §11): admission control, per-Group queues, a global
Scheduler into isolated execution slots, Execution Leases, progress, checkpoints, blocking,
retries and submission with Evidence.

Simulated work follows a seeded behaviour model (duration, jitter, chances of failing or
blocking). Everything the Worker knows about a Group comes from the Events delivered to it; its
slots are its own private execution state (one per concurrently executing WorkItem, isolated:
each slot keeps its own Mission, lease, checkpoint and idempotency key).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from ..authority.model import WorkItemRecord
from ..authority.pipeline import Outcome
from ..protocol.tables import WorkItemState
from ..protocol.timestamps import format_utc, parse_timestamp
from ..sim.mission_file import Behaviour
from .base import Intent, View
from .naming import short
from .scheduler import Scheduler
from .scheduler_model import (
    Dispatch,
    PreemptionPolicy,
    QueuedWork,
    RequestedUrgency,
    RequestPreemption,
    SchedulerConfig,
    Slot,
)

W = WorkItemState
DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"
#: The Execution Lease a simulated Worker asks for (renewed a third before it runs out).
LEASE_SECONDS = 600
#: Simulated set-up time during which running work is not at a safe point (§11.3).
SETUP_US = 60_000_000


@dataclass
class Execution:
    """What runs in one isolated execution slot: its own Mission, lease, checkpoint progress and
    side-effect idempotency key, never shared with another slot (MWP-WRK-011)."""

    slot_id: str
    work_item_id: str
    group_id: str
    mission_id: str
    lease_id: str
    ownership_epoch: int
    attempt: int
    started_us: int
    remaining_us: int
    checkpoint_at_us: int | None
    fail_at_us: int | None
    block_at_us: int | None
    idempotency_key: str
    published: str | None = None
    usage_recorded: bool = False
    preempt: bool = False

    def at_safe_point(self, now_us: int) -> bool:
        """Past its set-up phase, the simulated work can checkpoint safely and idempotently."""
        return now_us - self.started_us >= SETUP_US

    @property
    def finish_us(self) -> int:
        """When the work would be done if nothing interrupts it."""
        return self.started_us + self.remaining_us


@dataclass
class WorkerPolicy:
    """A Worker's decisions; ``rng`` is seeded per Worker by the driver."""

    capabilities: dict[str, str]
    max_concurrency: int
    behaviour: Behaviour
    rng: random.Random
    durations: dict[str, int] = field(default_factory=dict)
    slots: dict[str, Execution] = field(default_factory=dict)
    scheduler: Scheduler = field(
        default_factory=lambda: Scheduler(SchedulerConfig(preemption=PreemptionPolicy.COOPERATIVE))
    )
    pending_starts: dict[str, str] = field(default_factory=dict)
    answered: set[str] = field(default_factory=set)
    progress_us: dict[str, int] = field(default_factory=dict)
    checkpoints_done: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ reading the view

    def _mine(self, view: View) -> list[WorkItemRecord]:
        return [
            i for i in view.state.work_items.values() if i.owner and i.owner["agentId"] == view.me
        ]

    def _estimate_us(self, item: WorkItemRecord) -> int:
        base = self.durations.get(item.work_item_id, 600) * 1_000_000
        return int(base / max(self.behaviour.speed, 0.01))

    def _admit(self, view: View, item: WorkItemRecord, now_us: int) -> str | None:
        """Admission control (MWP-WRK-005): a structured decline reason, or None to accept."""
        for cap in item.contract["requiredCapabilities"]:
            have = self.capabilities.get(cap["id"])
            if (
                have is None
                or have.split(".")[0] != cap["version"].split(".")[0]
                or tuple(int(x) for x in have.split("."))
                < tuple(int(x) for x in cap["version"].split("."))
            ):
                return "capability"
        owned = [i for i in self._mine(view) if i.state in (W.QUEUED, W.ACTIVE, W.BLOCKED)]
        if len(owned) >= 2 * self.max_concurrency:
            return "capacity"
        deadline = parse_timestamp(item.contract["deadline"]).epoch_micros
        backlog = sum(self._estimate_us(i) for i in owned) // max(self.max_concurrency, 1)
        if now_us + backlog + self._estimate_us(item) > deadline:
            return "deadline"
        if any(d not in view.state.work_items for d in item.dependencies):
            return "dependency"
        return None

    # ------------------------------------------------------------------ decide

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Answer offers, run slots, then fill free slots."""
        out: list[Intent] = []
        out.extend(self._answer_offers(view, now_us))
        self._forget_lost_slots(view)
        for slot in sorted(self.slots.values(), key=lambda s: s.slot_id):
            intent = self._run_slot(view, slot, now_us)
            if intent is not None:
                out.append(intent)
        out.extend(self._dispatch(view, now_us))
        return out

    def _answer_offers(self, view: View, now_us: int) -> list[Intent]:
        out = []
        for offer in sorted(view.state.offers.values(), key=lambda o: o.offer_id):
            if offer.agent_id != view.me or offer.status != "pending":
                continue
            if offer.offer_id in self.answered or offer.expires_us <= now_us:
                continue
            item = view.state.work_items[offer.work_item_id]
            if item.state is not W.OFFERED:
                continue
            reason = self._admit(view, item, now_us)
            name = short(item.work_item_id)
            if reason is None:
                out.append(
                    Intent(
                        kind="work.accept_offer",
                        group=item.group_id,
                        why=f"admission control passed: accept '{name}' into the queue",
                        payload={
                            "workItemId": item.work_item_id,
                            "offerId": offer.offer_id,
                            "scheduleEstimate": self._estimate(view, item, now_us),
                        },
                        overrides={"expected_revision": item.revision},
                        tag=offer.offer_id,
                    )
                )
            else:
                out.append(
                    Intent(
                        kind="message.post",
                        group=item.group_id,
                        why=f"admission control says no ({reason}): decline '{name}'",
                        payload={
                            "conversationId": item.conversation_id,
                            "workItemId": item.work_item_id,
                            "content": [
                                {"type": "text", "text": f"Declining the offer: {reason}."},
                                {
                                    "type": "data_ref",
                                    "schema": DECLINE_SCHEMA,
                                    "data": {"offerId": offer.offer_id, "reason": reason},
                                },
                            ],
                        },
                        tag=offer.offer_id,
                    )
                )
        return out

    def _estimate(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        """Scheduling disclosure (MWP-WRK-012) from the Scheduler: no other Group's names,
        content, assignments or exact queue positions."""
        probe = item.work_item_id not in self._known()
        if probe:
            self.scheduler.enqueue(self._queued_work(view, item, now_us))
        try:
            return dict(self.scheduler.disclose(item.work_item_id, now_us, self._slots(now_us)))
        finally:
            if probe:
                self.scheduler.remove(item.work_item_id)

    def _known(self) -> set[str]:
        snap = self.scheduler.snapshot()
        queued = {e.work_item_id for g in snap.groups for e in g.queue}
        running = {w for g in snap.groups for w in g.running}
        return queued | running | set(self.slots) | set(self.pending_starts)

    def _queued_work(self, view: View, item: WorkItemRecord, now_us: int) -> QueuedWork:
        gate = item.contract["executionApproval"] == "not_required" or item.execution_approved
        remaining = max(
            1_000_000, self._estimate_us(item) - self.progress_us.get(item.work_item_id, 0)
        )
        return QueuedWork(
            work_item_id=item.work_item_id,
            group_id=item.group_id,
            urgency=RequestedUrgency(item.contract["requestedUrgency"]),
            deadline_us=parse_timestamp(item.contract["deadline"]).epoch_micros,
            enqueued_us=now_us,
            estimated_duration_us=remaining,
            risk_gate_open=bool(gate),
        )

    def _slots(self, now_us: int) -> list[Slot]:
        running = {e.slot_id: e for e in self.slots.values()}
        out = []
        for n in range(self.max_concurrency):
            slot_id = f"slot-{n}"
            if slot_id in running:
                e = running[slot_id]
                out.append(
                    Slot(
                        slot_id=slot_id,
                        work_item_id=e.work_item_id,
                        group_id=e.group_id,
                        started_us=e.started_us,
                        at_safe_point=e.at_safe_point(now_us),
                    )
                )
            else:  # free, or reserved by a pending Dispatch (the Scheduler counts it taken)
                out.append(Slot(slot_id=slot_id))
        return out

    def _forget_lost_slots(self, view: View) -> None:
        for wid, slot in list(self.slots.items()):
            item = view.state.work_items.get(wid)
            if (
                item is None
                or item.execution_lease_id != slot.lease_id
                or item.state is not W.ACTIVE
            ):
                del self.slots[wid]

    def _progress(
        self, item: WorkItemRecord, phase: str, now_us: int, remaining: int
    ) -> dict[str, Any]:
        done = self.checkpoints_done.get(item.work_item_id, 0)
        return {
            "currentPhase": phase,
            "completedMilestones": [f"checkpoint {n}" for n in range(1, done + 1)],
            "nextCheckpoint": "deliverable published",
            "blockers": [],
            "updatedCompletionEstimate": format_utc(now_us + max(remaining, 0)),
            "evidenceIds": [],
        }

    def _run_slot(self, view: View, slot: Execution, now_us: int) -> Intent | None:
        item = view.state.work_items[slot.work_item_id]
        lease = view.state.leases[slot.lease_id]
        ref = {
            "workItemId": slot.work_item_id,
            "ownershipEpoch": slot.ownership_epoch,
            "leaseId": slot.lease_id,
        }
        name = short(slot.work_item_id)
        remaining = slot.finish_us - now_us
        span = (
            lease.expires_us
            - parse_timestamp(lease.last_renewed_at or lease.issued_at).epoch_micros
        )
        if lease.expires_us - now_us <= span // 3 and remaining > 0:
            return Intent(
                kind="ext.missionweaveprotocol.core.execution_lease_renew",
                group=slot.group_id,
                why=f"renew the Execution Lease of '{name}' before it expires",
                payload={
                    **ref,
                    "leaseDurationSeconds": LEASE_SECONDS,
                    "progress": self._progress(item, "executing", now_us, remaining),
                },
            )
        if slot.fail_at_us is not None and now_us >= slot.fail_at_us:
            return Intent(
                kind="work.fail",
                group=slot.group_id,
                why=f"attempt {slot.attempt} of '{name}' failed (a transient error)",
                payload={
                    **ref,
                    "reason": "TRANSIENT",
                    "evidence": [self._evidence(view, item, slot, now_us, failed=True)],
                },
            )
        if slot.block_at_us is not None and now_us >= slot.block_at_us:
            return Intent(
                kind="work.block",
                group=slot.group_id,
                why=f"'{name}' needs a decision: checkpoint, block, release the slot",
                payload={
                    **ref,
                    "requiredResolution": "Clarify the expected output format.",
                    "checkpoint": {"progress": self._progress(item, "blocked", now_us, remaining)},
                },
            )
        preempted = slot.preempt and remaining > 0
        due = slot.checkpoint_at_us is not None and now_us >= slot.checkpoint_at_us
        if (due or preempted) and remaining > 0:
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
                    "checkpoint": {
                        "progress": self._progress(item, "checkpointed", now_us, remaining),
                        "completedUs": self.progress_us.get(slot.work_item_id, 0)
                        + (now_us - slot.started_us),
                    },
                },
                tag="checkpoint",
            )
        if remaining > 0:
            return None
        if not slot.usage_recorded:
            return Intent(
                kind="ext.missionweaveprotocol.core.resource_usage_record",
                group=slot.group_id,
                why=f"record what '{name}' consumed (charged up the budget ancestry)",
                payload={
                    **ref,
                    "delta": {
                        "computeSeconds": max(1, (now_us - slot.started_us) // 1_000_000),
                        "toolCalls": 1 + self.rng.randrange(3),
                    },
                },
                tag="usage",
            )
        if slot.published is None:
            content = (
                f"# {item.contract['goal']}\n\nProduced by {view.me} for {slot.work_item_id}, "
                f"attempt {slot.attempt}.\nIdempotency key: {slot.idempotency_key}\n"
            ).encode()
            return Intent(
                kind="artifact.publish",
                group=slot.group_id,
                why=f"publish the deliverable of '{name}' (content-addressed, signed manifest)",
                payload={**ref, "artifact": self._manifest(view, item, content, now_us)},
                blobs={"sha256:" + hashlib.sha256(content).hexdigest(): content},
                tag="publish",
            )
        return Intent(
            kind="work.submit",
            group=slot.group_id,
            why=f"submit '{name}' with Evidence mapped to every acceptance criterion",
            payload={
                **ref,
                "artifactHashes": [slot.published],
                "evidence": [self._evidence(view, item, slot, now_us)],
            },
        )

    def _manifest(
        self, view: View, item: WorkItemRecord, content: bytes, now_us: int
    ) -> dict[str, Any]:
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        agent = view.state.agents[view.me]
        sources = sorted(
            h for dep in item.dependencies for h in view.state.work_items[dep].submitted_artifacts
        )
        return view.sign(
            "artifact",
            {
                "artifactId": f"urn:mwp-local:artifact:{digest[7:39]}",
                "contentHash": digest,
                "uri": f"mwp-local://blobs/{digest[7:]}",
                "sizeBytes": len(content),
                "mediaType": "text/markdown",
                "schemaUri": item.contract["requiredDeliverables"][0]["schema"],
                "producer": {
                    "agentId": view.me,
                    "agentCardVersion": agent.card_version,
                    "capabilities": [
                        {"id": c, "version": v} for c, v in sorted(self.capabilities.items())
                    ],
                },
                "missionId": item.mission_id,
                "groupId": item.group_id,
                "workItemId": item.work_item_id,
                "sourceArtifactHashes": sources,
                "toolVersions": [{"name": "mwp-local-simulator", "version": "0.1.0"}],
                "modelVersions": [],
                "classification": "internal",
                "createdAt": format_utc(now_us),
            },
        )

    def _evidence(
        self, view: View, item: WorkItemRecord, slot: Execution, now_us: int, failed: bool = False
    ) -> dict[str, Any]:
        subject: dict[str, str] = (
            {"type": "artifact", "id": slot.published}
            if slot.published and not failed
            else {"type": "work_item", "id": item.work_item_id}
        )
        return view.sign(
            "evidence",
            {
                "evidenceId": f"urn:mwp-local:evidence:{short(item.work_item_id)}:"
                f"{slot.ownership_epoch}.{slot.attempt}.{'f' if failed else 'p'}",
                "missionId": item.mission_id,
                "groupId": item.group_id,
                "workItemId": item.work_item_id,
                "type": "failure_report" if failed else "deterministic_test",
                "subject": subject,
                "criterionIds": [c["criterionId"] for c in item.contract["acceptanceCriteria"]],
                "method": "simulated checks of the deliverable against its schema",
                "result": "failed" if failed else "passed",
                "artifactHashes": [slot.published] if slot.published and not failed else [],
                "generatedBy": view.member.actor,
                "createdAt": format_utc(now_us),
            },
        )

    def _sync_queue(self, view: View, now_us: int) -> None:
        """Keep the Scheduler's per-Group queues equal to the owned, startable WorkItems."""
        known = self._known()
        eligible = set()
        for item in self._mine(view):
            if item.state is not W.QUEUED or item.work_item_id in self.slots:
                continue
            lease = view.state.leases.get(item.ownership_lease_id or "")
            if lease is None or not lease.live_at(now_us):
                continue
            if any(view.state.work_items[d].state is not W.VERIFIED for d in item.dependencies):
                continue
            eligible.add(item.work_item_id)
            if item.work_item_id not in known:
                self.scheduler.enqueue(self._queued_work(view, item, now_us))
        snap = self.scheduler.snapshot()
        for group in snap.groups:
            for entry in group.queue:
                if entry.work_item_id not in eligible:
                    self.scheduler.remove(entry.work_item_id)

    def _dispatch(self, view: View, now_us: int) -> list[Intent]:
        """Ask the Scheduler which queued items go into which slots; honour preemption."""
        self._sync_queue(view, now_us)
        for decision in self.scheduler.decide(now_us, self._slots(now_us)):
            if isinstance(decision, Dispatch):
                self.pending_starts[decision.work_item_id] = decision.slot_id
            elif isinstance(decision, RequestPreemption):
                running = self.slots.get(decision.work_item_id)
                if running is not None and running.at_safe_point(now_us):
                    running.preempt = True
        out = []
        for wid, slot_id in sorted(self.pending_starts.items(), key=lambda p: p[1]):
            item = view.state.work_items[wid]
            out.append(
                Intent(
                    kind="work.start",
                    group=item.group_id,
                    why=f"the Scheduler dispatches '{short(wid)}' into {slot_id}",
                    payload={
                        "workItemId": wid,
                        "ownershipEpoch": item.ownership_epoch,
                        "leaseDurationSeconds": LEASE_SECONDS,
                    },
                    tag=f"start:{slot_id}",
                )
            )
        return out

    # ------------------------------------------------------------------ feedback

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Open a slot on start, close it on release, keep the Scheduler's books."""
        wid = intent.payload.get("workItemId", "")
        if intent.kind in ("work.accept_offer", "message.post") and intent.tag:
            self.answered.add(intent.tag)
        if intent.kind == "work.start":
            slot_id = self.pending_starts.pop(wid, "")
            if not outcome.ok:
                self.scheduler.remove(wid)
                return
            self._open(view, wid, slot_id, now_us)
            return
        if not outcome.ok:
            return
        slot = self.slots.get(wid)
        served = now_us - slot.started_us if slot else 0
        if intent.tag == "checkpoint" and slot is not None:
            del self.slots[wid]
            self.progress_us[wid] = self.progress_us.get(wid, 0) + served
            self.checkpoints_done[wid] = self.checkpoints_done.get(wid, 0) + 1
            self.scheduler.requeue(wid, service_us=served)
        elif intent.tag == "usage" and slot is not None:
            slot.usage_recorded = True
        elif intent.tag == "publish" and slot is not None:
            slot.published = intent.payload["artifact"]["contentHash"]
        elif intent.kind in ("work.submit", "work.fail", "work.block"):
            self.slots.pop(wid, None)
            if intent.kind == "work.block":
                self.scheduler.remove(wid, service_us=served)
            else:
                self.scheduler.completed(wid, service_us=served)
            if intent.kind == "work.fail":
                self.progress_us.pop(wid, None)

    def _open(self, view: View, wid: str, slot_id: str, now_us: int) -> None:
        item = view.state.work_items[wid]
        factor = 1 + self.behaviour.jitter * (self.rng.random() - 0.5)
        total = int(self._estimate_us(item) * factor) // 1_000_000 * 1_000_000
        remaining = max(1_000_000, total - self.progress_us.get(wid, 0))
        first = self.checkpoints_done.get(wid, 0) == 0 and remaining > 2 * SETUP_US
        fail = self.rng.random() < self.behaviour.failure_rate
        block = not fail and self.rng.random() < self.behaviour.block_rate
        self.slots[wid] = Execution(
            slot_id=slot_id,
            work_item_id=wid,
            group_id=item.group_id,
            mission_id=item.mission_id,
            lease_id=item.execution_lease_id or "",
            ownership_epoch=item.ownership_epoch,
            attempt=item.attempts,
            started_us=now_us,
            remaining_us=remaining,
            checkpoint_at_us=now_us + _seconds(remaining // 2) if first else None,
            fail_at_us=now_us + _seconds(remaining // 3) if fail else None,
            block_at_us=now_us + _seconds(remaining // 4) if block else None,
            idempotency_key=f"{item.mission_id}|{wid}|{item.ownership_epoch}",
        )

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """The next moment a slot needs attention."""
        times = []
        for slot in self.slots.values():
            lease = view.state.leases.get(slot.lease_id)
            if lease is not None:
                span = (
                    lease.expires_us
                    - parse_timestamp(lease.last_renewed_at or lease.issued_at).epoch_micros
                )
                times.append(lease.expires_us - span // 3)
            times.append(slot.finish_us)
            for t in (slot.checkpoint_at_us, slot.fail_at_us, slot.block_at_us):
                if t is not None:
                    times.append(t)
        future = [t for t in times if t > now_us]
        return min(future) if future else None


def _seconds(micros: int) -> int:
    """Round a simulated span to whole seconds (readable timestamps in the log)."""
    return max(1, micros // 1_000_000) * 1_000_000
