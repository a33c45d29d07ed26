"""How the Coordinator chooses Workers and words its offers (§10.3, MWP-WRK-004/006).

Owns the ranking of eligible Workers and the structured selection basis every offer records:

* **capability matches**: the Agent Card declares every required capability at a version with
  the same major and no lower minor/patch (the Group Authority verifies the same);
* **authorization eligibility**: a registered Agent with an open Session, not the Coordinator
  itself, not excluded for this WorkItem (it declined, let an offer expire, or lost its
  ownership by not renewing), and not the reviewer named to assess this work;
* **availability estimate**: now when the Agent has a free slot (its owned queued, active or
  blocked WorkItems across Groups are fewer than its declared concurrency; scheduling metadata
  only), otherwise when enough of its work should have completed, from the schedule estimates
  it disclosed at acceptance (MWP-WRK-012);
* **reliability Evidence**: per Agent and capability, the outcomes of the Coordinator's own
  Missions as observed in the log: verified results, failures and lapsed ownerships, each
  backed by Evidence IDs (``OfferBook``). Reliability is the Laplace-smoothed share of verified
  outcomes, ``(verified + 1) / (outcomes + 2)``;
* **expected cost**: the contract's financial ceiling spread over its attempts, times the
  expected number of attempts ``min(1 / reliability, maxAttempts)``;
* **policy rules**: the names of the rules applied and a one-line score of each candidate.

Candidates are ranked by the expected time to a verified result, ``(wait + duration) /
reliability``; ties go to the less loaded Worker (owned work and open offers per declared slot),
then by Agent ID. Exclusive work goes to the best candidate alone
(sequentially: the next one only after a decline or an expiry); urgent work (``high``,
``critical``) to a bounded set of the best ``URGENT_CANDIDATES``, where the first valid
acceptance wins and the Group Authority withdraws the rest as ``lost_race`` in the same Event.
Pure: everything comes from the view and the book; nothing here performs I/O.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...authority.model import AgentRecord, OfferRecord, WorkItemRecord
from ...protocol.tables import OfferStatus, WorkItemState
from ...protocol.timestamps import format_utc
from ..base import Intent, View
from ..naming import short
from .contracts import DECLINE_SCHEMA
from .index import epoch_us

W = WorkItemState
#: How long an offer stays open.
OFFER_TTL_US = 120_000_000
#: A round in which everyone passed starts over at most every 64 offer lifetimes (~2 h).
MAX_ROUND_BACKOFF = 64
#: The bounded candidate set of urgent work (the Group Authority allows at most five).
URGENT_CANDIDATES = 3
URGENT = ("high", "critical")
#: At most this many reliability Evidence IDs are cited per offer.
MAX_EVIDENCE = 12
_OWNED = (W.QUEUED, W.ACTIVE, W.BLOCKED)


@functools.lru_cache(maxsize=4096)
def version_tuple(text: str) -> tuple[int, ...]:
    """``"1.2.3-rc1"`` → ``(1, 2, 3)`` (memoized: Agent Cards and contracts repeat a few)."""
    return tuple(int(p) for p in text.split("-", 1)[0].split("+", 1)[0].split(".")[:3])


def capability_matches(
    agent: AgentRecord, required: Sequence[Mapping[str, str]]
) -> list[dict[str, str]] | None:
    """The Agent's versions of every required capability, or None if one is missing."""
    have = dict(agent.capabilities)
    out = []
    for cap in required:
        version = have.get(cap["id"])
        if version is None:
            return None
        mine, need = version_tuple(version), version_tuple(cap["version"])
        if mine[0] != need[0] or mine < need:
            return None
        out.append({"id": cap["id"], "version": version})
    return out


@dataclass
class Track:
    """One Agent's observed outcomes with one capability."""

    verified: int = 0
    failed: int = 0
    lapsed: int = 0
    evidence: list[str] = field(default_factory=list)

    @property
    def reliability(self) -> float:
        """Laplace-smoothed share of verified outcomes (0.5 with no history)."""
        return (self.verified + 1) / (self.verified + self.failed + self.lapsed + 2)


@dataclass
class OfferBook:
    """What the Coordinator learned about Workers from its own Missions' Events."""

    #: WorkItem ID → Agents not to offer it to again for now.
    excluded: dict[str, set[str]] = field(default_factory=dict)
    #: (Agent ID, capability ID) → outcomes.
    tracks: dict[tuple[str, str], Track] = field(default_factory=dict)
    #: WorkItem ID → when its last round of offers started over (everyone had passed).
    restarted_us: dict[str, int] = field(default_factory=dict)
    #: WorkItem ID → how many rounds in a row started over with nobody taking the work.
    restarts: dict[str, int] = field(default_factory=dict)
    #: WorkItem ID → how many of its offers had been accepted at its last restart.
    accepted_at_restart: dict[str, int] = field(default_factory=dict)

    def next_round_us(self, work_item_id: str) -> int | None:
        """When a round in which everyone passed may start over: ``OFFER_TTL_US`` after the
        last one, doubling with each new round up to ``MAX_ROUND_BACKOFF`` times, so work that
        nobody takes is offered less and less often instead of forever at the same pace."""
        last = self.restarted_us.get(work_item_id)
        if last is None:
            return None
        factor: int = min(2 ** max(0, self.restarts.get(work_item_id, 0) - 1), MAX_ROUND_BACKOFF)
        return last + OFFER_TTL_US * factor

    def start_over(self, work_item_id: str, now_us: int, accepted: int = 0) -> bool:
        """Forget who passed on this WorkItem, unless it is too soon (``next_round_us``).

        ``accepted`` is how many of its offers were accepted so far: a round in which someone
        took the work (and then, say, lost it by missing the start-by deadline) resets the
        back-off, which is only for work that nobody takes."""
        if accepted > self.accepted_at_restart.get(work_item_id, 0):
            self.restarts[work_item_id] = 0
        self.accepted_at_restart[work_item_id] = accepted
        due = self.next_round_us(work_item_id)
        if due is not None and now_us < due:
            return False
        self.restarted_us[work_item_id] = now_us
        self.restarts[work_item_id] = self.restarts.get(work_item_id, 0) + 1
        self.excluded[work_item_id] = set()
        return True

    def exclude(self, work_item_id: str, agent_id: str) -> None:
        """Do not offer this WorkItem to this Agent again (until everyone has passed)."""
        self.excluded.setdefault(work_item_id, set()).add(agent_id)

    def track(self, agent_id: str, capability_id: str) -> Track:
        """The outcomes of ``agent_id`` with ``capability_id`` (empty if none yet)."""
        return self.tracks.get((agent_id, capability_id), Track())

    def _note(
        self, item: WorkItemRecord, agent_id: str, outcome: str, evidence: Iterable[str]
    ) -> None:
        for cap in item.contract["requiredCapabilities"]:
            track = self.tracks.setdefault((agent_id, cap["id"]), Track())
            setattr(track, outcome, getattr(track, outcome) + 1)
            track.evidence.extend(e for e in evidence if e not in track.evidence)

    def observe(self, view: View, event: Mapping[str, Any], missions: set[str]) -> None:
        """Learn from one Event of the Coordinator's own Missions (after it was folded)."""
        payload = event.get("payload", {})
        if payload.get("missionId") not in missions:
            return
        kind = event["kind"]
        item = view.state.work_items.get(payload.get("workItemId", ""))
        if item is None:
            if kind == "message.posted":
                self._declined(view, payload["message"])
            return
        owner = item.owner["agentId"] if item.owner else None
        if kind == "work.result.accepted" and owner and "childMissionId" not in payload:
            ids = [e["evidenceId"] for e in payload.get("reviewEvidence", [])]
            ids += [e["evidenceId"] for e in item.submitted_evidence]
            self._note(item, owner, "verified", ids)
        elif kind == "work.failed" and owner and event["cause"]["type"] != "event":
            self._note(item, owner, "failed", [e["evidenceId"] for e in payload["evidence"]])
        elif kind == "work.offer.created" and payload.get("fencedOwner"):
            fenced = payload["fencedOwner"]["agentId"]
            self._note(item, fenced, "lapsed", [])
        elif kind == "message.posted":
            self._declined(view, payload["message"])

    def _declined(self, view: View, message: Mapping[str, Any]) -> None:
        for part in message.get("content", []):
            if part.get("type") == "data_ref" and part.get("schema") == DECLINE_SCHEMA:
                offer = view.state.offers.get(str(part.get("data", {}).get("offerId", "")))
                if offer is not None and offer.agent_id == message["author"]["id"]:
                    self.exclude(offer.work_item_id, offer.agent_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """An eligible Worker for one WorkItem and why it ranks where it does."""

    agent_id: str
    matches: tuple[dict[str, str], ...]
    available_us: int
    reliability: float
    evidence: tuple[str, ...]
    expected_cost: float
    score_s: float
    #: Owned work per declared slot (ties go to the less loaded).
    load: float = 0.0

    def summary(self, now_us: int) -> str:
        """One line for ``policyRulesApplied``: the facts behind the rank, no reasoning."""
        wait = max(0, self.available_us - now_us) // 1_000_000
        return (
            f"candidate {short(self.agent_id)}: expected {self.score_s:.0f}s to a verified "
            f"result (wait {wait}s, reliability {self.reliability:.2f})"
        )


def owned_by_agent(view: View) -> dict[str, list[WorkItemRecord]]:
    """Each Agent's queued, active and blocked WorkItems (all Groups: scheduling metadata)."""
    out: dict[str, list[WorkItemRecord]] = {}
    for item in view.state.work_items.values():
        if item.owner and item.state in _OWNED:
            out.setdefault(item.owner["agentId"], []).append(item)
    return out


def offered_to_agent(
    view: View, now_us: int, offers: Iterable[OfferRecord] | None = None
) -> dict[str, int]:
    """How many open offers each Agent holds (work it may still accept); ``offers``: the
    view's offers, or any subset holding all its pending ones."""
    out: dict[str, int] = {}
    for offer in view.state.offers.values() if offers is None else offers:
        if offer.status == OfferStatus.PENDING and offer.expires_us > now_us:
            out[offer.agent_id] = out.get(offer.agent_id, 0) + 1
    return out


def availability_us(agent: AgentRecord, owned: Sequence[WorkItemRecord], now_us: int) -> int:
    """When ``agent`` should have a free slot: now, or after enough of its disclosed work."""
    busy = len(owned) - max(agent.max_concurrency, 1)
    if busy < 0:
        return now_us
    ends = []
    for item in owned:
        estimate = item.schedule_estimate or {}
        done = estimate.get("estimatedCompletion")
        ends.append(epoch_us(done) if done else now_us + 600_000_000)
    ends.sort()
    return max(now_us, ends[min(busy, len(ends) - 1)])


@dataclass
class Roster:
    """What ranking reads about the Agents of one view at one instant, memoized across the
    ``rank`` calls of one decision (pass the same ``Roster`` only while the view, ``owned`` and
    ``now_us`` stay the same)."""

    #: Agent ID → ``availability_us``.
    available: dict[str, int] = field(default_factory=dict)
    #: Required capabilities (ID, version) → the Agents that match them, in table order, with
    #: their ``capability_matches``.
    matching: dict[tuple[tuple[str, str], ...], list[tuple[AgentRecord, list[dict[str, str]]]]] = (
        field(default_factory=dict)
    )

    def capable(
        self, agents: Mapping[str, AgentRecord], required: Sequence[Mapping[str, str]]
    ) -> list[tuple[AgentRecord, list[dict[str, str]]]]:
        """The Agents of ``agents`` that have every ``required`` capability, and their
        versions of them (do not mutate)."""
        key = tuple((c["id"], c["version"]) for c in required)
        found = self.matching.get(key)
        if found is None:
            found = [
                (agent, matches)
                for agent in agents.values()
                if (matches := capability_matches(agent, required)) is not None
            ]
            self.matching[key] = found
        return found


def rank(
    view: View,
    item: WorkItemRecord,
    now_us: int,
    book: OfferBook,
    *,
    duration_s: int,
    owned: Mapping[str, Sequence[WorkItemRecord]],
    offered: Mapping[str, int] | None = None,
    exclude: Iterable[str] = (),
    only: Iterable[str] | None = None,
    roster: Roster | None = None,
) -> list[Candidate]:
    """Every eligible Worker for ``item``, best first (``roster``: see ``Roster``)."""
    roster = Roster() if roster is None else roster
    memo = roster.available
    required = item.contract["requiredCapabilities"]
    skip = set(exclude) | book.excluded.get(item.work_item_id, set()) | {view.me}
    allowed = set(only) if only is not None else None
    policy = item.contract["retryPolicy"]
    ceiling = float(item.contract["budget"].get("financialLimit", 0))
    out = []
    for agent, found in roster.capable(view.state.agents, required):
        if agent.agent_id in skip or agent.session_epoch == 0:
            continue
        if allowed is not None and agent.agent_id not in allowed:
            continue
        tracks = [book.track(agent.agent_id, c["id"]) for c in required]
        reliability = min(t.reliability for t in tracks)
        evidence = tuple(dict.fromkeys(e for t in tracks for e in t.evidence))
        available_us = memo.get(agent.agent_id)
        if available_us is None:
            available_us = availability_us(agent, owned.get(agent.agent_id, ()), now_us)
            memo[agent.agent_id] = available_us
        attempts = min(1 / reliability, float(policy["maxAttempts"]))
        out.append(
            Candidate(
                agent_id=agent.agent_id,
                matches=tuple(found),
                available_us=available_us,
                reliability=reliability,
                evidence=evidence,
                expected_cost=round(ceiling / policy["maxAttempts"] * attempts, 2),
                score_s=((available_us - now_us) / 1e6 + duration_s) / reliability,
                load=(len(owned.get(agent.agent_id, ())) + (offered or {}).get(agent.agent_id, 0))
                / max(agent.max_concurrency, 1),
            )
        )
    return sorted(out, key=lambda c: (round(c.score_s, 6), c.load, c.agent_id))


def selection_basis(
    chosen: Sequence[Candidate], now_us: int, rules: Sequence[str]
) -> dict[str, Any]:
    """The structured selection basis of an offer (MWP-WRK-006); the Group Authority adds the
    required capabilities and its own verified matches."""
    best = chosen[0]
    evidence = list(dict.fromkeys(e for c in chosen for e in c.evidence))[:MAX_EVIDENCE]
    return {
        "authorizationEligible": True,
        "availabilityEstimate": format_utc(best.available_us),
        "expectedCost": best.expected_cost,
        "reliabilityEvidence": evidence,
        "policyRulesApplied": [
            "capability-version-match",
            "eligible: registered, open Session, not excluded, not the Coordinator",
            "rank: expected time to a verified result = (wait + duration) / reliability",
            "ties: the less loaded Worker, then the Agent ID",
            "reliability: (verified + 1) / (outcomes + 2) per Agent and capability",
            *rules,
            *(c.summary(now_us) for c in chosen),
        ],
    }


def choose(item: WorkItemRecord, candidates: Sequence[Candidate]) -> list[Candidate]:
    """Urgent work: the bounded candidate set; exclusive work: the best candidate alone."""
    urgent = item.contract["requestedUrgency"] in URGENT
    return list(candidates[:URGENT_CANDIDATES] if urgent else candidates[:1])


def offer_intent(
    item: WorkItemRecord,
    chosen: Sequence[Candidate],
    now_us: int,
    *,
    why: str,
    rules: Sequence[str] = (),
    contract: Mapping[str, Any] | None = None,
    revision_reason: str | None = None,
    context_package: Mapping[str, Any] | None = None,
) -> Intent:
    """A ``work.offer`` to ``chosen`` (one, or the urgent bounded set), with the signed Context
    Package a candidate receives with its just-in-time provisional Membership (§8)."""
    expires = format_utc(now_us + OFFER_TTL_US)
    kind_rule = "urgent-bounded-candidate-set" if len(chosen) > 1 else "sequential-exclusive"
    payload: dict[str, Any] = {
        "workItemId": item.work_item_id,
        "offers": [{"agentId": c.agent_id, "expiresAt": expires} for c in chosen],
        "selectionBasis": selection_basis(chosen, now_us, [kind_rule, *rules]),
    }
    if contract is not None:
        payload["contract"] = dict(contract)
        payload["revisionReason"] = revision_reason or "contract corrected"
    if context_package is not None:
        payload["contextPackage"] = dict(context_package)
    return Intent(
        kind="work.offer",
        group=item.group_id,
        why=why,
        payload=payload,
        overrides={"expected_revision": item.revision},
        tag=f"offer:{item.revision}",
    )


def pending_offers(view: View, item: WorkItemRecord, now_us: int) -> list[Any]:
    """The item's offers still open at ``now_us``."""
    offers = (view.state.offers[o] for o in item.offer_ids)
    return [o for o in offers if o.status == OfferStatus.PENDING and o.expires_us > now_us]
