"""A thin client for scripts and notebooks: sign Commands as a Principal and submit them.

``Client`` fills in what a well-behaved sender carries (Action ID, correlation ID, ``issuedAt``,
and the Principal's current Session, Membership and Coordinator Epochs, read from the Group log's
current state) so a script can say *what* it wants; ``stale=`` overrides let a learner send a
deliberately stale Command and watch the fence refuse it. It is a convenience over the same
signed wire Commands any other client would send.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .authority.organization import Member
from .authority.pipeline import Outcome
from .protocol.ids import derived_uuid
from .protocol.timestamps import Timestamp
from .store.group_log import GroupLog


@dataclass
class Client:
    """Sends Commands as ``member`` to ``log``."""

    log: GroupLog
    member: Member
    _count: int = field(default=0, repr=False)

    def command(
        self, kind: str, payload: dict[str, Any], *, now: Timestamp, group: str | None, **over: Any
    ) -> bytes:
        """The signed Command bytes (``over`` sets envelope fields such as ``session_epoch``)."""
        self._count += 1
        state = self.log.state
        fields: dict[str, Any] = {"issued_at": now.text, "group_id": group}
        if group is not None and group in state.groups:
            if self.member.type == "agent" and self.member.id in state.agents:
                fields["session_epoch"] = state.agents[self.member.id].session_epoch
            membership = state.memberships.get((group, self.member.id))
            if membership is not None and self.member.type in ("agent", "human"):
                fields["membership_epoch"] = membership.epoch
            mission = state.missions[state.groups[group].mission_id]
            if self.member.id == mission.coordinator_agent_id:
                fields["coordinator_epoch"] = mission.coordinator_epoch
        elif group is not None and self.member.type == "agent":
            fields["session_epoch"] = state.agents[self.member.id].session_epoch
        fields["action_id"] = derived_uuid(
            self.member.organization_id, self.member.id, "client", now.text, str(self._count)
        )
        fields.update(over)
        return self.log.org.command(self.member, kind, payload, **fields)

    def send(
        self, kind: str, payload: dict[str, Any], *, now: Timestamp, group: str | None, **over: Any
    ) -> Outcome:
        """Sign, submit and return the committed outcome."""
        return self.log.submit(self.command(kind, payload, now=now, group=group, **over), now)
