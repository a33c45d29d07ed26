"""The in-process delivery bus between the Group log and each agent (§16, §17).

There is no WebSocket/TLS transport in the sandbox: a *session* per subscriber stands in for
one authenticated connection multiplexing every Group, and the bus hands it the §17 frame
documents (``EVENT``, ``ERROR``, ``PING``) while the receiver answers with ``SUBSCRIBE`` and
``ACK`` frames. Delivery is at-least-once, with seeded fault injection:

* **duplicate**, **delay** and **reorder** of frames (reordering within and across Groups);
* **drop**: a Group ``EVENT`` frame is lost; the bus resends from the receiver's acknowledged
  Cursor once it has waited ``redeliver_after`` without progress (go-back-N);
* **disconnect windows**: the session's in-flight frames are lost; on reconnect the receiver
  sends ``SUBSCRIBE`` with its Cursors as ``afterSequence`` and the bus replays after them
  (duplicates of Events it had buffered included);
* **Group-service outage**: every session is down and nothing is delivered.

``ACK`` reports durable Cursors and only permits delivery clean-up (frames at or below a Cursor
are dropped from the session's queue); it never deletes history. The *online window* is bounded
(``online_window`` Events per Group): older Events are archived into a signed Group Snapshot, and
a session whose replay position is older than the retention point gets ``ERROR CURSOR_TOO_OLD``
with the snapshot reference (``snapshot(id)`` serves it). ``group_buffer`` bounds the frames a
session may have unacknowledged per Group: a noisy Group pauses with ``ERROR BACKPRESSURE``
(retry guidance in its details) while other Groups keep flowing, and ``frames_per_round``
serves the Groups round-robin. All randomness comes from one generator seeded by the caller,
and sessions are served in Agent-ID order, so step mode stays deterministic. No I/O.
"""

from __future__ import annotations

import random
from bisect import insort
from collections.abc import Callable, Collection, Sequence
from operator import attrgetter
from typing import Any

from ..protocol.documents import validate
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.jcs import canonicalize
from ..protocol.jsontext import parse_strict
from ..protocol.timestamps import format_utc
from . import frames
from .audience import Audience
from .config import DeliveryConfig, Window
from .session import ORG, BusStats, Flight, Receiver, Session
from .snapshots import SnapshotBundle


class DeliveryBus:
    """Sessions, the bounded online window, and fault injection.

    ``make_snapshot(group_id, events, created_at)`` signs a Group Snapshot (the Group Authority's
    key lives with the caller).
    """

    def __init__(
        self,
        config: DeliveryConfig,
        *,
        seed: int,
        organization_id: str,
        make_snapshot: Callable[[str, Sequence[dict[str, Any]], str], SnapshotBundle],
    ) -> None:
        self.config = config
        #: The scope of the frame IDs the bus derives (unique across sandboxes, §2).
        self.organization_id = organization_id
        self.rng = random.Random(f"{seed}:delivery")
        self.make_snapshot = make_snapshot
        self.sessions: dict[str, Session] = {}
        self.online: dict[str, dict[int, dict[str, Any]]] = {}
        #: The keys of ``online`` in order (Groups are served in Group-ID order; kept sorted as
        #: Groups appear rather than sorted on every feed).
        self._groups: list[str] = []
        self.latest: dict[str, int] = {}
        #: Events at or below the retention point leave the online window (archive: the
        #: snapshot's body; the Group log keeps everything).
        self.retention: dict[str, int] = {}
        self.archive: dict[str, list[dict[str, Any]]] = {}
        self.snapshots: dict[str, SnapshotBundle] = {}
        self.current_snapshot: dict[str, str] = {}
        self.org_events: list[dict[str, Any]] = []
        #: The canonical JSON text of every Event published, by Event ID: what an ``EVENT``
        #: frame hands its receiver, to parse into a copy of its own.
        self.texts: dict[str, str] = {}
        #: Every ACK received: (agent, Group, Cursor), what each session was handed, and every
        #: SUBSCRIBE received.
        self.acks: list[tuple[str, str, int]] = []
        self.handed: dict[str, dict[str, set[int]]] = {}
        self.subscriptions: list[tuple[str, dict[str, Any]]] = []
        #: Whose sessions get which Group's Events (its members only, from their visibility
        #: start).
        self.audience = Audience()
        self.stats = BusStats()
        self._order = 0
        self._attached = 0

    # ------------------------------------------------------------------ subscribers

    def attach(self, receiver: Receiver, now_us: int) -> Session:
        """Connect ``receiver`` (replacing an earlier session of the same Agent)."""
        self._attached += 1  # frame IDs stay unique across an Agent's successive sessions
        session = Session(
            receiver=receiver,
            ids=frames.FrameIds(self.organization_id, f"bus:{receiver.agent_id}:{self._attached}"),
            windows=self._windows_for(receiver.agent_id),
        )
        self.sessions[receiver.agent_id] = session
        self._subscribe(session, now_us)
        return session

    def _subscribe(self, session: Session, now_us: int) -> None:
        """A (re)connection: the receiver's ``SUBSCRIBE`` sets every replay position (a Group
        it does not list is replayed from the start once it is a member: the bus enforces
        Membership for every Group itself, §17.2, and says nothing of Groups it may not see)."""
        session.sent, session.acked, session.progress_us = {}, {}, {}
        session.paused.clear()
        session.awaiting_snapshot.clear()
        session.org_sent = 0
        frame = session.receiver.subscribe(now_us)
        if frame is not None:
            self.on_frame(session, frame, now_us)
        else:
            self._feed(session, now_us)

    def snapshot(self, snapshot_id: str) -> SnapshotBundle:
        """The signed Group Snapshot with this ID (what a ``CURSOR_TOO_OLD`` reference names)."""
        return self.snapshots[snapshot_id]

    # ------------------------------------------------------------------ publishing

    def publish(self, events: Sequence[str | dict[str, Any]], now_us: int) -> None:
        """Take newly committed Events (each its canonical JSON text, or a document) into the
        online window and queue them to sessions (with ``validate_frames``, each Event document
        is checked here, once for all its frames)."""
        for published in events:
            if isinstance(published, dict):
                event, text = published, canonicalize(published).decode()
            else:
                event, text = parse_strict(published), published
            self.texts[event["eventId"]] = text
            if self.config.validate_frames:
                validate("event", event)
            group = event.get("groupId")
            if group is None:
                self.org_events.append(event)
                continue
            sequence = int(event["sequence"])
            self.audience.note(event)
            if group not in self.online:
                self.online[group] = {}
                insort(self._groups, group)
            self.online[group][sequence] = event
            self.latest[group] = max(self.latest.get(group, 0), sequence)
            self.retention.setdefault(group, 0)
        self._retain(now_us)
        for agent in sorted(self.sessions):
            session = self.sessions[agent]
            if session.connected:
                self._feed(session, now_us)

    def _retain(self, now_us: int) -> None:
        window = self.config.online_window
        if window is None:
            return
        for group in self._groups:
            online = self.online[group]
            if len(online) < 2 * window:
                continue
            cut = self.latest[group] - window
            archived = self.archive.setdefault(group, [])
            for sequence in range(self.retention[group] + 1, cut + 1):
                archived.append(online.pop(sequence))
            self.retention[group] = cut

    def _feed(self, session: Session, now_us: int) -> None:
        """Queue what the session has not been handed yet: Organization Events first (Group
        Events may depend on them), then Group by Group."""
        while session.org_sent < len(self.org_events):
            self._send_event(session, ORG, 0, self.org_events[session.org_sent], now_us)
            session.org_sent += 1
        if session.sent == self.latest:
            # Every Group was handed through its latest Event (most rounds): nothing to queue,
            # none too old (a retention point never passes its Group's latest Event) and no
            # backpressure (only queuing meets it), so the loop below would change nothing.
            return
        agent = session.receiver.agent_id
        for group in self._groups:
            if group in session.paused or group in session.awaiting_snapshot:
                continue
            through = self._through(agent, group)
            if not through:
                continue  # not a member: none of the Group's Events, nor whether it exists
            # Nothing before the member's visibility start (§8): a late joiner starts there.
            after = max(session.sent.get(group, 0), self.audience.start(agent, group) - 1)
            if after < self.retention[group]:
                self._too_old(session, group, after, now_us)
                continue
            limit = self.config.group_buffer
            while after < through:
                if limit is not None and after - session.acked.get(group, 0) >= limit:
                    self._backpressure(session, group, now_us)
                    break
                after += 1
                self._send_event(session, group, after, self.online[group][after], now_us)
            session.sent[group] = after

    def _send_event(
        self, session: Session, group: str, sequence: int, event: dict[str, Any], now_us: int
    ) -> None:
        frame = frames.event(session.ids.next(), event)
        text = self.texts[event["eventId"]]
        config, rng = self.config, self.rng
        if group == ORG:
            # Organization Events have no sequence to restore their order by, and Group Events
            # may depend on them: they are never dropped, delayed or overtaken (duplicates are
            # harmless, the receiver drops them by Event ID).
            self._queue(session, group, sequence, frame, now_us, text)
            if config.duplicate and rng.random() < config.duplicate:
                self.stats.duplicates += 1
                self._queue(session, group, sequence, frame, now_us, text)
            return
        if config.drop and rng.random() < config.drop:
            self.stats.drops += 1
            return
        self._queue(session, group, sequence, frame, now_us + self._delay(), text)
        if config.duplicate and rng.random() < config.duplicate:
            self.stats.duplicates += 1
            self._queue(session, group, sequence, frame, now_us + self._delay(), text)

    def _delay(self) -> int:
        config = self.config
        if config.delay and self.rng.random() < config.delay:
            self.stats.delays += 1
            return self.rng.randint(1, config.max_delay_us)
        return 0

    def _queue(
        self,
        session: Session,
        group: str,
        sequence: int,
        frame: dict[str, Any],
        due_us: int,
        text: str | None = None,
    ) -> None:
        self._order += 1
        session.queue.append(Flight(due_us, self._order, group, sequence, frame, text))

    def _error(self, session: Session, group: str, problem: ProtocolError, now_us: int) -> None:
        frame = frames.error(session.ids.next(), problem, format_utc(now_us), group_id=group)
        self._queue(session, group, 0, frame, now_us)

    def _snapshot_at_retention(
        self, group: str, now_us: int, *, refused: str | None = None, start: int = 1
    ) -> SnapshotBundle:
        """The signed snapshot through the Group's retention point from sequence ``start`` (a
        member's visibility start: a late joiner's snapshot holds nothing from before it),
        made when first needed, and made anew when ``refused`` names the current one (a
        receiver could not verify it)."""
        key = group if start <= 1 else f"{group}@{start}"
        current = self.current_snapshot.get(key)
        if (
            current is not None
            and current != refused
            and self.snapshots[current].through_sequence == self.retention[group]
        ):
            return self.snapshots[current]
        events = [e for e in self.archive[group] if int(e["sequence"]) >= start]
        bundle = self.make_snapshot(group, events, format_utc(now_us))
        self.snapshots[bundle.snapshot["snapshotId"]] = bundle
        self.current_snapshot[key] = bundle.snapshot["snapshotId"]
        self.stats.snapshots += 1
        return bundle

    def _too_old(self, session: Session, group: str, after: int, now_us: int) -> None:
        # A session asking again from before the retention point did not restore the snapshot
        # it was named (it refused it): it gets one signed anew, never the same one forever.
        bundle = self._snapshot_at_retention(
            group,
            now_us,
            refused=session.snapshot_named.get(group),
            start=self.audience.start(session.receiver.agent_id, group),
        )
        session.snapshot_named[group] = bundle.snapshot["snapshotId"]
        retention = self.retention[group]
        self.stats.cursor_too_old += 1
        session.awaiting_snapshot.add(group)
        self._error(
            session,
            group,
            ProtocolError(
                ErrorCode.CURSOR_TOO_OLD,
                f"Your Cursor for this Group is {after}, but the online log starts after "
                f"sequence {retention}. Restore the signed snapshot named here (check its hash "
                f"and signature), then subscribe again after sequence "
                f"{bundle.through_sequence}.",
                details={"snapshot": bundle.reference(), "onlineFrom": retention + 1},
                rule="§16 an old Cursor is answered with a signed snapshot reference",
            ),
            now_us,
        )

    def _backpressure(self, session: Session, group: str, now_us: int) -> None:
        self.stats.backpressure += 1
        retry = self.config.retry_after_us
        session.paused[group] = now_us + retry
        limit = self.config.group_buffer
        self._error(
            session,
            group,
            ProtocolError(
                ErrorCode.BACKPRESSURE,
                f"This Group has {limit} frames you have not acknowledged yet; its delivery is "
                f"paused for {retry // 1000} ms. Other Groups keep flowing. Acknowledge what "
                "you have processed and delivery resumes after your Cursor.",
                details={"retryAfterMs": retry // 1000, "limit": limit},
                rule="§17.3 bounded buffering and per-Group backpressure",
            ),
            now_us,
        )

    # ------------------------------------------------------------------ delivering

    def outage(self, now_us: int) -> bool:
        """Whether the Group service is unreachable at ``now_us``."""
        return self.config.outage_at(now_us) is not None

    def _windows_for(self, agent: str) -> tuple[Window, ...]:
        """The windows that take ``agent``'s session down: every Group-service outage, then
        the disconnects naming the Agent (as the mission file does) or nobody in particular.
        The configuration is fixed for the bus's life, so a session's windows are found once
        (at ``attach``) rather than on every delivery round."""
        name = agent.rsplit(":", 1)[-1]
        config = self.config
        mine = tuple(w for w in config.disconnects if w.agent in (None, name, agent))
        return (*config.outages, *mine)

    @staticmethod
    def _down(session: Session, now_us: int) -> bool:
        return any(window.contains(now_us) for window in session.windows)

    def pump(self, now_us: int) -> int:
        """One delivery round for every session, in Agent-ID order (``pump_session``)."""
        return sum(self.pump_session(agent, now_us) for agent in sorted(self.sessions))

    def pump_session(self, agent: str, now_us: int) -> int:
        """One delivery round for ``agent``'s session: connection changes, redelivery, then
        every due frame (up to ``frames_per_round``); the receiver acknowledges afterwards.
        Only this session's receiver is called, so a driver may pump each session from the
        thread that owns its receiver (holding one lock around the bus)."""
        session = self.sessions[agent]
        if self._down(session, now_us):
            if session.connected:
                session.connected = False
                session.queue.clear()  # what was in flight on the connection is lost
                session.paused.clear()
                session.awaiting_snapshot.clear()
                self.stats.disconnects += 1
            return 0
        if not session.connected:
            session.connected = True
            self.stats.reconnects += 1
            self._subscribe(session, now_us)
        self._redeliver(session, now_us)
        self._feed(session, now_us)
        cap = self.config.frames_per_round
        delivered = 0
        while cap is None or delivered < cap:
            # answers (a SUBSCRIBE after a restored snapshot) may queue frames due now
            count = self._deliver(session, now_us, None if cap is None else cap - delivered)
            if not count:
                break
            delivered += count
        return delivered

    def _redelivery_at(
        self, session: Session, group: str, in_flight: Collection[str]
    ) -> int | None:
        """When the bus resends a Group from the acknowledged Cursor (None: nothing to resend,
        or frames of the Group are still in flight, or it is paused or awaiting a snapshot).
        ``in_flight``: the Groups of the session's queued frames (``_in_flight``)."""
        if not session.connected or group in session.paused:
            return None
        if group in session.awaiting_snapshot or group not in session.progress_us:
            return None
        through = self._through(session.receiver.agent_id, group)
        if session.acked.get(group, 0) >= through or not session.sent.get(group, 0):
            return None
        if group in in_flight:
            return None
        return session.progress_us[group] + self.config.redeliver_after_us

    @staticmethod
    def _in_flight(session: Session) -> set[str]:
        """The Groups (and ``ORG``) of the frames queued on the session."""
        return {f.group for f in session.queue}

    def _redeliver(self, session: Session, now_us: int) -> None:
        paused = session.paused
        if paused:
            for group in [g for g, until in paused.items() if until <= now_us]:
                del paused[group]
        for group in self.latest:
            session.progress_us.setdefault(group, now_us)
        if session.acked == self.latest:
            return  # every Group acknowledged through its latest Event: nothing to resend
        # Redelivery changes only replay positions and times, never the queue: the Groups in
        # flight are found once for the round.
        in_flight = self._in_flight(session)
        for group in self.latest:
            at = self._redelivery_at(session, group, in_flight)
            if at is not None and at <= now_us:
                self.stats.redeliveries += 1
                session.sent[group] = session.acked.get(group, 0)
                session.progress_us[group] = now_us

    def _deliver(self, session: Session, now_us: int, cap: int | None) -> int:
        if not session.queue:
            return 0
        due = [f for f in session.queue if f.due_us <= now_us]
        if not due:
            return 0
        due.sort(key=_DELIVERY_ORDER)
        if self.config.reorder and len(due) > 1 and self.rng.random() < self.config.reorder:
            self.stats.reorders += 1
            due = self._shuffle(due)
        if cap is not None and len(due) > cap:
            due = _round_robin(due)[:cap]
        if len(due) == len(session.queue):
            session.queue = []  # every queued frame was due and taken (the usual round)
        else:
            taken = {id(f) for f in due}
            session.queue = [f for f in session.queue if id(f) not in taken]
        receiver = session.receiver
        handed = self.handed.setdefault(receiver.agent_id, {})
        for flight in due:
            frame = flight.frame
            if self.config.validate_frames:
                frames.check_envelope(frame)
            kind = frame["frameType"]
            self.stats.frames[kind] = self.stats.frames.get(kind, 0) + 1
            if kind == "EVENT" and flight.group != ORG:
                handed.setdefault(flight.group, set()).add(flight.sequence)
            for reply in receiver.receive(frame, now_us, flight.text):
                self.on_frame(session, reply, now_us)
        ack = receiver.acknowledge(now_us)
        if ack is not None:
            self.on_frame(session, ack, now_us)
        return len(due)

    def _shuffle(self, due: list[Flight]) -> list[Flight]:
        """Reorder Group frames within and across Groups; Organization frames stay barriers
        (nothing queued after one overtakes it)."""
        out: list[Flight] = []
        segment: list[Flight] = []
        for flight in due:
            if flight.group == ORG:
                self.rng.shuffle(segment)
                out += segment
                out.append(flight)
                segment = []
            else:
                segment.append(flight)
        self.rng.shuffle(segment)
        return out + segment

    # ------------------------------------------------------------------ from receivers

    def on_frame(self, session: Session, frame: dict[str, Any], now_us: int) -> None:
        """Handle a ``SUBSCRIBE``, ``ACK`` or ``PING`` frame from the session's receiver."""
        if self.config.validate_frames:
            frames.check(frame)
        kind = frame["frameType"]
        if kind == "SUBSCRIBE":
            self.subscriptions.append((session.receiver.agent_id, frame))
            for entry in frame["groups"]:
                group = entry["groupId"]
                session.sent[group] = session.acked[group] = int(entry["afterSequence"])
                session.progress_us[group] = now_us
                session.awaiting_snapshot.discard(group)
                session.paused.pop(group, None)
            # Organization Events carry no sequence: all of them are replayed, and the
            # receiver drops the ones it has (by Event ID).
            session.org_sent = 0
            self._feed(session, now_us)
        elif kind == "ACK":
            agent = session.receiver.agent_id
            for group, cursor in frames.acknowledged(frame).items():
                self.acks.append((agent, group, cursor))
                if cursor > session.acked.get(group, 0):
                    session.acked[group] = cursor
                    session.progress_us[group] = now_us
                    session.sent[group] = max(session.sent.get(group, 0), cursor)
            # Delivery clean-up only: queued frames the Cursors cover are no longer needed.
            session.queue = [
                f
                for f in session.queue
                if f.group == ORG or f.sequence == 0 or f.sequence > session.acked.get(f.group, 0)
            ]
        elif kind == "PING" and "replyToNonce" not in frame:
            reply = frames.ping(
                session.ids.next(),
                frames.nonce_for("bus", frame["nonce"]),
                format_utc(now_us),
                reply_to=frame["nonce"],
            )
            self._queue(session, ORG, 0, reply, now_us)

    def next_wakeup(self, now_us: int, agent: str | None = None) -> int | None:
        """The next instant the bus has something to do (a due frame, a window edge, a
        redelivery or a resumption), for every session or only ``agent``'s."""
        times: list[int] = []
        sessions = self.sessions.values() if agent is None else [self.sessions[agent]]
        for session in sessions:
            times += [max(f.due_us, now_us + 1) for f in session.queue if session.connected]
            times += list(session.paused.values())
            in_flight = self._in_flight(session)
            for group in self.latest:
                at = self._redelivery_at(session, group, in_flight)
                if at is not None:
                    times.append(max(at, now_us + 1))  # one that is already due runs next
        for w in (*self.config.disconnects, *self.config.outages):
            times += [w.at_us, w.until_us]
        future = [t for t in times if t > now_us]
        return min(future) if future else None

    def settled(self) -> bool:
        """Whether every session is connected, has nothing in flight, and has acknowledged the
        latest Event of every Group."""
        return all(
            s.connected
            and not s.queue
            and s.org_sent == len(self.org_events)
            and all(s.acked.get(g, 0) >= self._through(s.receiver.agent_id, g) for g in self.latest)
            for s in self.sessions.values()
        )

    def _through(self, agent: str, group: str) -> int:
        """The highest sequence of ``group`` the session of ``agent`` may be handed."""
        return self.audience.through(agent, group, self.latest[group])

    def pending(self) -> int:
        """Frames queued but not yet delivered, over all sessions."""
        return sum(len(s.queue) for s in self.sessions.values())


#: Due frames go out by due time, then in the order they were queued.
_DELIVERY_ORDER = attrgetter("due_us", "order")


def _round_robin(flights: list[Flight]) -> list[Flight]:
    """Interleave flights Group by Group (keeping each Group's order) so no Group starves;
    Organization frames go first."""
    by_group: dict[str, list[Flight]] = {ORG: []}
    for f in flights:
        by_group.setdefault(f.group, []).append(f)
    out: list[Flight] = by_group.pop(ORG)
    lanes = [by_group[g] for g in by_group]
    while any(lanes):
        for lane in lanes:
            if lane:
                out.append(lane.pop(0))
    return out


__all__ = ["ORG", "BusStats", "DeliveryBus", "Receiver", "Session"]
