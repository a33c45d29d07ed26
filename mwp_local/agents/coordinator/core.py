"""The Coordinator, a sans-IO policy (§7.2, §7.3, §9.1, §10, §11.5, §13.2, §14).

For each Mission it coordinates, every decision, most urgent first:

1. renew its own lease before it runs out (§7.2); keep a signed Context Package current when
   a standby Coordinator may need it; a replacement Coordinator first receives the latest
   package and reconciles before anything else (``coordinator_handover``);
2. authorize WorkItems as they are discovered, Worker proposals it accepts, and promote
   complex WorkItems to child Missions: an evolving DAG (``coordinator_plan``, MWP-WRK-007);
3. offer each eligible WorkItem (its dependencies satisfy the contract's dependency policy) to
   the highest-ranked eligible Worker with a structured selection basis, sequentially for
   exclusive work and to a bounded candidate set for urgent work (``coordinator_offers``,
   MWP-WRK-004/006); move on when an offer is declined or expires; answer an ambiguity question
   with a corrected contract (MWP-WRK-002); re-offer from the latest checkpoint under a new
   Ownership Epoch when an owner misses its start-by deadline or stops renewing (MWP-WRK-019);
4. review submissions in the order of §13.2 before accepting them, never the sole reviewer of
   its own output, asking reviewer Agents through review WorkItems (``coordinator_review``,
   MWP-WRK-025); resolve blockers; fail the Mission when a WorkItem exhausts its retries;
5. submit the Mission for Approval with the exact Artifact set; plan corrective work after a
   change request; approve the child Missions it owns.

**Hooks** (``CoordinatorHooks``): the decisions a subclass may change, each defaulting to the
built-in behaviour: ``rank`` (order or filter the eligible Workers for an offer), ``plan`` (the
WorkItems a Mission plans), ``discover`` (WorkItems found while the Mission runs) and
``review`` (what to do about a submission). Whatever they decide goes through the Group
Authority, which refuses what breaks a rule (verifying unreviewed work, say) as it would anyone's.

Ports the driver may inject: ``content``, a verified Artifact content source (the sandbox's
``BlobStore``) for the review. Released Events arrive through ``observe`` (the runtime calls it):
the outcomes they show feed the reliability Evidence of later offers. Everything else comes from
the view. At most ``max_intents`` Intents are returned per decision (only the first is sent).

A decision runs on every step, so it reads the view through indexes (``coordinator_index``)
instead of scanning every WorkItem: each Mission's WorkItems and the facts of their contracts,
and an ``Agenda`` of the WorkItems that may need an action (most are verified or wait for
their dependencies). What one decision reads several times (each Agent's owned work, open
offers and availability) is computed once per decision (``_Decision``). The Intents, their
order and the bookkeeping done while producing them are exactly those of a full scan.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ...artifacts.checks import CheckRegistry, ContentSource
from ...artifacts.context_packages import (
    PackageScope,
    build_context_package,
    mission_level,
    proposals_of,
)
from ...authority.isolation import scope_covers_work
from ...authority.model import MissionRecord, OfferRecord, WorkItemRecord
from ...authority.pipeline import Outcome
from ...protocol.tables import MembershipState, MissionState, OfferStatus, WorkItemState
from ...protocol.timestamps import format_utc
from ..base import BasePolicy, Intent, View
from ..dag import accepted_states
from ..naming import agent_id, group_id, mission_id, short
from ..specs import MissionSpec, WorkSpec
from . import handover as handover
from . import plan as planning
from .contracts import ambiguities, clarified, dependency_policy
from .index import Agenda, ChangedItems, Due, MissionItems, OpenOffers, OwnedItems, epoch_us
from .offers import (
    Candidate,
    OfferBook,
    Roster,
    choose,
    offer_intent,
    offered_to_agent,
    owned_by_agent,
)
from .offers import rank as rank_candidates
from .review import ReviewBook, coordinator_checks
from .review import review as review_intent

W = WorkItemState
_OWNED = (W.QUEUED, W.ACTIVE, W.BLOCKED)


def _issued_us(lease: Any) -> int:
    return epoch_us(lease.last_renewed_at or lease.issued_at)


def _item_lease_expiries(state: Any) -> dict[str, list[int]]:
    """Mission ID → the expiries of the active leases its WorkItems name (execution, ownership
    or blocked lease), read from the replica's active leases."""
    out: dict[str, list[int]] = {}
    for lease_id in state.active_leases:
        lease = state.leases.get(lease_id)
        if lease is None or not lease.is_active:
            continue
        item = state.work_items.get(lease.work_item_id or "")
        if item is not None and lease_id in (
            item.execution_lease_id,
            item.ownership_lease_id,
            item.blocked_lease_id,
        ):
            out.setdefault(item.mission_id, []).append(lease.expires_us)
    return out


@dataclass
class _Decision:
    """What one ``decide`` reads from the view more than once, computed at most once (the view
    does not change while the policy decides)."""

    view: View
    now_us: int
    open_offers: OpenOffers
    owned_items: OwnedItems | None = None
    _owned: dict[str, list[WorkItemRecord]] | None = None
    _offered: dict[str, int] | None = None
    _pending: dict[str, list[OfferRecord]] | None = None
    #: What ranking reads about the Agents (depends on the view and ``now_us`` only).
    roster: Roster = field(default_factory=Roster)

    @property
    def owned(self) -> dict[str, list[WorkItemRecord]]:
        """``owned_by_agent`` of the view."""
        if self._owned is None:
            if self.owned_items is not None:
                self._owned = self.owned_items.owned(self.view.state)
            else:
                self._owned = owned_by_agent(self.view)
        return self._owned

    def pending_of(self, work_item_id: str) -> list[OfferRecord]:
        """The WorkItem's offers whose status is ``pending`` (expired or not), by offer ID."""
        if self._pending is None:
            self._pending = {}
            for offer in self.open_offers.pending(self.view.state):
                self._pending.setdefault(offer.work_item_id, []).append(offer)
        return self._pending.get(work_item_id, [])

    @property
    def offered(self) -> dict[str, int]:
        """``offered_to_agent`` of the view at ``now_us``."""
        if self._offered is None:
            pending = self.open_offers.pending(self.view.state)
            self._offered = offered_to_agent(self.view, self.now_us, pending)
        return self._offered


@dataclass
class CoordinatorPolicy(BasePolicy):
    """Coordinates the Missions whose mission-file entries name it (or as their standby)."""

    missions: list[MissionSpec]
    start_us: int
    content: ContentSource | None = None
    checks: CheckRegistry = field(default_factory=coordinator_checks)
    max_intents: int = 16
    offers: OfferBook = field(default_factory=OfferBook)
    reviews: ReviewBook = field(default_factory=ReviewBook)
    plans: planning.PlanBook = field(default_factory=planning.PlanBook)
    handovers: handover.HandoverBook = field(default_factory=handover.HandoverBook)
    #: Each Mission's WorkItems and their contract facts (see ``coordinator_index``).
    index: MissionItems = field(default_factory=MissionItems, init=False, repr=False)
    #: The replica's pending offers (see ``coordinator_index``).
    open_offers: OpenOffers = field(default_factory=OpenOffers, init=False, repr=False)
    #: Each Agent's owned WorkItems, kept from the replica's changes (see ``coordinator_index``).
    owned_items: OwnedItems = field(default_factory=OwnedItems, init=False, repr=False)
    #: Mission spec id → its plan for the current number of rework rounds.
    _planned: dict[str, planning.Planned] = field(default_factory=dict, init=False, repr=False)
    #: Mission spec id → the plan its agenda was made for, and the agenda.
    _agendas: dict[str, tuple[planning.Planned, Agenda]] = field(
        default_factory=dict, init=False, repr=False
    )
    #: The decision being made (None between decisions).
    _now: _Decision | None = field(default=None, init=False, repr=False)
    #: Mission spec id → the WorkItems ``discover`` found so far, in the order found.
    discovered: dict[str, list[WorkSpec]] = field(default_factory=dict, init=False)
    #: WorkItem ID → its Events as delivered (for its Context Packages), and Conversation ID →
    #: the WorkItem it belongs to.
    _item_events: dict[str, list[dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _conversations: dict[str, str] = field(default_factory=dict, init=False, repr=False)
    #: Group ID → the Mission's own Events (its creation, its Coordinator), which a WorkItem's
    #: package cites too: a Worker whose visibility starts later needs them to act at all.
    _mission_events: dict[str, list[dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )
    #: Proposal ID → its ``work.proposed`` Event (a WorkItem authorized from it is folded
    #: only after it, so its package cites it too).
    _proposal_events: dict[str, list[dict[str, Any]]] = field(
        default_factory=dict, init=False, repr=False
    )

    # ------------------------------------------------------------------ hooks

    def rank(
        self, view: View, item: WorkItemRecord, candidates: list[Candidate], now_us: int
    ) -> list[Candidate]:
        """The eligible Workers for an offer of ``item``, best first: reorder or filter
        ``candidates`` (already ranked by expected time to a verified result, ``offers.py``);
        the first is offered the work (urgent work: the first few). Default: as given."""
        return candidates

    def plan(self, spec: MissionSpec, rework: int) -> list[WorkSpec]:
        """The WorkItems Mission ``spec`` plans after ``rework`` rounds of changes requested by
        its owner. Default: the mission file's, plus corrective work on the final ones."""
        return planning.planned(spec, rework)

    def discover(
        self,
        view: View,
        spec: MissionSpec,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> list[WorkSpec]:
        """WorkItems found while Mission ``spec`` runs (an evolving DAG), given its WorkItems so
        far (``items``, by ID); each is planned once (by ``id``) and authorized once its
        dependencies exist. Default: none (the mission file's ``discovered_after`` covers
        work found after other work is verified)."""
        return []

    def review(
        self,
        view: View,
        item: WorkItemRecord,
        items: Mapping[str, WorkItemRecord],
        now_us: int,
    ) -> Intent | None:
        """What to do about the submitted ``item``: by default the review of §13.2 (integrity,
        deterministic checks, reviewer Evidence, the combined evaluation), which accepts the
        result (``work.accept_result`` with the review's Evidence), fails it, asks a reviewer
        or waits (None)."""
        mission = view.state.missions[item.mission_id]
        spec = next((s for s in self.missions if mission_id(s.id) == item.mission_id), None)
        reviewer = self._reviewer(self._plan_of(spec), item) if spec is not None else None
        return review_intent(
            view,
            item,
            items,
            now_us,
            content=self.content,
            checks=self.checks,
            book=self.reviews,
            reviewer=reviewer,
            deadline=mission.deadline,
        )

    # ------------------------------------------------------------------ reading the view

    def _items(self, view: View, spec: MissionSpec) -> dict[str, WorkItemRecord]:
        return self.index.items(view.state, mission_id(spec.id))

    def _owner_live(self, view: View, item: WorkItemRecord, now_us: int) -> bool:
        if item.owner is None:
            return False
        for lease_id in (item.execution_lease_id, item.ownership_lease_id, item.blocked_lease_id):
            lease = view.state.leases.get(lease_id or "")
            if lease is not None and lease.live_at(now_us):
                return True
        return False

    def _mine(self, view: View) -> set[str]:
        return {
            m.mission_id
            for m in view.state.missions.values()
            if m.coordinator_agent_id == view.me or m.owner_id == view.me
        }

    # ------------------------------------------------------------------ decide

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Everything this Coordinator wants to do now, most urgent first."""
        self._now = _Decision(view, now_us, self.open_offers, self.owned_items)
        try:
            return list(islice(self._decisions(view, now_us), self.max_intents))
        finally:
            self._now = None

    def _decision(self, view: View, now_us: int) -> _Decision:
        """The current decision's shared reads (a fresh one outside ``decide``)."""
        now = self._now
        if now is None or now.view is not view or now.now_us != now_us:
            return _Decision(view, now_us, self.open_offers)
        return now

    def _plan_of(self, spec: MissionSpec) -> planning.Planned:
        """The Mission's planned WorkItems for its current number of rework rounds."""
        rework = self.plans.rework.get(spec.id, 0)
        found = tuple(self.discovered.get(spec.id, ()))
        known = self._planned.get(spec.id)
        if (
            known is None
            or known.spec is not spec
            or known.rework != rework
            or known.found != len(found)
        ):
            known = planning.Planned.of(spec, rework, self.plan(spec, rework), found)
            self._planned[spec.id] = known
        return known

    def _discover(
        self, view: View, spec: MissionSpec, items: Mapping[str, WorkItemRecord], now_us: int
    ) -> None:
        found = self.discover(view, spec, items, now_us)
        if not found:
            return
        known = self.discovered.setdefault(spec.id, [])
        ids = {w.id for w in spec.work} | {w.id for w in known}
        for work in found:
            if not isinstance(work, WorkSpec):
                raise TypeError(
                    f"{type(self).__name__}.discover returned {type(work).__name__}; it returns "
                    "WorkSpec values (WorkSpec(id=..., goal=..., capability=(ID, version), ...))"
                )
            if work.id not in ids:
                known.append(work)
                ids.add(work.id)

    def _decisions(self, view: View, now_us: int) -> Iterator[Intent]:
        for spec in self.missions:
            mission = view.state.missions.get(mission_id(spec.id))
            if mission is None:
                continue
            if handover.failed(spec, view.me, self.start_us, now_us):
                stale = handover.stale_return(spec, view.me, self.start_us, now_us, self.handovers)
                if stale is not None:
                    yield stale
                continue
            if mission.coordinator_agent_id != view.me:
                continue
            lease = view.state.leases.get(mission.coordinator_lease_id or "")
            if lease is not None:
                self.handovers.known[spec.id] = (mission.coordinator_epoch, lease.lease_id)
            renew = self._renew(view, mission, now_us)
            if renew is not None:
                yield renew
            if mission.state is not MissionState.ACTIVE:
                continue
            items = self._items(view, spec)
            if handover.needs_handover(mission, self.handovers):
                package = handover.received_package(view, mission)
                if package is not None:
                    self._adopt(spec, mission, items)
                    yield handover.reconciliation(view, mission, package, items, now_us)
                else:  # none was ever handed over: build one from the log received so far
                    own = handover.package_update(view, mission, self.handovers, now_us, force=True)
                    if own is not None:
                        yield own
                continue  # nothing is assigned before reconciliation
            standby = spec.standby_coordinator
            if standby and standby != short(view.me) and items and renew is None:
                update = handover.package_update(view, mission, self.handovers, now_us)
                if update is not None:
                    yield update
            yield from self._plan(view, spec, mission, items, now_us)
        yield from planning.approve_children(view, now_us, self.plans)

    def _renew(self, view: View, mission: MissionRecord, now_us: int) -> Intent | None:
        lease = view.state.leases.get(mission.coordinator_lease_id or "")
        if lease is None or not lease.live_at(now_us):
            return None
        if lease.expires_us - now_us > (lease.expires_us - _issued_us(lease)) // 2:
            return None
        return Intent(
            kind="mission.renew_coordinator",
            group=mission.group_id,
            why="the Coordinator renews its lease before it runs out (§7.2)",
            payload={"leaseId": lease.lease_id},
            overrides={"expected_revision": mission.revision},
        )

    def _adopt(
        self, spec: MissionSpec, mission: MissionRecord, items: dict[str, WorkItemRecord]
    ) -> None:
        """A replacement learns the plan's progress from the log, not from its predecessor."""
        rounds = planning.rework_rounds(spec, items)
        self.plans.rework[spec.id] = rounds
        if rounds and mission.submitted_revision is not None:
            self.plans.replanned_for[spec.id] = mission.submitted_revision

    def _plan(
        self,
        view: View,
        spec: MissionSpec,
        mission: MissionRecord,
        items: dict[str, WorkItemRecord],
        now_us: int,
    ) -> Iterator[Intent]:
        if (
            mission.submitted_revision is not None
            and self.plans.replanned_for.get(spec.id) != mission.submitted_revision
        ):
            # the human requested changes: plan corrective WorkItems (§7.3), keep the old ones
            self.plans.replanned_for[spec.id] = mission.submitted_revision
            self.observe_changes_requested(spec.id)
        self._discover(view, spec, items, now_us)
        planned = self._plan_of(spec)
        works = planned.works
        owned = self._decision(view, now_us).owned
        agenda = self._agenda_of(spec, planned)
        agenda.update(items, self.index, view.state)
        # reviews and results first: they free Workers and unblock dependents
        for wid in sorted(agenda.submitted):
            item = items[wid]
            if item.state is W.SUBMITTED:
                intent = self.review(view, item, items, now_us)
                if intent is not None:
                    yield intent
        pending = planned.unauthorized(items)
        yield from planning.authorizations(spec, pending, items, mission, self.start_us)
        yield from planning.proposal_intents(view, spec, mission, items, self.plans)
        by_id = planned.by_id
        for wid in agenda.due(now_us):  # the others are idle: ``_advance`` would do nothing
            intent = self._advance(view, spec, by_id, items[wid], items, owned, now_us)
            if intent is not None:
                yield intent
        submit = planning.submission(spec, works, items, planned.ids)
        if submit is not None:
            yield submit

    def _reviewer(self, planned: planning.Planned, item: WorkItemRecord) -> str | None:
        work = planned.declared.get(short(item.work_item_id))
        return agent_id(work.reviewed_by) if work and work.reviewed_by else None

    def _agenda_of(self, spec: MissionSpec, planned: planning.Planned) -> Agenda:
        """The Mission's agenda for its current plan (a new plan classifies everything)."""
        known = self._agendas.get(spec.id)
        if known is None or known[0] is not planned:
            by_id = planned.by_id
            known = (
                planned,
                Agenda(lambda item, items: self._due(by_id, item, items), changes=ChangedItems()),
            )
            self._agendas[spec.id] = known
        return known[1]

    def _due(
        self, works: dict[str, Any], item: WorkItemRecord, items: Mapping[str, WorkItemRecord]
    ) -> Due:
        """When ``_advance`` may act on ``item``: ``IDLE`` when it would do nothing (no Intent,
        no bookkeeping) until the WorkItem or one of its dependencies changes, ``WAIT`` when
        only its deadline may make it act (open, dependencies not satisfied), else ``ACT``.
        Must follow ``_advance`` exactly; it depends on nothing but the records given."""
        state = item.state
        if state is W.OFFERED or state is W.FAILED:
            return Due.ACT
        facts = self.index.facts(item)
        if facts.accepted is None:
            return Due.ACT  # an unknown dependency policy: ``_advance`` raises
        work = works.get(short(item.work_item_id))
        if work is not None and work.child is not None:
            child = state is W.OPEN and item.child_mission_id is None and facts.satisfied(items)
            return Due.ACT if child else Due.IDLE
        if state is W.OPEN:
            return Due.ACT if facts.satisfied(items) else Due.WAIT
        return Due.ACT if state in _OWNED and item.owner is not None else Due.IDLE

    def _advance(
        self,
        view: View,
        spec: MissionSpec,
        works: dict[str, Any],
        item: WorkItemRecord,
        items: dict[str, WorkItemRecord],
        owned: dict[str, list[WorkItemRecord]],
        now_us: int,
    ) -> Intent | None:
        work = works.get(short(item.work_item_id))
        facts = self.index.facts(item)
        if facts.accepted is None:
            accepted_states(dependency_policy(item.contract))  # raises DependencyPolicyError
        eligible = facts.satisfied(items)
        if work is not None and work.child is not None:
            return planning.create_child(spec, work, item, self.start_us) if eligible else None
        if item.state in (W.OPEN, W.OFFERED, W.FAILED) and now_us >= facts.deadline_us:
            return self._give_up(item, f"missed its deadline {item.contract['deadline']}")
        if item.state is W.FAILED:
            if item.work_item_id in self.plans.permanent:
                return self._give_up(item, "failed permanently (its owner says no retry can help)")
            if item.attempts >= item.contract["retryPolicy"]["maxAttempts"]:
                return self._give_up(item, f"exhausted its retry policy ({item.attempts} attempts)")
            return self._offer(view, spec, work, item, owned, now_us, eligible)
        if item.state is W.OPEN:
            return self._offer(view, spec, work, item, owned, now_us, eligible)
        if item.state is W.OFFERED:
            question = self._question(view, item)
            if question is not None:
                return self._answer(view, spec, work, item, owned, now_us, question)
            pending = self._decision(view, now_us).pending_of(item.work_item_id)
            for offer in pending:
                if offer.expires_us <= now_us:
                    self.offers.exclude(item.work_item_id, offer.agent_id)  # silence: move on
            excluded = self.offers.excluded.get(item.work_item_id, set())
            if not [o for o in pending if o.expires_us > now_us and o.agent_id not in excluded]:
                return self._offer(view, spec, work, item, owned, now_us, eligible)
            return None
        if item.state in _OWNED and item.owner is not None:
            if not self._owner_live(view, item, now_us):
                # missed its start-by deadline or stopped renewing: reassign (§11.5)
                self.offers.exclude(item.work_item_id, item.owner["agentId"])
                return self._offer(view, spec, work, item, owned, now_us, eligible)
            if item.state is W.BLOCKED and item.child_mission_id is None:
                return Intent(
                    kind="work.unblock",
                    group=item.group_id,
                    why=f"the Coordinator resolves the blocker of '{short(item.work_item_id)}'",
                    payload={
                        "workItemId": item.work_item_id,
                        "resolution": "Use Markdown with one section per requirement.",
                    },
                    overrides={"expected_revision": item.revision},
                )
        return None

    def _candidates(
        self,
        view: View,
        work: Any,
        item: WorkItemRecord,
        owned: dict[str, list[WorkItemRecord]],
        now_us: int,
    ) -> list[Any]:
        target = self.index.facts(item).review_target
        only = [target["reviewer"]] if target is not None else None
        exclude = [agent_id(work.reviewed_by)] if work is not None and work.reviewed_by else []
        duration = work.duration_s if work is not None else 600

        decision = self._decision(view, now_us)

        def ranked() -> list[Any]:
            found = rank_candidates(
                view,
                item,
                now_us,
                self.offers,
                duration_s=duration,
                owned=owned,
                offered=decision.offered,
                exclude=exclude,
                only=only,
                roster=decision.roster,
            )
            return self.rank(view, item, found, now_us) if found else found

        candidates = ranked()
        if (
            not candidates
            and self.offers.excluded.get(item.work_item_id)
            and self.offers.start_over(  # everyone passed
                item.work_item_id,
                now_us,
                accepted=sum(
                    view.state.offers[o].status == OfferStatus.ACCEPTED for o in item.offer_ids
                ),
            )
        ):
            candidates = ranked()
        return candidates

    def _offer(
        self,
        view: View,
        spec: MissionSpec,
        work: Any,
        item: WorkItemRecord,
        owned: dict[str, list[WorkItemRecord]],
        now_us: int,
        eligible: bool,
    ) -> Intent | None:
        if not eligible:
            return None  # its dependencies do not satisfy the contract's policy yet
        candidates = self._candidates(view, work, item, owned, now_us)
        if not candidates:
            return None
        chosen = choose(item, candidates)
        name = short(item.work_item_id)
        rules = []
        if item.owner is not None:
            rules.append(
                f"reassign from the latest checkpoint under Ownership Epoch "
                f"{item.ownership_epoch + 1}; the lapsed owner {short(item.owner['agentId'])} "
                "is excluded"
            )
            why = (
                f"the owner of '{name}' missed its start-by deadline or stopped renewing: "
                "re-offer from the latest checkpoint under a new Ownership Epoch (§11.5)"
            )
        elif item.state is W.FAILED:
            limit = item.contract["retryPolicy"]["maxAttempts"]
            rules.append(f"retry: attempt {item.attempts + 1} of {limit}")
            why = f"'{name}' failed; the retry policy allows another attempt: offer it again"
        else:
            why = f"'{name}' is eligible: offer it to " + ", ".join(
                short(c.agent_id) for c in chosen
            )
        return offer_intent(
            item,
            chosen,
            now_us,
            why=why,
            rules=rules,
            context_package=self._package_for(view, item, chosen, now_us),
        )

    def _package_for(
        self, view: View, item: WorkItemRecord, chosen: list[Any], now_us: int
    ) -> dict[str, Any] | None:
        """The signed Context Package of the WorkItem for candidates who would join its Group
        with a provisional Membership (§8), whose Membership's scopes grow to cover it, or whose
        visibility starts after the WorkItem's first Event (they were never delivered it); None
        when every candidate sees it."""
        own = self._item_events.get(item.work_item_id, [])
        first = int(own[0]["sequence"]) if own else 0
        joining = [
            c
            for c in chosen
            if (m := view.state.memberships.get((item.group_id, c.agent_id))) is None
            or m.state == MembershipState.ENDED
            or int(m.document.get("visibilityStartSequence") or 1) > first
            or not scope_covers_work(m, item.work_item_id)
        ]
        if not joining:
            return None
        inputs = [e for d in item.dependencies for e in self._item_events.get(d, ())]
        proposed = proposals_of([*own, *inputs], {item.work_item_id, *item.dependencies})
        inputs += [e for p in sorted(proposed) for e in self._proposal_events.get(p, ())]
        events = sorted(
            {
                e["eventId"]: e
                for e in [*own, *inputs, *self._mission_events.get(item.group_id, ())]
            }.values(),
            key=lambda e: e["sequence"],
        )
        return build_context_package(
            events,
            scope=PackageScope(
                mission_id=item.mission_id, group_id=item.group_id, work_item_id=item.work_item_id
            ),
            generator=view.member,
            generated_at=format_utc(now_us),
        )

    def _question(self, view: View, item: WorkItemRecord) -> str | None:
        """The open question a candidate raised about an ambiguous contract (MWP-WRK-002)."""
        questions = self.index.facts(item).questions
        if not questions:
            return None
        candidates = {
            view.state.offers[o].agent_id
            for o in item.offer_ids
            if view.state.offers[o].contract_version == item.contract_version
        }
        for message in view.state.messages.values():
            if message["conversationId"] != item.conversation_id:
                continue
            if message["author"]["id"] not in candidates:
                continue
            return questions[0]
        return None

    def _answer(
        self,
        view: View,
        spec: MissionSpec,
        work: Any,
        item: WorkItemRecord,
        owned: dict[str, list[WorkItemRecord]],
        now_us: int,
        question: str,
    ) -> Intent | None:
        answer = (
            work.clarification
            if work is not None and work.clarification
            else "Follow the Mission's existing conventions; nothing else is required."
        )
        contract = clarified(item.contract, {q: answer for q in ambiguities(item.contract)})
        self.offers.excluded.pop(item.work_item_id, None)  # the question was no decline
        candidates = self._candidates(view, work, item, owned, now_us)
        if not candidates:
            return None
        chosen = choose(item, candidates)
        return offer_intent(
            item,
            chosen,
            now_us,
            why=f"a Worker asked '{question}' about '{short(item.work_item_id)}': answer with a "
            f"corrected Work Contract (version {contract['contractVersion']}); acceptance must "
            "be renewed (§10.1)",
            rules=["ambiguity answered by a revised contract"],
            contract=contract,
            revision_reason=f"ambiguity resolved: {question} → {answer}",
            context_package=self._package_for(view, item, chosen, now_us),
        )

    def _give_up(self, item: WorkItemRecord, why: str) -> Intent:
        return Intent(
            kind="mission.terminate",
            group=item.group_id,
            why=f"'{short(item.work_item_id)}' {why}: the Mission cannot be completed as planned",
            payload={"reason": f"WorkItem {item.work_item_id} {why}"},
        )

    # ------------------------------------------------------------------ feedback

    def observe(self, view: View, event: dict[str, Any]) -> None:
        """Learn from each released Event: outcomes for reliability Evidence, declines, and
        the results of child Missions it owns (their reviews, read before approving them)."""
        payload = event.get("payload", {})
        mine = self._mine(view)
        self.offers.observe(view, event, mine)
        for spec in self.missions:
            if event.get("groupId") == group_id(spec.id):
                self.handovers.history.setdefault(mission_id(spec.id), []).append(event)
                self._index_item_event(event)
        if event["kind"] == "work.failed" and payload.get("missionId") in mine:
            if payload.get("permanent"):
                self.plans.permanent.add(payload["workItemId"])
            else:
                self.plans.permanent.discard(payload["workItemId"])
        if event["kind"] == "work.result.accepted":
            mission = view.state.missions.get(payload.get("missionId", ""))
            if mission is not None and mission.owner_id == view.me:
                self.plans.child_events.setdefault(mission.mission_id, []).append(event)

    def _index_item_event(self, event: dict[str, Any]) -> None:
        """Keep the Events of each WorkItem (its own and its Conversation's): what a Context
        Package of the WorkItem summarizes."""
        wid = event.get("workItemId")
        if event.get("groupId") and mission_level(event):
            self._mission_events.setdefault(event["groupId"], []).append(event)
            return
        if event["kind"] == "work.proposed":
            self._proposal_events.setdefault(event["payload"]["proposalId"], []).append(event)
        if event["kind"] == "work.authorized":
            document = event["payload"]["workItem"]
            wid = document["workItemId"]
            self._conversations[document["conversationId"]] = wid
        elif wid is None:
            wid = self._conversations.get(event.get("conversationId") or "")
        if wid is not None:
            self._item_events.setdefault(wid, []).append(event)

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Learn from what became of an Intent."""
        planning.note_proposal_outcome(intent, outcome.ok, self.plans)
        handover.note_package(intent, outcome.ok, self.handovers)
        if intent.tag.startswith("reconcile:") and outcome.ok:
            mid, epoch = intent.tag[len("reconcile:") :].rsplit(":", 1)
            self.handovers.reconciled[mid] = int(epoch)
        if intent.tag.startswith("stale:"):
            self.handovers.stale_sent.add(intent.tag.split(":", 1)[1])

    def observe_changes_requested(self, spec_id: str) -> None:
        """Plan one more round of corrective work for a Mission."""
        self.plans.rework[spec_id] = self.plans.rework.get(spec_id, 0) + 1

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """Offer expiries, owner lease expiries, its own lease renewal point, failure times.

        Reads the replica's active leases (``active_leases``, what the reducers keep for the
        timers) instead of every WorkItem's three leases, and the earliest deadline after
        ``now_us`` from the Mission's sorted deadlines (``MissionItems.next_deadline_us``):
        the time ``next_wakeup_scan`` finds."""
        times = [
            due
            for wid in self.offers.restarted_us
            if (due := self.offers.next_round_us(wid)) is not None
        ]
        state = view.state
        pending = self.open_offers.pending(state)
        leased: dict[str, list[int]] | None = None
        for spec in self.missions:
            for offset in (spec.coordinator_fails_after_s, spec.coordinator_returns_after_s):
                if offset is not None and short(view.me) == spec.coordinator:
                    times.append(self.start_us + offset * 1_000_000)
            mid = mission_id(spec.id)
            mission = state.missions.get(mid)
            if mission is None or mission.coordinator_agent_id != view.me:
                continue
            lease = state.leases.get(mission.coordinator_lease_id or "")
            if lease is not None and lease.is_active:
                times.append(lease.expires_us - (lease.expires_us - _issued_us(lease)) // 2)
            for offer in pending:
                found = state.work_items.get(offer.work_item_id)
                if found is not None and found.mission_id == mid:
                    times.append(offer.expires_us)
            deadline = self.index.next_deadline_us(state, mid, now_us)
            if deadline is not None:
                times.append(deadline)
            if leased is None:
                leased = _item_lease_expiries(state)
            times.extend(leased.get(mid, ()))
        future = [t for t in times if t > now_us]
        return min(future) if future else None

    def next_wakeup_scan(self, view: View, now_us: int) -> int | None:
        """``next_wakeup`` by a scan of every WorkItem of its Missions (the plain path its
        equivalence test compares with)."""
        times = [
            due
            for wid in self.offers.restarted_us
            if (due := self.offers.next_round_us(wid)) is not None
        ]
        pending = self.open_offers.pending(view.state)
        for spec in self.missions:
            for offset in (spec.coordinator_fails_after_s, spec.coordinator_returns_after_s):
                if offset is not None and short(view.me) == spec.coordinator:
                    times.append(self.start_us + offset * 1_000_000)
            mission = view.state.missions.get(mission_id(spec.id))
            if mission is None or mission.coordinator_agent_id != view.me:
                continue
            lease = view.state.leases.get(mission.coordinator_lease_id or "")
            if lease is not None and lease.is_active:
                times.append(lease.expires_us - (lease.expires_us - _issued_us(lease)) // 2)
            items = self.index.items_scan(view.state, mission_id(spec.id))
            times.extend(o.expires_us for o in pending if o.work_item_id in items)
            for item in items.values():
                times.append(self.index.facts(item).deadline_us)
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
