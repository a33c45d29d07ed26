"""WorkItem cycles for the benchmarks: signed Commands built the way a client would build them.

Owns the benchmark Organization (a Coordinator, a few Workers, a reviewer), the Mission every
WorkItem belongs to, and the nine Commands of one WorkItem cycle: authorize, offer, accept,
start, checkpoint, start again, publish an Artifact, submit, accept the result. Commands are
signed against the Group log's current state (epochs, revisions, Lease IDs), like
``mwp_local.client.Client`` does; signing is client work, so the harness never times it: only
``GroupLog.submit``/``submit_many`` (verify, validate, decide, sign the Events, commit) is timed.

The clock is manual and advances 1 ms per step, so leases never run out during a benchmark and
the same seed gives the same log.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mwp_local.artifacts.context_packages import (
    PackageScope,
    build_context_package,
    mission_level,
)
from mwp_local.artifacts.review import review_submission
from mwp_local.authority import Accepted
from mwp_local.authority.isolation import scope_covers_work
from mwp_local.authority.organization import Member, Organization
from mwp_local.authority.pipeline import Outcome
from mwp_local.examples import example_contract
from mwp_local.protocol.ids import derived_uuid
from mwp_local.protocol.timestamps import Timestamp, format_utc, parse_timestamp
from mwp_local.store.base import LogStore
from mwp_local.store.group_log import GroupLog
from mwp_local.store.sandbox_dir import bootstrap

START = "2026-07-15T00:00:00Z"
GROUP = "urn:mwp-local:group:bench"
MISSION = "urn:mwp-local:mission:bench"
CAP = ("bench.software.python", "2.1.0")
REVIEW = ("bench.software.review", "1.0.0")
WORKERS = 4
SEED = 11

#: The nine steps of one WorkItem cycle, in order.
STEPS = (
    "authorize",
    "offer",
    "accept",
    "start",
    "checkpoint",
    "restart",
    "publish",
    "submit",
    "accept_result",
)


def organization(seed: int = SEED, workers: int = WORKERS) -> Organization:
    """The benchmark Organization: a Coordinator, ``workers`` Workers and a reviewer."""
    agents: dict[str, dict[str, Any]] = {
        "coordinator": {"capabilities": [CAP, REVIEW], "max_concurrency": 64},
        "reviewer": {"capabilities": [REVIEW], "max_concurrency": 64},
    }
    for n in range(1, workers + 1):
        agents[f"worker-{n}"] = {"capabilities": [CAP], "max_concurrency": 1_000_000}
    return Organization.create(seed, agents=agents)


def _contract() -> dict[str, Any]:
    """The example Work Contract, requiring the benchmark's capability."""
    return example_contract(requiredCapabilities=[{"id": CAP[0], "version": "2.0.0"}])


def work_item_id(n: int) -> str:
    """The ID of the ``n``-th benchmark WorkItem."""
    return f"urn:mwp-local:work:bench-{n:07d}"


@dataclass
class Timed:
    """Seconds spent inside ``submit``/``submit_many`` and what went through them."""

    seconds: float = 0.0
    commands: int = 0
    events: int = 0


class Workload:
    """Drives WorkItem cycles through one ``GroupLog``."""

    def __init__(self, log: GroupLog, start: str = START) -> None:
        self.log = log
        self.org = log.org
        self.now_us = parse_timestamp(start).epoch_micros
        self._count = 0
        self._coordinator = self.org.get("coordinator")
        self._reviewer = self.org.get("reviewer")
        self._workers = [m for m in self.org.agents() if m.id.rsplit(":", 1)[-1].startswith("w")]
        #: The Group's accepted Events a WorkItem's Context Package can cite (§8): the Mission's
        #: own, and each WorkItem's by its ID. Kept apart so that building a package reads what
        #: it may cite, not the whole log (the workload has no dependencies or conversations).
        self.mission_events: list[dict[str, Any]] = []
        self.item_events: dict[str, list[dict[str, Any]]] = {}
        #: Published content by content hash, for the Coordinator's review (§13.2).
        self.contents = _Contents()

    def record(self, events: list[dict[str, Any]]) -> None:
        """Keep the accepted Events of the Group a later Context Package may cite."""
        for event in events:
            if event["groupId"] != GROUP:
                continue
            if event.get("workItemId"):
                self.item_events.setdefault(event["workItemId"], []).append(event)
            elif mission_level(event):
                self.mission_events.append(event)

    @classmethod
    def open(cls, store: LogStore, org: Organization | None = None) -> Workload:
        """A Workload on a fresh log in ``store``, with the Organization bootstrapped and the
        benchmark Mission created (neither is timed)."""
        workload = cls(GroupLog(org or organization(), store))
        bootstrap(workload.log, workload.now())
        workload.tick()
        outcome = workload.log.submit(
            workload.command(
                workload.org.get("mission-owner"),
                "mission.create",
                {
                    "missionId": MISSION,
                    "groupId": GROUP,
                    "coordinatorAgentId": workload._coordinator.id,
                    "objective": "Benchmark the Group Authority",
                    "definitionOfDone": [
                        {
                            "criterionId": "done",
                            "description": "Every WorkItem verified",
                            "evidenceRequired": ["human_review"],
                        }
                    ],
                    "budget": {
                        "currency": "EUR",
                        "financialLimit": 1_000_000_000,
                        "toolCallLimit": 1_000_000_000,
                    },
                    "deadline": "2026-08-01T00:00:00Z",
                },
            ),
            workload.now(),
        )
        if not isinstance(outcome, Accepted):
            raise RuntimeError(f"mission.create refused: {outcome!r}")
        workload.record(outcome.event_documents)
        workload.tick()
        return workload

    # ------------------------------------------------------------------ time

    def now(self) -> Timestamp:
        """The manual clock."""
        return parse_timestamp(format_utc(self.now_us))

    def tick(self, micros: int = 1_000) -> None:
        """Advance the manual clock."""
        self.now_us += micros

    # ------------------------------------------------------------------ commands

    def command(self, who: Member, kind: str, payload: dict[str, Any], **over: Any) -> bytes:
        """A signed Command from ``who``, carrying its current epochs (as a client would)."""
        state = self.log.state
        self._count += 1
        fields: dict[str, Any] = {"group_id": GROUP, "issued_at": format_utc(self.now_us)}
        if who.type == "agent":
            agent = state.agents.get(who.id)
            fields["session_epoch"] = agent.session_epoch if agent else 1
        membership = state.memberships.get((GROUP, who.id))
        if membership is not None and who.type in ("agent", "human"):
            fields["membership_epoch"] = membership.epoch
        group = state.groups.get(GROUP)
        if group is not None:
            mission = state.missions[group.mission_id]
            if who.id == mission.coordinator_agent_id:
                fields["coordinator_epoch"] = mission.coordinator_epoch
        fields["action_id"] = derived_uuid(self.org.organization_id, "bench", str(self._count))
        fields.update(over)
        return self.org.command(who, kind, payload, **fields)

    def worker(self, n: int) -> Member:
        """The Worker that executes the ``n``-th WorkItem."""
        return self._workers[n % len(self._workers)]

    def _lease(self, wid: str) -> dict[str, Any]:
        item = self.log.state.work_items[wid]
        return {
            "workItemId": wid,
            "ownershipEpoch": item.ownership_epoch,
            "leaseId": item.execution_lease_id,
        }

    def _progress(self) -> dict[str, Any]:
        return {
            "currentPhase": "implementing",
            "completedMilestones": ["design"],
            "nextCheckpoint": "tests written",
            "blockers": [],
            "updatedCompletionEstimate": format_utc(self.now_us + 3_600_000_000),
            "evidenceIds": [],
        }

    def _manifest(self, n: int, wid: str, worker: Member, content: bytes) -> dict[str, Any]:
        digest = hashlib.sha256(content).hexdigest()
        return self.org.sign(
            "artifact",
            worker,
            {
                "artifactId": f"urn:mwp-local:artifact:{digest[:16]}",
                "contentHash": "sha256:" + digest,
                "uri": f"file:///blobs/{digest}",
                "sizeBytes": len(content),
                "mediaType": "text/x-diff",
                "schemaUri": "urn:mwp-local:schema:patch",
                "producer": {
                    "agentId": worker.id,
                    "agentCardVersion": 1,
                    "capabilities": [{"id": CAP[0], "version": CAP[1]}],
                },
                "missionId": MISSION,
                "groupId": GROUP,
                "workItemId": wid,
                "sourceArtifactHashes": [],
                "toolVersions": [],
                "modelVersions": [],
                "classification": "internal",
                "createdAt": format_utc(self.now_us),
            },
        )

    def _evidence(self, n: int, wid: str, content_hash: str) -> dict[str, Any]:
        reviewer = self._reviewer
        return self.org.sign(
            "evidence",
            reviewer,
            {
                "evidenceId": f"urn:mwp-local:evidence:bench-{n:07d}",
                "missionId": MISSION,
                "groupId": GROUP,
                "workItemId": wid,
                "type": "deterministic_test",
                "subject": {"type": "artifact", "id": content_hash},
                "criterionIds": ["tests-pass"],
                "method": "pytest",
                "result": "passed",
                "artifactHashes": [content_hash],
                "generatedBy": reviewer.actor,
                "createdAt": format_utc(self.now_us),
            },
        )

    def step_command(self, step: str, n: int) -> bytes:
        """The signed Command of ``step`` for the ``n``-th WorkItem, given the current state."""
        wid = work_item_id(n)
        worker = self.worker(n)
        coordinator = self._coordinator
        payload: dict[str, Any]
        if step == "authorize":
            payload = {"workItemId": wid, "contract": _contract()}
            return self.command(coordinator, "work.authorize", payload)
        if step == "offer":
            payload = {
                "workItemId": wid,
                "agentId": worker.id,
                "expiresAt": format_utc(self.now_us + 300_000_000),
                "selectionBasis": {
                    "authorizationEligible": True,
                    "availabilityEstimate": format_utc(self.now_us + 60_000_000),
                    "expectedCost": 1.5,
                    "reliabilityEvidence": [],
                    "policyRulesApplied": ["sequential-exclusive-offer"],
                },
            }
            member = self.log.state.memberships.get((GROUP, worker.id))
            if not scope_covers_work(member, wid):  # a new Membership, or one widened to wid
                payload["contextPackage"] = build_context_package(
                    self.mission_events + self.item_events.get(wid, []),
                    scope=PackageScope(mission_id=MISSION, group_id=GROUP, work_item_id=wid),
                    generator=coordinator,
                    generated_at=format_utc(self.now_us),
                )
            return self.command(coordinator, "work.offer", payload)
        item = self.log.state.work_items[wid]
        if step == "accept":
            return self.command(
                worker, "work.accept_offer", {"workItemId": wid}, expected_revision=item.revision
            )
        if step in ("start", "restart"):
            payload = {"workItemId": wid, "ownershipEpoch": item.ownership_epoch}
            return self.command(worker, "work.start", payload)
        if step == "checkpoint":
            payload = {**self._lease(wid), "checkpoint": {"progress": self._progress()}}
            return self.command(worker, "work.checkpoint", payload)
        content = f"--- a/{wid}\n+++ b/{wid}\n".encode()
        if step == "publish":
            manifest = self._manifest(n, wid, worker, content)
            self.contents.put(manifest["contentHash"], content)
            return self.command(
                worker, "artifact.publish", {**self._lease(wid), "artifact": manifest}
            )
        if step == "submit":
            content_hash = "sha256:" + hashlib.sha256(content).hexdigest()
            payload = {
                **self._lease(wid),
                "artifactHashes": [content_hash],
                "evidence": [self._evidence(n, wid, content_hash)],
            }
            return self.command(worker, "work.submit", payload)
        if step == "accept_result":
            state = self.log.state
            record = review_submission(
                item,
                manifests=state.item_manifests(wid),
                source=self.contents,
                reviewer=coordinator,
                registry=state.registry,
                now=format_utc(self.now_us),
                accept_submitted=True,  # the reviewer's signed test report
            )
            payload = {"workItemId": wid, **record.accept_result_payload()}
            return self.command(coordinator, "work.accept_result", payload)
        raise ValueError(f"unknown step {step!r}")

    # ------------------------------------------------------------------ driving

    def run_cycles(
        self,
        items: Sequence[int],
        *,
        batch: int | None,
        timed: Timed | None = None,
        on_outcomes: Callable[[list[Outcome]], None] | None = None,
    ) -> Timed:
        """Run every step of the cycle for ``items``.

        ``batch=None`` submits each Command alone (one durable commit per Command); otherwise
        ``batch`` WorkItems move through each step together, their Commands committed by one
        ``submit_many`` (group commit). Only the submission is timed. ``on_outcomes`` sees the
        outcomes of each submission (one list per commit). Raises if a Command is refused: a
        benchmark of rejections would measure the wrong thing.
        """
        timed = timed or Timed()
        size = batch or len(items)
        for first in range(0, len(items), size):
            chunk = items[first : first + size]
            for step in STEPS:
                commands = [self.step_command(step, n) for n in chunk]
                now = self.now()
                began = time.perf_counter()
                if batch is None:
                    outcomes = [self.log.submit(data, now) for data in commands]
                else:
                    outcomes = self.log.submit_many(commands, now)
                timed.seconds += time.perf_counter() - began
                if on_outcomes is not None:
                    if batch is None:
                        for outcome in outcomes:
                            on_outcomes([outcome])
                    else:
                        on_outcomes(outcomes)
                for outcome in outcomes:
                    if not isinstance(outcome, Accepted):
                        raise RuntimeError(f"{step} refused: {outcome.error!r}")
                    timed.events += len(outcome.events)
                    self.record(outcome.event_documents)
                timed.commands += len(commands)
                self.tick()
        return timed


class _Contents:
    """Published content by content hash: the review's content source (verified on read)."""

    def __init__(self) -> None:
        self._by_hash: dict[str, bytes] = {}

    def put(self, content_hash: str, content: bytes) -> None:
        self._by_hash[content_hash] = content

    def get(self, sha256: str, *, name: str | None = None) -> bytes:
        content = self._by_hash[sha256]
        if "sha256:" + hashlib.sha256(content).hexdigest() != sha256:
            raise ValueError(f"{sha256} does not hash to its content")
        return content

    def verify(self, sha256: str, *, name: str | None = None) -> Any:
        from types import SimpleNamespace

        return SimpleNamespace(size=len(self.get(sha256)))
