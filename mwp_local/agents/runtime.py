"""An agent's runtime: its inbox, the state it folds from delivered Events, its durable local
projections, and how its Intents become signed Commands carrying the epochs *it* knows (not the
Authority's).

The runtime is the boundary between a sans-IO policy and a driver. Everything an agent knows
comes from Events delivered to it: a Command it signs carries the Session, Membership and
Coordinator Epochs of its own replica, so an agent that missed Events sends stale Commands and
is fenced, exactly as a real one would be. Like a real client it folds only its own copy of each
Event, parsed from the Event's JSON text (a document handed to ``deliver`` is read, never kept),
so nothing the Authority, another agent or a caller holds is part of its replica.

With a ``LocalStore`` (Workers; MWP-WRK-008) every released Event goes to its Group's inbox and
the per-Group Cursors and work queues follow. Writes are batched: the Events released since the
last commit, the Cursors they moved and the queue rows they changed are committed in one
transaction (``flush``), by default just before the agent sends a Command, so it acts only on
what is durable. A driver may instead commit when the agent goes idle (group commit; threads
mode does, so a busy Worker does not pay one commit per action): either way a Cursor is never
stored without what it produced, and a crash loses only what the Group log re-delivers.
Opening a runtime on an existing store folds its stored Events back in release order and checks
the rebuilt queues against the stored ones (``restored``).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..authority.evolve import evolve
from ..authority.organization import Member, Organization
from ..authority.pipeline import Outcome
from ..authority.records import EventRecord
from ..authority.state import AuthorityState
from ..protocol.ids import derived_uuid
from ..protocol.inbox import ORG, Inbox
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..store.agent_store import InboxRow, LocalBatch, LocalStore, QueueRow, work_queues
from .base import Intent, Policy, View

#: A runtime whose driver commits at other points still commits before acting once this many
#: released Events wait (bounded memory, bounded replay after a crash).
MAX_PENDING = 512


@dataclass(frozen=True, slots=True, kw_only=True)
class Restored:
    """What opening a runtime on an existing local store found."""

    #: Events folded back from the store.
    events: int
    #: The per-Group work queues as stored ...
    stored_queues: dict[str, tuple[QueueRow, ...]]
    #: ... and as rebuilt by replaying the stored Events (they must be equal).
    rebuilt_queues: dict[str, tuple[QueueRow, ...]]

    @property
    def matches(self) -> bool:
        """Whether the replay rebuilt exactly the stored queues."""
        return self.stored_queues == self.rebuilt_queues


@dataclass
class AgentRuntime:
    """One agent: Principal, policy, inbox, replica state and (optionally) local store."""

    org: Organization
    member: Member
    policy: Policy
    local: LocalStore | None = None
    #: How many times this agent's runtime was replaced (0: the first); keeps Action IDs of a
    #: restarted runtime distinct from its predecessor's.
    incarnation: int = 0
    #: Commit the local projections before each Command (else the driver calls ``flush``).
    flush_before_acting: bool = True
    #: Called before the local store commits: a driver that acknowledges Commands before the
    #: Group log is durable (write-behind) passes the log's flush, so a local store is never
    #: durable ahead of the log it was built from.
    durable_first: Callable[[], None] | None = None
    inbox: Inbox = field(default_factory=Inbox)
    replica: AuthorityState = field(init=False)
    sent: int = 0
    accepted: int = 0
    rejected: int = 0
    #: What opening on an existing local store found (None without a store).
    restored: Restored | None = field(default=None, init=False)
    #: Refused Intents (key → the WorkItem it concerns, or ""): not retried until an Event
    #: about that WorkItem, or one about no WorkItem (a Mission, Membership or Session change),
    #: is released, so a policy that keeps wanting a refused Command does not spin on the
    #: traffic of other WorkItems.
    _refused: dict[str, str] = field(default_factory=dict)
    #: When the driver asked the policy to decide (distinct virtual instants, with the number of
    #: asks up to each) and when it last wanted something about each WorkItem (or Group, for a
    #: Command about none): so a stall report can say that a policy was asked while work waited
    #: for it and did nothing (``asks_since``, ``acted_on``; issue 22.3, never silently idle).
    _ask_times: array[int] = field(default_factory=lambda: array("q"), init=False)
    _ask_counts: array[int] = field(default_factory=lambda: array("q"), init=False)
    acted_on: dict[str, int] = field(default_factory=dict, init=False)
    _position: int = field(default=0, init=False)
    _pending: list[InboxRow] = field(default_factory=list, init=False)
    _moved: set[str] = field(default_factory=set, init=False)
    _queues: dict[str, tuple[QueueRow, ...]] = field(default_factory=dict, init=False)
    #: The per-Group Cursors as last committed to the local store (MWP-WRK-029/030).
    _durable: dict[str, int] = field(default_factory=dict, init=False)
    #: Accepted Commands whose Events have not reached this agent yet (at-least-once delivery
    #: may be late or out of order): the agent does not decide again until they have, so it
    #: never acts on a view that lacks its own accepted writes.
    _awaiting: dict[str, set[str]] = field(default_factory=dict, init=False)
    #: ... and the outcomes the policy learns once they have arrived.
    _deferred: dict[str, tuple[Intent, Outcome, int]] = field(default_factory=dict, init=False)
    #: Bumped by whatever may change what the policy decides: a released Event, an outcome,
    #: a driver serving its slots (``changed``).
    _generation: int = field(default=0, init=False)
    #: ``(now, generation, policy)`` when the policy last decided it wants nothing (see
    #: ``intents``).
    _idle: tuple[int, int, Policy] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.replica = AuthorityState(
            registry=self.org.registry(), organization_id=self.org.organization_id
        )
        if self.local is not None:
            self._restore(self.local)

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

    # ------------------------------------------------------------------ delivery

    def deliver(self, events: Iterable[str | bytes | dict[str, Any]]) -> int:
        """Receive Events (any order, duplicates allowed), each as its canonical JSON text (as
        the Group log holds it) or as a document; fold the releasable ones. Returns how many
        were released."""
        released = 0
        for received in events:
            event, text = _own_copy(received)
            for ready in self.inbox.offer(event):
                # Released at once (the usual case) it comes with its text; one released later
                # from the out-of-order buffer is written out again.
                self._fold(ready, text if ready is event else None)
                released += 1
                if self._awaiting:
                    self._arrived(ready["eventId"])
                if self._refused:
                    self._reconsider(ready)
        self.replica.take_touched()
        for key in [k for k in self._deferred if k not in self._awaiting]:
            intent, outcome, at_us = self._deferred.pop(key)
            self.policy.on_outcome(self.view, intent, outcome, at_us)
            self.changed()
        if released:
            self.changed()
        return released

    def _reconsider(self, event: dict[str, Any]) -> None:
        """Let refused Intents be tried again once something they may depend on changed."""
        payload = event.get("payload")
        about = payload.get("workItemId") if isinstance(payload, dict) else None
        if not about:
            self._refused.clear()
            return
        for key in [k for k, wid in self._refused.items() if wid == about]:
            del self._refused[key]

    def _arrived(self, event_id: str) -> None:
        for key in list(self._awaiting):
            self._awaiting[key].discard(event_id)
            if not self._awaiting[key]:
                del self._awaiting[key]

    def _released(self, record: EventRecord) -> bool:
        group = record.group_id
        if group is None:
            return record.event_id in self.inbox.seen
        return int(record.sequence or 0) <= self.inbox.cursors.get(group, 0)

    def _fold(self, event: dict[str, Any], text: str | None) -> None:
        evolve(self.replica, event)
        self.policy.observe(self.view, event)
        if self.local is None:
            return
        group = event.get("groupId") or ORG
        self._position += 1
        self._moved.add(group)
        self._pending.append(
            InboxRow(
                position=self._position,
                group_id=group,
                sequence=int(event["sequence"]) if group != ORG else self.inbox.cursors[ORG],
                event_id=event["eventId"],
                kind=event["kind"],
                document=text if text is not None else canonicalize(event).decode(),
            )
        )

    def work_queues(self) -> dict[str, tuple[QueueRow, ...]]:
        """This agent's per-Group work queues as its replica shows them now."""
        return work_queues(self.replica, self.member.id)

    def flush(self) -> None:
        """Commit the Events released since the last commit, with the Cursors they moved and
        the queue rows they changed, in one transaction (no-op without a store)."""
        if self.local is None or not self._pending:
            return
        if self.durable_first is not None:
            self.durable_first()
        queues = self.work_queues()
        changed = {
            g: queues.get(g, ())
            for g in set(queues) | set(self._queues)
            if queues.get(g, ()) != self._queues.get(g, ())
        }
        self.local.commit(
            LocalBatch(
                events=tuple(self._pending),
                cursors={g: self.inbox.cursors[g] for g in sorted(self._moved)},
                queues=changed,
            )
        )
        self._durable.update({g: self.inbox.cursors[g] for g in self._moved})
        self._pending = []
        self._moved = set()
        self._queues = queues

    def durable_cursors(self) -> dict[str, int]:
        """The per-Group Cursors as durably stored (without a local store, as processed):
        what an ``ACK`` reports and a reconnecting ``SUBSCRIBE`` replays after. Never past a
        gap: the inbox moves a Cursor only over contiguous sequences."""
        source = self._durable if self.local is not None else self.inbox.cursors
        return {g: c for g, c in source.items() if g != ORG}

    def close(self, *, flush: bool = True) -> None:
        """Flush (unless told not to, as a crash would not) and close the local store; the
        runtime keeps nothing durable afterwards."""
        if self.local is None:
            return
        if flush:
            self.flush()
        self.local.close()
        self.local = None
        self._pending = []

    def _restore(self, local: LocalStore) -> None:
        snapshot = local.load()
        for row in snapshot.events:
            event = parse_strict(row.document)
            evolve(self.replica, event)
            self.policy.observe(self.view, event)
        self.replica.take_touched()
        self.inbox.restore(
            snapshot.cursors, (r.event_id for r in snapshot.events if r.group_id == ORG)
        )
        self._position = snapshot.events[-1].position if snapshot.events else 0
        self._durable = dict(snapshot.cursors)
        rebuilt = self.work_queues()
        self.restored = Restored(
            events=len(snapshot.events), stored_queues=snapshot.queues, rebuilt_queues=rebuilt
        )
        if rebuilt != snapshot.queues:
            # The projection is not the truth: replay wins and the store is corrected.
            local.commit(
                LocalBatch(
                    queues={g: rebuilt.get(g, ()) for g in set(rebuilt) | set(snapshot.queues)}
                )
            )
        self._queues = rebuilt

    # ------------------------------------------------------------------ acting

    def intents(self, now_us: int, *, skip_idle: bool = False) -> list[Intent]:
        """What the policy wants to do now (minus Intents refused since the last new Event);
        nothing while Events of its own accepted Commands are still on their way.

        With ``skip_idle`` (step mode), a policy that wanted nothing is not asked again at the
        same instant until something it decides from changed: a released Event, an outcome, or
        what a driver reports with ``changed``. A decision that wants nothing only settles the
        policy's own books (forgotten slots, the Scheduler's queues), so asking again would
        answer nothing again. Whoever changes the policy's state by other means (a test
        setting a slot's fields) asks without ``skip_idle`` or calls ``changed``."""
        if self._awaiting:
            return []  # read your own writes first: the view lacks Events it caused
        idle = self._idle
        policy = self.policy
        if (
            skip_idle
            and idle is not None
            and idle[0] == now_us
            and idle[1] == self._generation
            and idle[2] is policy
        ):
            return []
        decided = policy.decide(self.view, now_us)
        self._idle = None if decided else (now_us, self._generation, policy)
        wanted = [i for i in decided if _key(i) not in self._refused]
        total = (self._ask_counts[-1] if self._ask_counts else 0) + 1
        if self._ask_times and self._ask_times[-1] == now_us:
            self._ask_counts[-1] = total
        else:
            self._ask_times.append(now_us)
            self._ask_counts.append(total)
        for intent in wanted:
            about = intent.payload.get("workItemId") or intent.group or ""
            self.acted_on[str(about)] = now_us
        return wanted

    def changed(self) -> int:
        """Note that something the policy decides from changed besides released Events and
        outcomes (a driver granted a slot a token or answered its external call): the next
        ``intents`` asks the policy again. Returns the new generation."""
        self._generation += 1
        return self._generation

    def asks_since(self, since_us: int) -> int:
        """How many times the policy was asked to decide at or after ``since_us`` (an idle
        policy not asked again at the same instant, ``skip_idle``, counts once)."""
        if not self._ask_counts:
            return 0
        before = bisect_left(self._ask_times, since_us)
        return self._ask_counts[-1] - (self._ask_counts[before - 1] if before else 0)

    def next_wakeup(self, now_us: int) -> int | None:
        """When the policy next wants to act."""
        return self.policy.next_wakeup(self.view, now_us)

    def command(self, intent: Intent, issued_at: str) -> bytes:
        """Sign ``intent`` as this agent, with the epochs its own replica knows.

        What the agent knows is made durable first (``flush``), unless the driver commits at
        other points (``flush_before_acting``).
        """
        if self.flush_before_acting or len(self._pending) >= MAX_PENDING:
            self.flush()
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
        count = str(self.sent) if not self.incarnation else f"{self.incarnation}.{self.sent}"
        fields["action_id"] = derived_uuid(
            self.org.organization_id, self.member.id, intent.kind, issued_at, count
        )
        fields.update(intent.overrides)
        return self.org.command(self.member, intent.kind, intent.payload, **fields)

    def outcome(self, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Tell the policy what became of its Intent: at once, or, for an accepted Command whose
        Events have not reached this agent yet, as soon as they have (so the policy reads its
        own writes)."""
        self.changed()
        if outcome.ok:
            self.accepted += 1
            records = getattr(outcome, "events", ())
            waiting = {r.event_id for r in records if not self._released(r)}
            if waiting:
                self._awaiting[_key(intent)] = waiting
                self._deferred[_key(intent)] = (intent, outcome, now_us)
                return
        else:
            self.rejected += 1
            self._refused[_key(intent)] = str(intent.payload.get("workItemId", ""))
        self.policy.on_outcome(self.view, intent, outcome, now_us)


def _own_copy(received: str | bytes | dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A delivered Event as this runtime's own document, with its canonical JSON text (a
    document is written out first: the text is what the local store keeps)."""
    if isinstance(received, dict):
        text = canonicalize(received).decode()
    elif isinstance(received, bytes):
        text = received.decode("utf-8")
    else:
        text = received
    event: dict[str, Any] = parse_strict(text)
    return event, text


def _key(intent: Intent) -> str:
    return f"{intent.kind}|{intent.group}|{intent.payload.get('workItemId', '')}|{intent.tag}"
