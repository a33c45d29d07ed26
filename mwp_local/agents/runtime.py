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

A Group's Events reach a member only from its Membership's visibility start (§8,
``delivery.audience``), so an agent granted a Membership late *joins* the Group there: its
Cursor starts just below the start, and its replica is seeded from the Context Package the
Membership (or, for a WorkItem authorized before a member's start, the offer) names: the Events
it cites (the Mission's own, the WorkItem's), fetched through the isolation gate
(``fetch_context``: ``fetch_cited_events`` at the Authority) and checked (cited by the package,
of its Group, signed), then the delivered tail is folded on top. In such a *partial* Group an
Event about something the replica never learned (another WorkItem authorized before the start)
changes nothing in it (``unfolded`` counts them): the replica is exact for what the package
cites and for everything from the start on, which is what the agent acts on.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..artifacts.context_packages import cited_event_ids
from ..authority.evolve import ReplayError, evolve
from ..authority.organization import Member, Organization
from ..authority.pipeline import Outcome
from ..authority.records import EventRecord
from ..authority.state import AuthorityState
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.inbox import ORG, Inbox
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.signing import profile_for, verify_parsed
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
    #: The Events a Context Package cites, fetched through the isolation gate (the driver
    #: wires ``fetch_cited_events`` at the Authority for this agent; it raises the gate's
    #: ``ProtocolError`` when it refuses): what a late joiner learns of what lies before its
    #: visibility start. None: it starts from its grant with nothing more.
    fetch_context: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
    inbox: Inbox = field(default_factory=Inbox)
    replica: AuthorityState = field(init=False)
    #: Events of a partial Group (joined late) the replica had nothing to fold them into.
    unfolded: int = 0
    #: The Context Packages this agent started from: (package ID, cited Events fetched) ...
    seeded: list[tuple[str, int]] = field(default_factory=list)
    #: ... and the ones refused, by the gate or by this agent's own checks of what the gate
    #: returned (package ID, section-19 code): nothing of them was folded.
    seed_refused: list[tuple[str, str]] = field(default_factory=list)
    #: Groups joined after their start (the replica is a partial view there) → the sequences
    #: folded into it (seeded from packages, or delivered and foldable): a package citing an
    #: Event delivered before the replica could fold it (about a WorkItem it learns of later)
    #: folds it then.
    _partial: dict[str, set[int]] = field(default_factory=dict, init=False)
    #: ... and the IDs of those Events (a package citing only them needs no fetch).
    _folded_ids: set[str] = field(default_factory=set, init=False)
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
    def partial_groups(self) -> frozenset[str]:
        """The Groups this agent joined after their start (its replica is a partial view
        there, seeded from Context Packages)."""
        return frozenset(self._partial)

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
            self._join(event)
            for ready in self.inbox.offer(event):
                self._seed_for(ready)
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

    # ------------------------------------------------------------------ joining late

    def _join(self, event: dict[str, Any]) -> None:
        """A Membership granted to this agent whose visibility starts past its Cursor: the
        Group starts there (nothing before the start is delivered, §8)."""
        group = event.get("groupId")
        if group is None or event.get("kind") != "membership.changed":
            return
        doc = event["payload"]["membership"]
        if doc["member"]["id"] != self.member.id or doc["state"] == "ended":
            return
        cursor = self.inbox.cursors.get(group, 0)
        start = min(int(doc.get("visibilityStartSequence") or 1), int(event["sequence"]))
        if int(event["sequence"]) <= cursor or start <= cursor + 1:
            return  # delivered contiguously (or a duplicate)
        held = self.replica.memberships.get((group, self.member.id))
        if cursor and (held is None or held.state != "ended"):
            # Receiving the Group already (from before this start, as a bench may hand it):
            # a gap here is one to wait for, never one to jump.
            return
        self._partial.setdefault(group, set())
        self.inbox.start(group, start - 1)
        # Seed now, before anything from the start is released (the start may lie before
        # the grant: a contract revision of the same Command).
        package = event["payload"].get("contextPackage")
        if isinstance(package, dict):
            self._seed(group, package)

    def _seed_for(self, event: dict[str, Any]) -> None:
        """Before folding a grant or an offer to this agent in a partial Group: seed the
        replica from the Context Package it names (once per package)."""
        group = event.get("groupId")
        if group not in self._partial or event.get("kind") not in _NAMING_PACKAGES:
            return
        payload = event["payload"]
        package = payload.get("contextPackage")
        if not isinstance(package, dict):
            return
        if event["kind"] == "membership.changed":
            if payload["membership"]["member"]["id"] != self.member.id:
                return
        elif self.member.id not in {o["agentId"] for o in payload["offers"]}:
            return
        self._seed(group, package)

    def _seed(self, group: str, package: dict[str, Any]) -> None:
        if self.fetch_context is None or package["groupId"] != group:
            return
        if any(known == package["contextPackageId"] for known, _ in self.seeded):
            return  # the same package again (a Membership change naming it)
        if set(cited_event_ids(package)) <= self._folded_ids:
            return  # everything it cites is folded already: nothing to fetch
        try:
            fetched = self.fetch_context(package)
        except ProtocolError as refused:
            self.seed_refused.append((package["contextPackageId"], refused.code.value))
            return
        cited = set(cited_event_ids(package))
        profile = profile_for("event")
        try:
            for event in fetched:
                # The gate is the Authority's, yet what enters the replica is checked here
                # too, all of it before any is folded: one bad Event and none is.
                if event.get("groupId") != group or event["eventId"] not in cited:
                    raise ProtocolError(
                        ErrorCode.PROTOCOL_VIOLATION,
                        f"Event {event['eventId']} is not one the Context Package "
                        f"{package['contextPackageId']} cites in Group {group}.",
                    )
                verify_parsed(profile, event, self.replica.registry)
        except ProtocolError as bad:
            self.seed_refused.append((package["contextPackageId"], bad.code.value))
            return
        held = self._partial[group]
        mine = sorted(
            (e for e in fetched if int(e["sequence"]) not in held), key=lambda e: e["sequence"]
        )
        for event in mine:
            self._fold(parse_strict(canonicalize(event).decode()), None)
        self.seeded.append((package["contextPackageId"], len(mine)))

    def _apply(self, event: dict[str, Any]) -> None:
        """Fold ``event`` into the replica and tell the policy; in a partial Group an Event
        about what the replica never learned changes nothing (``unfolded``)."""
        group = event.get("groupId")
        held = self._partial.get(group) if group is not None else None
        if held is None:
            evolve(self.replica, event)
            self.policy.observe(self.view, event)
            return
        if not self._foldable(event):
            self.unfolded += 1
            return
        try:
            evolve(self.replica, event)
        except (ReplayError, KeyError):
            self.unfolded += 1
            return
        held.add(int(event["sequence"]))
        self._folded_ids.add(event["eventId"])
        self.policy.observe(self.view, event)

    def _foldable(self, event: dict[str, Any]) -> bool:
        state = self.replica
        if event["kind"] != "mission.created" and event["groupId"] not in state.groups:
            return False
        payload = event["payload"]
        wid = event.get("workItemId") or (
            payload.get("workItemId") if isinstance(payload, dict) else None
        )
        return wid is None or event["kind"] == "work.authorized" or wid in state.work_items

    def _fold(self, event: dict[str, Any], text: str | None) -> None:
        self._apply(event)
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
        # A Group whose stored Events do not run from 1 to its Cursor was joined late.
        stored: dict[str, set[int]] = {}
        for row in snapshot.events:
            if row.group_id != ORG:
                stored.setdefault(row.group_id, set()).add(row.sequence)
        for group, sequences in stored.items():
            if sequences != set(range(1, snapshot.cursors.get(group, 0) + 1)):
                self._partial[group] = set()
        for row in snapshot.events:
            self._apply(parse_strict(row.document))
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


#: Event kinds that may name a Context Package for this agent.
_NAMING_PACKAGES = frozenset({"membership.changed", "work.offer.created"})


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
