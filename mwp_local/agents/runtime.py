"""An agent's runtime: its inbox, the state it folds from delivered Events, and how its Intents
become signed Commands carrying the epochs *it* knows (not the Authority's).

The runtime is the boundary between a sans-IO policy and a driver. Everything an agent knows
comes from Events delivered to it: a Command it signs carries the Session, Membership and
Coordinator Epochs of its own replica, so an agent that missed Events sends stale Commands and
is fenced, exactly as a real one would be.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..authority.context import derived_uuid
from ..authority.evolve import evolve
from ..authority.pipeline import Outcome
from ..authority.state import AuthorityState
from ..organization import Member, Organization
from .base import Intent, Policy, View
from .inbox import Inbox


@dataclass
class AgentRuntime:
    """One agent: Principal, policy, inbox and replica state."""

    org: Organization
    member: Member
    policy: Policy
    inbox: Inbox = field(default_factory=Inbox)
    replica: AuthorityState = field(init=False)
    sent: int = 0
    accepted: int = 0
    rejected: int = 0
    #: Intents refused since the last new Event: not retried until something changes, so a
    #: policy that keeps wanting a refused Command does not spin.
    _refused: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.replica = AuthorityState(
            registry=self.org.registry(), organization_id=self.org.organization_id
        )

    @property
    def name(self) -> str:
        """The short name of the Principal."""
        return self.member.id.rsplit(":", 1)[-1]

    @property
    def view(self) -> View:
        """What the policy may read."""
        return View(member=self.member, state=self.replica, sign=self._sign)

    def _sign(self, profile: str, document: dict[str, Any]) -> dict[str, Any]:
        return self.org.sign(profile, self.member, document)

    def deliver(self, events: list[dict[str, Any]]) -> int:
        """Receive Events (any order, duplicates allowed); fold the releasable ones."""
        released = self.inbox.offer_all(events)
        for event in released:
            evolve(self.replica, event)
        self.replica.take_touched()
        if released:
            self._refused.clear()
        return len(released)

    def intents(self, now_us: int) -> list[Intent]:
        """What the policy wants to do now (minus Intents refused since the last new Event)."""
        return [i for i in self.policy.decide(self.view, now_us) if _key(i) not in self._refused]

    def next_wakeup(self, now_us: int) -> int | None:
        """When the policy next wants to act."""
        return self.policy.next_wakeup(self.view, now_us)

    def command(self, intent: Intent, issued_at: str) -> bytes:
        """Sign ``intent`` as this agent, with the epochs its own replica knows."""
        self.sent += 1
        state = self.replica
        fields: dict[str, Any] = {"issued_at": issued_at, "group_id": intent.group}
        group = intent.group
        if group is not None and self.member.type == "agent":
            agent = state.agents.get(self.member.id)
            fields["session_epoch"] = agent.session_epoch if agent else 1
        if group is not None and group in state.groups:
            membership = state.memberships.get((group, self.member.id))
            if membership is not None and self.member.type in ("agent", "human"):
                fields["membership_epoch"] = membership.epoch
            mission = state.missions[state.groups[group].mission_id]
            if self.member.id == mission.coordinator_agent_id and self.member.type == "agent":
                fields["coordinator_epoch"] = mission.coordinator_epoch
        fields["action_id"] = derived_uuid(self.member.id, intent.kind, issued_at, str(self.sent))
        fields.update(intent.overrides)
        return self.org.command(self.member, intent.kind, intent.payload, **fields)

    def outcome(self, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Tell the policy what became of its Intent."""
        if outcome.ok:
            self.accepted += 1
        else:
            self.rejected += 1
            self._refused.add(_key(intent))
        self.policy.on_outcome(self.view, intent, outcome, now_us)


def _key(intent: Intent) -> str:
    return f"{intent.kind}|{intent.group}|{intent.payload.get('workItemId', '')}|{intent.tag}"
