"""The Coordinator, a sans-IO policy (§7.2, §10, §11.5, §13.2).

It plans its Mission's WorkItems as an evolving DAG (items are authorized as they are
discovered, ``discovered_after``), offers each eligible item (dependencies verified) to the
highest-ranked eligible Worker with a structured selection basis, sequentially for exclusive
work and to a bounded candidate set for urgent work, moves on when an offer expires or is
declined, re-offers from the latest checkpoint under a new Ownership Epoch when an owner stops
renewing or misses its start-by deadline, reviews submissions in the order of §13.2 before
accepting them (never the sole reviewer of its own output), renews its own lease, submits the
Mission for Approval with the exact Artifact set, and plans corrective work when the human
requests changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..authority.model import WorkItemRecord
from ..authority.pipeline import Outcome
from ..protocol.tables import MissionState, WorkItemState
from ..protocol.timestamps import format_utc
from ..sim.mission_file import MissionSpec, WorkSpec
from .base import Intent, View
from .contracts import work_contract
from .naming import group_id, mission_id, short, work_item_id

W = WorkItemState
OFFER_TTL_US = 120_000_000
URGENT_CANDIDATES = 3


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("-", 1)[0].split(".")[:3])


@dataclass
class CoordinatorPolicy:
    """Coordinates the Missions whose mission-file entries name it as Coordinator."""

    missions: list[MissionSpec]
    start_us: int
    declined: dict[str, set[str]] = field(default_factory=dict)
    rework: dict[str, int] = field(default_factory=dict)
    resubmitted_for: dict[str, int] = field(default_factory=dict)

    # ------------------------------------------------------------------ helpers

    def _items(self, view: View, spec: MissionSpec) -> dict[str, WorkItemRecord]:
        mid = mission_id(spec.id)
        return {w.work_item_id: w for w in view.state.work_items.values() if w.mission_id == mid}

    def _owner_live(self, view: View, item: WorkItemRecord, now_us: int) -> bool:
        if item.owner is None:
            return False
        for lease_id in (item.execution_lease_id, item.ownership_lease_id, item.blocked_lease_id):
            lease = view.state.leases.get(lease_id or "")
            if lease is not None and lease.live_at(now_us):
                return True
        return False

    def _candidates(self, view: View, item: WorkItemRecord, now_us: int) -> list[str]:
        need = item.contract["requiredCapabilities"]
        load: dict[str, int] = {}
        for other in view.state.work_items.values():
            if other.owner and other.state in (W.QUEUED, W.ACTIVE, W.BLOCKED):
                load[other.owner["agentId"]] = load.get(other.owner["agentId"], 0) + 1
        excluded = self.declined.get(item.work_item_id, set())
        ranked = []
        for agent in view.state.agents.values():
            if agent.agent_id == view.me or agent.agent_id in excluded or agent.session_epoch == 0:
                continue
            have = dict(agent.capabilities)
            if all(
                c["id"] in have
                and _version(have[c["id"]])[0] == _version(c["version"])[0]
                and _version(have[c["id"]]) >= _version(c["version"])
                for c in need
            ):
                ratio = load.get(agent.agent_id, 0) / max(agent.max_concurrency, 1)
                ranked.append((ratio, agent.agent_id))
        return [agent for _, agent in sorted(ranked)]

    def _selection_basis(self, view: View, candidates: list[str], now_us: int) -> dict[str, Any]:
        return {
            "authorizationEligible": True,
            "availabilityEstimate": format_utc(now_us + 60_000_000),
            "expectedCost": 1.0,
            "reliabilityEvidence": [],
            "policyRulesApplied": [
                "capability-version-match",
                "least-loaded-first",
                "urgent-bounded-candidates" if len(candidates) > 1 else "sequential-exclusive",
            ],
        }

    # ------------------------------------------------------------------ decide

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Everything this Coordinator wants to do now, most urgent first."""
        out: list[Intent] = []
        for spec in self.missions:
            mission = view.state.missions.get(mission_id(spec.id))
            if mission is None or mission.coordinator_agent_id != view.me:
                continue
            renew = self._renew(view, spec, now_us)
            if renew is not None:
                out.append(renew)
            if mission.state is not MissionState.ACTIVE:
                continue
            out.extend(self._plan(view, spec, now_us))
        return out

    def _renew(self, view: View, spec: MissionSpec, now_us: int) -> Intent | None:
        mission = view.state.missions[mission_id(spec.id)]
        lease = view.state.leases.get(mission.coordinator_lease_id or "")
        if lease is None or not lease.live_at(now_us):
            return None
        remaining = lease.expires_us - now_us
        if remaining > (lease.expires_us - _issued_us(lease)) // 3:
            return None
        return Intent(
            kind="mission.renew_coordinator",
            group=mission.group_id,
            why="the Coordinator renews its lease before it runs out (§7.2)",
            payload={"leaseId": lease.lease_id},
            overrides={"expected_revision": mission.revision},
        )

    def _plan(self, view: View, spec: MissionSpec, now_us: int) -> list[Intent]:
        items = self._items(view, spec)
        out: list[Intent] = []
        group = group_id(spec.id)
        mission = view.state.missions[mission_id(spec.id)]
        if (
            mission.submitted_revision is not None
            and self.resubmitted_for.get(spec.id) != mission.submitted_revision
        ):
            # the human requested changes: plan corrective WorkItems (§7.3), keep the old ones
            self.resubmitted_for[spec.id] = mission.submitted_revision
            self.observe_changes_requested(spec.id)
        # 1. authorize what has been discovered (an evolving DAG, §10.4)
        for work in self._planned(spec):
            wid = work_item_id(spec.id, work.id)
            if wid in items:
                continue
            discovered = all(
                (d := items.get(work_item_id(spec.id, a))) is not None and d.state is W.VERIFIED
                for a in work.discovered_after
            )
            deps = [work_item_id(spec.id, d) for d in work.depends_on]
            if not discovered or any(d not in items for d in deps):
                continue
            deadline = self.start_us + (work.deadline_s or spec.deadline_s) * 1_000_000
            mission = view.state.missions[mission_id(spec.id)]
            from ..protocol.timestamps import parse_timestamp

            deadline = min(deadline, parse_timestamp(mission.deadline).epoch_micros)
            out.append(
                Intent(
                    kind="work.authorize",
                    group=group,
                    why=f"the Coordinator plans '{work.id}'"
                    + (
                        f" (discovered after {', '.join(work.discovered_after)})"
                        if work.discovered_after
                        else ""
                    ),
                    payload={
                        "workItemId": wid,
                        "contract": work_contract(work, dependencies=deps, deadline_us=deadline),
                    },
                )
            )
        # 2. offer eligible items; 3. reassign lapsed owners; 4. review submissions
        for _wid, item in sorted(items.items()):
            intent = self._advance(view, spec, item, items, now_us)
            if intent is not None:
                out.append(intent)
        # 5. submit for approval when every planned item is verified
        submit = self._submit(view, spec, items)
        if submit is not None:
            out.append(submit)
        return out

    def _planned(self, spec: MissionSpec) -> list[WorkSpec]:
        works = list(spec.work)
        final = [w for w in spec.work if not any(w.id in o.depends_on for o in spec.work)]
        for n in range(1, self.rework.get(spec.id, 0) + 1):
            for f in final:
                works.append(
                    WorkSpec(
                        id=f"{f.id}-rework-{n}",
                        goal=f"Address the MissionOwner's change request on '{f.id}'",
                        capability=f.capability,
                        depends_on=(f.id,),
                        duration_s=max(60, f.duration_s // 2),
                        urgency="high",
                        budget=dict(f.budget),
                    )
                )
        return works

    def _advance(
        self,
        view: View,
        spec: MissionSpec,
        item: WorkItemRecord,
        items: dict[str, WorkItemRecord],
        now_us: int,
    ) -> Intent | None:
        group = group_id(spec.id)
        deps_ok = all(
            (d := items.get(dep)) is not None and d.state is W.VERIFIED for dep in item.dependencies
        )
        pending = [
            view.state.offers[o]
            for o in item.offer_ids
            if view.state.offers[o].status == "pending" and view.state.offers[o].expires_us > now_us
        ]
        needs_offer = (
            item.state in (W.OPEN, W.FAILED)
            or (item.state is W.OFFERED and not pending)
            or (
                item.state in (W.QUEUED, W.ACTIVE, W.BLOCKED)
                and item.owner is not None
                and not self._owner_live(view, item, now_us)
            )
        )
        if item.state is W.FAILED and item.attempts >= item.contract["retryPolicy"]["maxAttempts"]:
            needs_offer = False
        if needs_offer and deps_ok:
            for offer in (view.state.offers[o] for o in item.offer_ids):
                if offer.status == "pending" and offer.expires_us <= now_us:
                    self.declined.setdefault(item.work_item_id, set()).add(offer.agent_id)
            candidates = self._candidates(view, item, now_us)
            if not candidates and self.declined.get(item.work_item_id):
                self.declined[item.work_item_id] = set()  # everyone passed: start over
                candidates = self._candidates(view, item, now_us)
            if not candidates:
                return None
            urgent = item.contract["requestedUrgency"] in ("high", "critical")
            chosen = candidates[:URGENT_CANDIDATES] if urgent else candidates[:1]
            expires = format_utc(now_us + OFFER_TTL_US)
            reassign = item.owner is not None
            return Intent(
                kind="work.offer",
                group=group,
                why=(
                    f"the owner of '{short(item.work_item_id)}' stopped renewing: "
                    "re-offer from the latest checkpoint under a new Ownership Epoch (§11.5)"
                    if reassign
                    else f"'{short(item.work_item_id)}' is eligible: offer it to "
                    + ", ".join(c.rsplit(":", 1)[-1] for c in chosen)
                ),
                payload={
                    "workItemId": item.work_item_id,
                    "offers": [{"agentId": c, "expiresAt": expires} for c in chosen],
                    "selectionBasis": self._selection_basis(view, chosen, now_us),
                },
                overrides={"expected_revision": item.revision},
            )
        if item.state is W.SUBMITTED:
            return self._review(view, spec, item, now_us)
        if item.state is W.BLOCKED and item.child_mission_id is None and item.owner is not None:
            return Intent(
                kind="work.unblock",
                group=group,
                why=f"the Coordinator resolves the blocker of '{short(item.work_item_id)}'",
                payload={
                    "workItemId": item.work_item_id,
                    "resolution": "Use Markdown with one section per requirement.",
                },
                overrides={"expected_revision": item.revision},
            )
        return None

    def _review(
        self, view: View, spec: MissionSpec, item: WorkItemRecord, now_us: int
    ) -> Intent | None:
        """§13.2 in order: integrity, deterministic checks, reviewer Evidence, combined result."""
        results = []
        for h in item.submitted_artifacts:
            results.append(
                {"step": "artifact_integrity", "artifact": h, "ok": h in view.state.artifacts}
            )
        for ev in item.submitted_evidence:
            results.append(
                {
                    "step": "deterministic_test",
                    "evidence": ev["evidenceId"],
                    "ok": ev["result"] == "passed",
                }
            )
        own = item.owner is not None and item.owner["agentId"] == view.me
        if own:
            return None  # never the sole reviewer of its own output: wait for a reviewer
        if not all(r["ok"] for r in results):
            evidence = view.sign(
                "evidence",
                {
                    "evidenceId": "urn:mwp-local:evidence:review:"
                    f"{short(item.work_item_id)}:{item.revision}",
                    "missionId": item.mission_id,
                    "groupId": item.group_id,
                    "workItemId": item.work_item_id,
                    "type": "failure_report",
                    "subject": {"type": "work_item", "id": item.work_item_id},
                    "criterionIds": ["deliverable-complete"],
                    "method": "Coordinator review in the order of §13.2",
                    "result": "failed",
                    "details": {"steps": results},
                    "artifactHashes": list(item.submitted_artifacts),
                    "generatedBy": view.member.actor,
                    "createdAt": format_utc(now_us),
                },
            )
            return Intent(
                kind="work.fail",
                group=item.group_id,
                why="review found a failed check: the submission is rejected (§13.2)",
                payload={
                    "workItemId": item.work_item_id,
                    "reason": "review failed",
                    "evidence": [evidence],
                },
            )
        return Intent(
            kind="work.accept_result",
            group=item.group_id,
            why=f"the review of '{short(item.work_item_id)}' passed: integrity, "
            "Evidence for every criterion, combined result kept for the human",
            payload={
                "workItemId": item.work_item_id,
                "review": {"steps": results, "decision": "accepted"},
            },
        )

    def _submit(
        self, view: View, spec: MissionSpec, items: dict[str, WorkItemRecord]
    ) -> Intent | None:
        planned = {work_item_id(spec.id, w.id) for w in self._planned(spec)}
        if not planned or not planned <= set(items):
            return None
        if any(items[w].state is not W.VERIFIED for w in planned):
            return None
        if any(i.state not in (W.VERIFIED, W.CANCELLED) for i in items.values()):
            return None
        artifacts = sorted({h for w in planned for h in items[w].submitted_artifacts})
        if not artifacts:
            return None
        return Intent(
            kind="mission.submit_for_approval",
            group=group_id(spec.id),
            why="every planned WorkItem is verified: submit the exact revision and Artifacts",
            payload={"artifactHashes": artifacts},
        )

    # ------------------------------------------------------------------ feedback

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Learn from refusals (a decline is an expired offer; a change request means rework)."""

    def observe_changes_requested(self, spec_id: str) -> None:
        """Plan one more round of corrective work for a Mission."""
        self.rework[spec_id] = self.rework.get(spec_id, 0) + 1

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """Offer expiries, owner lease expiries and its own lease renewal point."""
        times: list[int] = []
        for spec in self.missions:
            mission = view.state.missions.get(mission_id(spec.id))
            if mission is None or mission.coordinator_agent_id != view.me:
                continue
            lease = view.state.leases.get(mission.coordinator_lease_id or "")
            if lease is not None and lease.is_active:
                times.append(lease.expires_us - (lease.expires_us - _issued_us(lease)) // 3)
            for item in self._items(view, spec).values():
                for offer_id in item.offer_ids:
                    offer = view.state.offers[offer_id]
                    if offer.status == "pending":
                        times.append(offer.expires_us)
                for lease_id in (
                    item.execution_lease_id,
                    item.ownership_lease_id,
                    item.blocked_lease_id,
                ):
                    lease = view.state.leases.get(lease_id or "")
                    if lease is not None and lease.is_active:
                        times.append(lease.expires_us)
        future = [t for t in times if t > now_us]
        return min(future) if future else None


def _issued_us(lease: Any) -> int:
    from ..protocol.timestamps import parse_timestamp

    return parse_timestamp(lease.last_renewed_at or lease.issued_at).epoch_micros
