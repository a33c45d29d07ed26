"""The Worker, a sans-IO policy (§10.3, §11, §12): admission control, per-Group queues, a global
Scheduler into isolated execution slots, Execution Leases, progress, checkpoints, blocking,
bounded retries and submission with Evidence.

Everything the Worker knows about a Group comes from the Events delivered to it (its replica
and ``observe``); whatever it must remember across a restart is derived from them, so a rebuilt
runtime decides as the old one would. Its slots are its own private execution state
(``slots.py``): one per concurrently executing WorkItem, isolated from each other. Simulated work
follows a seeded behaviour model (duration, jitter, chances of failing or blocking).

The driver's side of the contract, beyond ``decide``/``on_outcome``: after each action it hands
capability tokens to the slots that ask (``token_requests`` → ``grant_token``) and performs the
slots' external operations (``external_calls`` → ``on_external``). Admission control lives in
``admission.py``, the retry rules in ``retries.py``, running a slot in ``execution.py``, what
real work sees and returns in ``work.py``.

**Hooks** (``WorkerHooks``): the decisions a subclass may change, each defaulting to the
built-in behaviour: ``admit`` (accept or decline an offer), ``blocks`` (whether the work will
block, and on what), ``work`` (the work itself: a ``WorkRequest`` in, deliverables out) and
``progress`` (each structured progress report before it is sent). Everything they return goes
through the Group Authority like any other Command.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ...artifacts.checks import ContentSource
from ...authority.model import WorkItemRecord
from ...authority.pipeline import Outcome
from ...authority.tokens import CapabilityToken
from ...protocol.tables import OfferStatus, WorkItemState
from ...protocol.timestamps import parse_timestamp
from ..base import BasePolicy, Intent, View
from ..naming import short
from ..scheduler.core import Scheduler
from ..scheduler.model import (
    Dispatch,
    PreemptionPolicy,
    QueuedWork,
    RequestedUrgency,
    RequestPreemption,
    SchedulerConfig,
    Slot,
)
from ..specs import Behaviour
from .admission import (
    DECLINE_SCHEMA,
    QUESTION_SCHEMA,
    Admission,
    AdmissionInputs,
    CostModel,
    Eligibility,
    ambiguities,
)
from .admission import admit as admission_control
from .documents import offer_reply, presence_record
from .execution import (
    BLOCK_RESOLUTION,
    LEASE_SECONDS,
    bound_function,
    give_up_intent,
    hook_raised,
    raised,
    renewed_us,
    request_for,
    run_slot,
)
from .index import WorkerIndex, work_item_of
from .lifecycle import SlotTransition as ST
from .retries import backoff_us
from .slots import SETUP_US, Execution, ExternalCall, SlotView, TokenRequest, execution_key
from .work import Produced, WorkFunction, WorkOutput, WorkRequest, normalize

W = WorkItemState

__all__ = ["DECLINE_SCHEMA", "LEASE_SECONDS", "SETUP_US", "Execution", "WorkerPolicy"]


@dataclass
class WorkerPolicy(BasePolicy):
    """A Worker's decisions; ``rng`` is seeded per Worker by the driver."""

    capabilities: dict[str, str]
    max_concurrency: int
    behaviour: Behaviour
    rng: random.Random
    durations: dict[str, int] = field(default_factory=dict)
    #: What the Organization cleared this Worker for, and what it expects an attempt to cost.
    eligibility: Eligibility = field(default_factory=Eligibility)
    cost: CostModel = field(default_factory=CostModel)
    #: Owned items (queued, active, blocked) it commits to at most; None: twice its slots.
    queue_capacity: int | None = None
    unavailable_capabilities: frozenset[str] = frozenset()
    #: Organization priority class per Group, set by policy or the MissionOwner (never by a
    #: Coordinator); Groups not named are class 0 (MWP-WRK-009, 010).
    priority_classes: dict[str, int] = field(default_factory=dict)
    #: How long a fresh run stays at an unsafe point (no preemption, no checkpoint).
    setup_us: int = SETUP_US
    #: The Execution Lease it asks for on start and renewal (renewed a third before expiry).
    lease_seconds: int = LEASE_SECONDS
    #: Capability ID → a function that really does the work and returns the deliverable.
    work_functions: dict[str, WorkFunction] = field(default_factory=dict)
    #: Verified Artifact content (the Sandbox's blob store): where a ``WorkRequest`` reads the
    #: inputs of the work.
    content: ContentSource | None = None
    scheduler: Scheduler = field(
        default_factory=lambda: Scheduler(SchedulerConfig(preemption=PreemptionPolicy.COOPERATIVE))
    )
    slots: dict[str, Execution] = field(default_factory=dict)
    pending_starts: dict[str, str] = field(default_factory=dict)
    #: Offers this Worker answered (accepted, declined or questioned), from Events and outcomes.
    answered: set[str] = field(default_factory=set)
    #: WorkItem → when its latest attempt failed and how many failed (from ``work.failed``
    #: Events): backoff and the retry budget; and the WorkItems failed for good.
    failed_at: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    given_up: set[str] = field(default_factory=set)
    #: Ready-Group set at dispatch → Group → service given (µs): the fairness the slots saw.
    service: dict[tuple[str, ...], dict[str, int]] = field(default_factory=dict)
    _ready_at_dispatch: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: What this Worker holds and is offered, kept by ``observe`` (``worker_index``).
    index: WorkerIndex = field(default_factory=WorkerIndex)
    #: Each slot as the Scheduler sees it when free (immutable values, built once).
    _free_slots: list[Slot] = field(default_factory=list)

    # ------------------------------------------------------------------ reading the view

    def _mine_held(self, view: View) -> list[WorkItemRecord]:
        """The owned WorkItems queued, active or blocked, in the replica's order (the index)."""
        return self.index.held_items(view)

    def _mine_queued(self, view: View) -> list[WorkItemRecord]:
        """The owned WorkItems in state QUEUED, in the replica's order."""
        return [item for item in self._mine_held(view) if item.state is W.QUEUED]

    def _estimate_us(self, item: WorkItemRecord) -> int:
        base = self.durations.get(item.work_item_id, 600) * 1_000_000
        return int(base / max(self.behaviour.speed, 0.01))

    def _resume_point(self, item: WorkItemRecord) -> tuple[int, int]:
        """Work already done and its checkpoint count, from the latest checkpoint in the log.

        Work resumes from the latest checkpoint, also under a new Ownership Epoch (§11.5:
        reassignment from the latest checkpoint), unless an attempt failed after it.
        """
        point = item.last_checkpoint
        if not point or "takenAt" not in point:
            return 0, 0
        failed = self.failed_at.get(item.work_item_id)
        if failed is not None and failed >= parse_timestamp(point["takenAt"]).epoch_micros:
            return 0, 0
        return int(point.get("completedUs", 0)), int(point.get("checkpoints", 0))

    def _remaining_us(self, item: WorkItemRecord) -> int:
        return max(1_000_000, self._estimate_us(item) - self._resume_point(item)[0])

    def _not_before(self, item: WorkItemRecord) -> int | None:
        """The earliest start of a new attempt (retry backoff after a failure)."""
        failed = self.failed_at.get(item.work_item_id)
        if failed is None:
            return None
        failures = self.failures.get(item.work_item_id, 1)
        return failed + backoff_us(item.contract["retryPolicy"], failures)

    # ------------------------------------------------------------------ Events

    def observe(self, view: View, event: dict[str, Any]) -> None:
        """Remember what must survive a restart: answered offers and failure times; keep the
        indexes of owned and offered WorkItems."""
        kind = event["kind"]
        payload = event.get("payload", {})
        work_item_id = work_item_of(payload)
        if work_item_id is not None:
            self.index.reindex(view, work_item_id, self.answered)
        if kind == "work.failed":
            wid = payload["workItemId"]
            self.failed_at[wid] = parse_timestamp(event["occurredAt"]).epoch_micros
            self.failures[wid] = self.failures.get(wid, 0) + 1
            if payload.get("permanent"):
                self.given_up.add(wid)
        elif kind == "message.posted" and payload["message"]["author"]["id"] == view.me:
            for part in payload["message"]["content"]:
                if part.get("type") == "data_ref" and part.get("schema") in (
                    DECLINE_SCHEMA,
                    QUESTION_SCHEMA,
                ):
                    offer_id = part.get("data", {}).get("offerId")
                    if isinstance(offer_id, str):
                        self.answered.add(offer_id)

    # ------------------------------------------------------------------ hooks

    def admit(self, view: View, item: WorkItemRecord, now_us: int) -> Admission:
        """Whether to accept the offer of ``item`` (its contract is ``item.contract``): the
        built-in admission control of §10.3 (capacity, capability, deadline, authorization,
        dependencies, budget). Return ``Admission.decline(reason, detail)`` to decline (a
        structured decline is posted in the WorkItem Conversation), ``Admission.accept()`` to
        accept; an essential ambiguity in the contract is asked about before this is called."""
        return admission_control(self._admission(view, item, now_us))

    def blocks(self, view: View, item: WorkItemRecord, now_us: int) -> str | None:
        """Whether the run of ``item`` starting now will block, and the resolution it will
        need (it blocks a quarter of the way in); None: it will not. Default: the seeded
        behaviour model (``Behaviour.block_rate``)."""
        if self.rng.random() < self.behaviour.block_rate:
            return BLOCK_RESOLUTION
        return None

    def work(self, request: WorkRequest) -> WorkOutput:
        """The work itself, called once per run of an attempt when its time is up: the function
        bound to one of the WorkItem's capabilities (``work_functions``), else a simulated
        Markdown note. Returns what a work function returns (``work.py``)."""
        bound = bound_function(request.contract, self.work_functions)
        if bound is not None:
            return bound[1](request)
        return (
            f"# {request.goal}\n\nProduced by {request.worker} for {request.work_item_id}, "
            f"attempt {request.attempt}.\nIdempotency key: {request.idempotency_key}\n"
        )

    def progress(self, slot: SlotView, report: dict[str, Any], now_us: int) -> dict[str, Any]:
        """The structured progress report (§11.4: phase, milestones, next checkpoint, blockers,
        estimate, Evidence IDs; never a percentage) about to be sent for ``slot``, with a lease
        renewal or a checkpoint; return it as it should go out. Default: unchanged."""
        return report

    def _produce(self, view: View, item: WorkItemRecord, slot: Execution) -> Produced:
        bound = bound_function(item.contract, self.work_functions)
        who = (
            f"the work function for {bound[0]!r}"
            if bound is not None and type(self).work is WorkerPolicy.work
            else f"{type(self).__name__}.work"
        )
        try:
            result = self.work(request_for(view, item, slot, self.content))
        except Exception as exc:  # the author's code fails the attempt, never the run
            return raised(slot, exc)
        return normalize(result, item.contract, who)

    def _report(self, slot: Execution, report: dict[str, Any], now_us: int) -> dict[str, Any]:
        try:
            return self.progress(slot.view(), report, now_us)
        except Exception as exc:  # the author's hook fails the attempt, never the run
            hook_raised(slot, exc, now_us, f"{type(self).__name__}.progress")
            return report

    # ------------------------------------------------------------------ decide

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Answer offers, let the Scheduler decide, run the slots, then start what it
        dispatched."""
        out: list[Intent] = []
        out.extend(self._answer_offers(view, now_us))
        self._forget_lost_slots(view, now_us)
        # The Scheduler decides first, so a slot asked to yield checkpoints in this same round.
        starts = self._dispatch(view, now_us)
        report = self._report if type(self).progress is not WorkerPolicy.progress else None
        for slot in sorted(self.slots.values(), key=lambda s: s.slot_id):
            intent = run_slot(
                view,
                slot,
                now_us,
                rng=self.rng,
                capabilities=self.capabilities,
                cost=self.cost,
                estimate_us=self._estimate_us,
                lease_seconds=self.lease_seconds,
                failures=self.failures.get(slot.work_item_id, 0),
                work=self._produce,
                report=report,
            )
            if intent is not None:
                out.append(intent)
        out.extend(starts)
        return out

    def _admission(self, view: View, item: WorkItemRecord, now_us: int) -> AdmissionInputs:
        return AdmissionInputs(
            item=item,
            state=view.state,
            agent_id=view.me,
            now_us=now_us,
            capabilities=self.capabilities,
            unavailable_capabilities=self.unavailable_capabilities,
            max_concurrency=self.max_concurrency,
            queue_capacity=(
                2 * self.max_concurrency if self.queue_capacity is None else self.queue_capacity
            ),
            eligibility=self.eligibility,
            cost=self.cost,
            estimate_us=self._remaining_us,
            not_before_us=self._not_before(item),
            failures=self.failures,
            given_up=self.given_up,
            owned=tuple(i for i in self._mine_held(view) if i.work_item_id != item.work_item_id),
        )

    def _answer_offers(self, view: View, now_us: int) -> list[Intent]:
        """Answer the pending offers addressed to this Worker (by offer ID, from the index)."""
        out = []
        for offer_id in sorted(self.index.open_offers):
            offer = view.state.offers[offer_id]
            if offer.status != OfferStatus.PENDING or offer_id in self.answered:
                self.index.open_offers.discard(offer_id)  # for good: neither comes back
                continue
            if offer.agent_id != view.me or offer.expires_us <= now_us:
                continue
            item = view.state.work_items[offer.work_item_id]
            if item.state is not W.OFFERED or offer.contract_version != item.contract_version:
                continue
            out.append(self._answer(view, item, offer.offer_id, now_us))
        return out

    def _answer(self, view: View, item: WorkItemRecord, offer_id: str, now_us: int) -> Intent:
        name = short(item.work_item_id)
        questions = ambiguities(item.contract)
        if questions:  # MWP-WRK-002: ask in the WorkItem Conversation, do not accept
            return offer_reply(
                item,
                offer_id,
                why=f"the contract of '{name}' is ambiguous: ask before accepting (§10.1)",
                text="Before I can accept, the contract must answer: " + " ".join(questions),
                schema=QUESTION_SCHEMA,
                data={
                    "offerId": offer_id,
                    "contractVersion": item.contract_version,
                    "questions": questions,
                },
            )
        admission = self.admit(view, item, now_us)
        if admission.accepted:
            return Intent(
                kind="work.accept_offer",
                group=item.group_id,
                why=f"admission control passed: accept '{name}' into the queue",
                payload={
                    "workItemId": item.work_item_id,
                    "offerId": offer_id,
                    "scheduleEstimate": self._estimate(view, item, now_us),
                },
                overrides={"expected_revision": item.revision},
                tag=offer_id,
            )
        reason = str(admission.reason)
        return offer_reply(
            item,
            offer_id,
            why=f"admission control says no ({reason}): decline '{name}'",
            text=f"Declining the offer: {reason} ({admission.details[reason]}).",
            schema=DECLINE_SCHEMA,
            data={
                "offerId": offer_id,
                "reason": reason,
                "reasons": [str(r) for r in admission.reasons],
                "details": admission.details,
            },
        )

    def _estimate(self, view: View, item: WorkItemRecord, now_us: int) -> dict[str, Any]:
        """Scheduling disclosure (MWP-WRK-012) from the Scheduler: no other Group's names,
        content, assignments or exact queue positions."""
        probe = item.work_item_id not in self._known()
        if probe:
            self.scheduler.enqueue(self._queued_work(item, now_us))
        try:
            return dict(self.scheduler.disclose(item.work_item_id, now_us, self._slots(now_us)))
        finally:
            if probe:
                self.scheduler.remove(item.work_item_id)

    def _known(self) -> set[str]:
        known = self.scheduler.queued_ids() | self.scheduler.in_flight_ids()
        return set(known) | set(self.slots) | set(self.pending_starts)

    def _queued_work(self, item: WorkItemRecord, now_us: int) -> QueuedWork:
        gate = item.contract["executionApproval"] == "not_required" or item.execution_approved
        return QueuedWork(
            work_item_id=item.work_item_id,
            group_id=item.group_id,
            urgency=RequestedUrgency(item.contract["requestedUrgency"]),
            deadline_us=parse_timestamp(item.contract["deadline"]).epoch_micros,
            enqueued_us=now_us,
            estimated_duration_us=self._remaining_us(item),
            risk_gate_open=bool(gate),
            priority_class=self.priority_classes.get(item.group_id, 0),
        )

    def _slots(self, now_us: int) -> list[Slot]:
        running = {e.slot_id: e for e in self.slots.values()}
        if len(self._free_slots) != self.max_concurrency:
            self._free_slots = [Slot(slot_id=f"slot-{n}") for n in range(self.max_concurrency)]
        out = []
        for free in self._free_slots:
            slot_id = free.slot_id
            if slot_id in running:
                out.append(running[slot_id].scheduler_slot(now_us))
            else:  # free, or reserved by a pending Dispatch (the Scheduler counts it taken)
                out.append(free)
        return out

    def _forget_lost_slots(self, view: View, now_us: int) -> None:
        """Give up slots whose lease is gone: replaced, closed, or run out (a Worker never acts
        without a live Execution Lease; the Coordinator re-offers from the latest checkpoint)."""
        for wid, slot in list(self.slots.items()):
            item = view.state.work_items.get(wid)
            lease = view.state.leases.get(slot.lease_id)
            if (
                item is None
                or item.execution_lease_id != slot.lease_id
                or item.state is not W.ACTIVE
                or lease is None
                or not lease.live_at(now_us)
            ):
                slot.move(ST.LOSE)
                del self.slots[wid]
                self._served(slot, max(0, min(now_us, slot.finish_us) - slot.started_us))
                self.scheduler.remove(wid)

    # ------------------------------------------------------------------ dispatching

    def _sync_queue(self, view: View, now_us: int) -> tuple[set[str], list[WorkItemRecord]]:
        """Keep the Scheduler's per-Group queues equal to the owned, startable WorkItems.

        Returns the Groups with startable work, and the items whose retries are spent.
        """
        known = self._known()
        eligible: set[str] = set()
        groups: set[str] = set()
        spent = []
        for item in self._mine_queued(view):
            if item.work_item_id in self.slots:
                continue
            lease = view.state.leases.get(item.ownership_lease_id or "")
            if lease is None or not lease.live_at(now_us):
                continue
            if any(view.state.work_items[d].state is not W.VERIFIED for d in item.dependencies):
                continue
            new_attempt = item.ownership_epoch != item.attempt_epoch
            failed = self.failures.get(item.work_item_id, 0)
            if new_attempt and failed >= item.contract["retryPolicy"]["maxAttempts"]:
                spent.append(item)  # never start an attempt beyond the contract's
                continue
            not_before = self._not_before(item)
            if new_attempt and not_before is not None and now_us < not_before:
                continue  # backoff
            eligible.add(item.work_item_id)
            groups.add(item.group_id)
            if item.work_item_id not in known:
                self.scheduler.enqueue(self._queued_work(item, now_us))
            elif item.execution_approved and not self._gate_open(item.work_item_id):
                # the execution Approval arrived after the item was queued: its gate opens
                self.scheduler.set_readiness(item.work_item_id, risk_gate_open=True)
        for work_item_id in sorted(self.scheduler.queued_ids() - eligible):
            self.scheduler.remove(work_item_id)
        return groups, spent

    def _gate_open(self, work_item_id: str) -> bool:
        work = self.scheduler.work(work_item_id)
        return work is None or work.risk_gate_open

    def _dispatch(self, view: View, now_us: int) -> list[Intent]:
        """Ask the Scheduler which queued items go into which slots; honour preemption."""
        ready, spent = self._sync_queue(view, now_us)
        ready_key = tuple(sorted(ready))
        for decision in self.scheduler.decide(now_us, self._slots(now_us)):
            if isinstance(decision, Dispatch):
                self.pending_starts[decision.work_item_id] = decision.slot_id
                self._ready_at_dispatch[decision.work_item_id] = ready_key
            elif isinstance(decision, RequestPreemption):
                running = self.slots.get(decision.work_item_id)
                if running is not None and running.at_safe_point(now_us):
                    running.preempt = True  # never at an unsafe point (§11.3)
        out = [
            give_up_intent(view, item, now_us, self.failures.get(item.work_item_id, 0))
            for item in spent
        ]
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
                        "leaseDurationSeconds": self.lease_seconds,
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
                self._ready_at_dispatch.pop(wid, None)
                return
            self._open(view, wid, slot_id, now_us)
            return
        if not outcome.ok:
            return
        slot = self.slots.get(wid)
        if slot is None:
            return
        served = now_us - slot.started_us
        if intent.tag == "checkpoint":
            slot.move(ST.CHECKPOINT)
            del self.slots[wid]
            self._served(slot, served)
            self.scheduler.requeue(wid, service_us=served)
        elif intent.tag == "usage":
            slot.usage_recorded = True
        elif intent.tag == "publish":
            slot.published.append(intent.payload["artifact"]["contentHash"])
        elif intent.tag == "progress":
            slot.reported_completion_us = slot.finish_us
        elif intent.kind in _CLOSING:
            slot.move(_CLOSING[intent.kind])
            del self.slots[wid]
            self._served(slot, served)
            if intent.kind == "work.block":
                self.scheduler.remove(wid, service_us=served)
            else:
                self.scheduler.completed(wid, service_us=served)

    def _served(self, slot: Execution, served_us: int) -> None:
        ready = self._ready_at_dispatch.pop(slot.work_item_id, ())
        by_group = self.service.setdefault(ready, {})
        by_group[slot.group_id] = by_group.get(slot.group_id, 0) + served_us

    def _open(self, view: View, wid: str, slot_id: str, now_us: int) -> None:
        item = view.state.work_items[wid]
        done_before, checkpoints = self._resume_point(item)
        factor = 1 + self.behaviour.jitter * (self.rng.random() - 0.5)
        total = int(self._estimate_us(item) * factor) // 1_000_000 * 1_000_000
        remaining = max(1_000_000, total - done_before)
        first = checkpoints == 0 and remaining > 2 * self.setup_us
        fail = self.rng.random() < self.behaviour.failure_rate
        resolution = None if fail else self.blocks(view, item, now_us)
        estimate = item.schedule_estimate if done_before == 0 else None
        grants = item.contract["allowedResources"]
        self.slots[wid] = opened = Execution(
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
            block_at_us=now_us + _seconds(remaining // 4) if resolution else None,
            idempotency_key=execution_key(item.mission_id, wid, item.ownership_epoch),
            setup_us=self.setup_us,
            operations=tuple(sorted({op for g in grants for op in g["operations"]})),
            resource=grants[0]["resource"] if grants else "",
            checkpoint=item.last_checkpoint if done_before else None,
            done_before_us=done_before,
            checkpoints_done=checkpoints,
            reported_completion_us=(
                parse_timestamp(estimate["estimatedCompletion"]).epoch_micros if estimate else None
            ),
            block_resolution=resolution,
        )
        opened.move(ST.START)

    # ------------------------------------------------------------------ the slots' hand-offs

    def token_requests(self, now_us: int) -> list[TokenRequest]:
        """Slots that need a capability token for their current Execution Lease."""
        return [
            TokenRequest(
                slot_id=s.slot_id,
                work_item_id=s.work_item_id,
                lease_id=s.lease_id,
                operations=s.operations,
            )
            for s in sorted(self.slots.values(), key=lambda s: s.slot_id)
            if s.needs_token(now_us)
        ]

    def grant_token(self, slot_id: str, token: CapabilityToken) -> None:
        """Give ``token`` to slot ``slot_id`` (``ValueError`` if it is bound elsewhere)."""
        for slot in self.slots.values():
            if slot.slot_id == slot_id:
                slot.grant(token)
                return
        raise KeyError(f"no WorkItem runs in {slot_id}")

    def external_calls(self, now_us: int) -> list[ExternalCall]:
        """The external operations the slots want performed now, each with its own token."""
        calls = []
        for slot in sorted(self.slots.values(), key=lambda s: s.slot_id):
            if slot.tool_budget.get("toolCalls", 1.0) < 1:
                continue
            call = slot.external_call(now_us)
            if call is not None:
                calls.append(call)
        return calls

    def on_external(self, call: ExternalCall, *, ok: bool, refused: bool = False) -> None:
        """The driver's answer to an external operation (ignored if its slot moved on)."""
        slot = self.slots.get(call.work_item_id)
        if slot is not None and slot.slot_id == call.slot_id:
            slot.answer(call, ok, refused)

    def slot_view(self, slot_id: str) -> SlotView | None:
        """A frozen copy of one slot (None when the slot is free)."""
        for slot in self.slots.values():
            if slot.slot_id == slot_id:
                return slot.view()
        return None

    def presence(self, view: View, now_us: int) -> dict[str, Any]:
        """A Presence Record (§6.2): current capacity, no other Group's identity or content."""
        return presence_record(
            view,
            now_us,
            max_slots=self.max_concurrency,
            active=len(self.slots) + len(self.pending_starts),
            queued=len(self._mine_queued(view)),
            capabilities=self.capabilities,
            unavailable=self.unavailable_capabilities,
        )

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """The next moment a slot or a backoff needs attention."""
        times = []
        for slot in self.slots.values():
            lease = view.state.leases.get(slot.lease_id)
            if lease is not None:
                times.append(lease.expires_us - (lease.expires_us - renewed_us(lease)) // 3)
            times.append(slot.finish_us)
            times.append(slot.started_us + slot.setup_us)
            for t in (slot.checkpoint_at_us, slot.fail_at_us, slot.block_at_us):
                if t is not None:
                    times.append(t)
        for item in self._mine_queued(view):
            if (not_before := self._not_before(item)) is not None:
                times.append(not_before)
        future = [t for t in times if t > now_us]
        return min(future) if future else None


#: The accepted Commands that close a slot, and the slot transition each one is.
_CLOSING = {
    "work.submit": ST.SUBMIT,
    "work.fail": ST.FAIL,
    "work.block": ST.BLOCK,
}


def _seconds(micros: int) -> int:
    """Round a simulated span to whole seconds (readable timestamps in the log)."""
    return max(1, micros // 1_000_000) * 1_000_000
