"""The signing client: one Principal's Commands, signed with the epochs it currently holds.

``Client`` fills in what a well-behaved sender carries (Action ID, correlation ID, ``issuedAt``,
and the Principal's current Session, Membership and Coordinator Epochs, read from the Group log's
current state) so a script can say *what* it wants; ``stale=`` (or an explicit ``session_epoch=``
and the like) lets a learner send a deliberately stale Command and watch the fence refuse it. It
is a convenience over the same signed wire Commands any other client would send: the Authority
judges them exactly as it judges an agent's.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..authority.organization import Member
from ..authority.pipeline import Accepted
from ..authority.state import AuthorityState
from ..protocol.ids import derived_uuid
from ..protocol.timestamps import Timestamp, format_utc, parse_timestamp
from ..store.group_log import GroupLog
from .replies import Reply

#: The epochs ``stale=`` can name, and the envelope field each one is carried in.
EPOCHS = {
    "session": "session_epoch",
    "membership": "membership_epoch",
    "coordinator": "coordinator_epoch",
}


class _Unset:
    """The default of ``group=``: the client's own Group (``None`` is the Organization)."""


UNSET = _Unset()

#: Commands signed so far per Group log by hand-signing clients that share its count (every
#: Workbench, every ``Client.for_sandbox``): the Action IDs they derive never repeat, even with
#: two of them on one Sandbox at one virtual instant.
_SENT: weakref.WeakKeyDictionary[GroupLog, list[int]] = weakref.WeakKeyDictionary()


def next_count(log: GroupLog) -> int:
    """The next number of the count shared on ``log`` (1, 2, …)."""
    count = _SENT.setdefault(log, [0])
    count[0] += 1
    return count[0]


def shared_action_id(log: GroupLog) -> str:
    """A fresh Action ID from ``log``'s shared count, in the Organization's scope (as every
    identifier the sandbox derives, §2)."""
    return derived_uuid(log.org.organization_id, "bench", str(next_count(log)))


def sandbox_group(sandbox: Any, group: str | None, where: str) -> str | None:
    """``group`` checked against ``sandbox``'s Groups; by default its Group if it has one."""
    groups: list[str] = sorted(sandbox.log.state.groups)
    if group is None and len(groups) == 1:
        return groups[0]
    if group is not None and group not in groups:
        raise ValueError(
            f"{where}: the sandbox has no Group {group!r} "
            f"(its Groups: {', '.join(groups) or 'none yet; run a step first'})"
        )
    return group


def current_epochs(state: AuthorityState, member: Member, group: str | None) -> dict[str, int]:
    """The fence values a well-behaved ``member`` carries on a Command to ``group`` (envelope
    field → value): its Session Epoch (an Agent), its Membership Epoch (a member of the Group)
    and, for the Mission's Coordinator, the Coordinator Epoch (§7, §9)."""
    if group is None:
        return {}
    epochs: dict[str, int] = {}
    if member.type == "agent":
        agent = state.agents.get(member.id)
        epochs["session_epoch"] = agent.session_epoch if agent is not None else 1
    membership = state.memberships.get((group, member.id))
    if membership is not None and member.type in ("agent", "human"):
        epochs["membership_epoch"] = membership.epoch
    if group in state.groups:
        mission = state.missions[state.groups[group].mission_id]
        if member.id == mission.coordinator_agent_id:
            epochs["coordinator_epoch"] = mission.coordinator_epoch
    return epochs


def stale_epochs(current: dict[str, int], stale: Iterable[str]) -> dict[str, int]:
    """``current`` with each epoch named in ``stale`` one behind (what a client that missed the
    latest change would still carry)."""
    out = dict(current)
    for name in stale:
        field_name = EPOCHS.get(name)
        if field_name is None:
            raise ValueError(f"stale={name!r}: an epoch is one of {', '.join(map(repr, EPOCHS))}")
        if field_name not in out:
            raise ValueError(
                f"stale={name!r}: this sender carries no {name} epoch on this Command "
                f"(it carries {', '.join(k.removesuffix('_epoch') for k in out) or 'none'}); "
                f"set {field_name}= yourself to send one"
            )
        if out[field_name] <= 1:
            raise ValueError(
                f"stale={name!r}: the current {name} epoch is {out[field_name]}, so there is no "
                f"older one to send yet; change it first (e.g. a new Session, a Membership "
                f"change, a Coordinator reassignment), or set {field_name}= yourself"
            )
        out[field_name] -= 1
    return out


@dataclass
class Client:
    """Sends Commands as ``member`` to ``log``.

    ``group`` is where a Command goes when a call names none (``None``: the Organization);
    ``clock`` gives ``now`` when a call passes none; ``delivered`` is called with each accepted
    outcome (a Sandbox hands the new Events to its agents). ``Client.for_sandbox`` sets all
    three from a Sandbox. ``shared_ids`` derives Action IDs from a count shared by every such
    client of the log (else from this client's own count, member and ``issuedAt``).
    """

    log: GroupLog
    member: Member
    group: str | None = None
    clock: Callable[[], Timestamp] | None = field(default=None, repr=False)
    delivered: Callable[[Accepted], None] | None = field(default=None, repr=False)
    shared_ids: bool = field(default=False, repr=False)
    _count: int = field(default=0, repr=False)

    @classmethod
    def for_sandbox(cls, sandbox: Any, name: str, *, group: str | None = None) -> Client:
        """A client for Principal ``name`` of ``sandbox`` (a ``mwp_local.Sandbox``): its Group
        log, its virtual clock, and its agents are handed what this client gets accepted.
        ``group`` defaults to the sandbox's Group when it has exactly one."""
        return cls(
            sandbox.log,
            sandbox.log.org.get(name),
            group=sandbox_group(sandbox, group, "Client.for_sandbox"),
            clock=lambda: _at(sandbox.clock.now_us()),
            delivered=lambda accepted: sandbox.deliver([r.document for r in accepted.events]),
            shared_ids=True,
        )

    def epochs(self, group: str | _Unset | None = UNSET) -> dict[str, int]:
        """The epochs this client carries on its next Command to ``group`` (envelope field →
        value), read from the log's current state."""
        target = self.group if isinstance(group, _Unset) else group
        return current_epochs(self.log.state, self.member, target)

    def _now(self, now: Timestamp | None) -> Timestamp:
        if now is not None:
            return now
        if self.clock is None:
            raise ValueError(
                f"{_short(self.member)}.send: this client has no clock; pass now= "
                "(a Timestamp, e.g. mwp_local.protocol.timestamps.parse_timestamp(...))"
            )
        return self.clock()

    def command(
        self,
        kind: str,
        payload: dict[str, Any],
        *,
        now: Timestamp | None = None,
        group: str | _Unset | None = UNSET,
        stale: Iterable[str] = (),
        **over: Any,
    ) -> bytes:
        """The signed Command bytes. ``stale`` names epochs to carry one behind (``"session"``,
        ``"membership"``, ``"coordinator"``); ``over`` sets envelope fields outright (e.g.
        ``session_epoch=0``, ``expected_revision=3``, ``action_id=...``)."""
        self._count += 1
        at = self._now(now)
        target = self.group if isinstance(group, _Unset) else group
        fields: dict[str, Any] = {"issued_at": at.text, "group_id": target}
        fields.update(stale_epochs(current_epochs(self.log.state, self.member, target), stale))
        if self.shared_ids:
            fields["action_id"] = shared_action_id(self.log)
        else:
            fields["action_id"] = derived_uuid(
                self.member.organization_id, self.member.id, "client", at.text, str(self._count)
            )
        fields.update(over)
        return self.log.org.command(self.member, kind, payload, **fields)

    def send(
        self, kind: str, payload: dict[str, Any], *, now: Timestamp | None = None, **options: Any
    ) -> Reply:
        """Sign (``options`` as for ``command``: ``group``, ``stale``, envelope fields), submit,
        and return the committed outcome as a ``Reply`` (drawn in a notebook: the Events of a
        receipt, or the section-19 code, explanation and rule of a refusal)."""
        at = self._now(now)
        signed = self.command(kind, payload, now=at, **options)
        outcome = self.log.submit(signed, at)
        if isinstance(outcome, Accepted) and self.delivered is not None:
            self.delivered(outcome)
        return Reply(kind=kind, sender=_short(self.member), outcome=outcome)


def _short(member: Member) -> str:
    """A Principal's short name (``worker-a``), as people call it."""
    return member.id.rsplit(":", 1)[-1]


def _at(micros: int) -> Timestamp:
    return parse_timestamp(format_utc(micros))
