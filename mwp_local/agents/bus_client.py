"""The receiving end of a bus session: an agent runtime behind the §17 frames (§16).

``BusClient`` takes ``EVENT`` frames into the runtime's per-Group inbox (which deduplicates by
Event ID, routes by Group, buffers out-of-order Events and moves each Cursor only over
contiguous sequences), commits what they produced together with the Cursors in one local
transaction, and then acknowledges the *durable* Cursors. It answers a ``PING`` with a ``PING``
echoing the nonce, records ``BACKPRESSURE``, and on ``CURSOR_TOO_OLD`` fetches the signed Group
Snapshot the error names, verifies it (reference hash, Group Authority signature, ``stateHash``,
Event IDs and signatures), folds its Events and subscribes again after the snapshot sequence. A
snapshot that fails verification restores nothing and is recorded with its section-19 code;
the client then subscribes again from its durable Cursor, so the bus names a snapshot signed
anew (MWP-WRK-030), and after ``MAX_SNAPSHOT_REFUSALS`` in a row it marks the Group ``stuck``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..delivery import frames
from ..delivery.snapshots import SnapshotBundle, verify_snapshot
from ..protocol.errors import ProtocolError
from ..protocol.timestamps import format_utc
from .runtime import AgentRuntime

#: Snapshots a client refuses in a row for one Group before it stops asking.
MAX_SNAPSHOT_REFUSALS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class Restoration:
    """One snapshot restored (or refused) after ``CURSOR_TOO_OLD``."""

    group_id: str
    snapshot_id: str
    through_sequence: int
    events: int
    #: The section-19 code when verification refused the snapshot.
    refused: str | None = None


@dataclass
class BusClient:
    """A runtime's side of the bus."""

    runtime: AgentRuntime
    fetch: Callable[[str], SnapshotBundle]
    ids: frames.FrameIds = field(init=False)
    backpressure: list[dict[str, Any]] = field(default_factory=list)
    restorations: list[Restoration] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    #: Groups whose snapshots were refused ``MAX_SNAPSHOT_REFUSALS`` times in a row: the
    #: agent is behind there until one verifies (a run with such an agent is not a success).
    stuck: set[str] = field(default_factory=set)
    _refusals: dict[str, int] = field(default_factory=dict)
    _last_ack: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ids = frames.FrameIds(
            self.runtime.member.organization_id,
            f"client:{self.runtime.member.id}:{self.runtime.incarnation}",
        )

    @property
    def agent_id(self) -> str:
        """The Agent (or human) this session belongs to."""
        return self.runtime.member.id

    def receive(
        self, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        """Take one frame; return the frames that answer it. The runtime folds its own copy of
        an ``EVENT`` frame's Event, parsed from ``event_text`` when the bus sent it."""
        kind = frame["frameType"]
        if kind == "EVENT":
            self.runtime.deliver([frame["event"] if event_text is None else event_text])
            return []
        if kind == "PING" and "replyToNonce" not in frame:
            nonce = frames.nonce_for(self.agent_id, frame["nonce"])
            return [
                frames.ping(self.ids.next(), nonce, format_utc(now_us), reply_to=frame["nonce"])
            ]
        if kind != "ERROR":
            return []
        error = frame["error"]
        if error["code"] == "BACKPRESSURE":
            self.backpressure.append(error)
            return []
        if error["code"] == "CURSOR_TOO_OLD":
            return self._restore(error["details"]["snapshot"], now_us)
        self.errors.append(error)
        return []

    def _restore(self, reference: dict[str, Any], now_us: int) -> list[dict[str, Any]]:
        group = reference["groupId"]
        bundle = self.fetch(reference["snapshotId"])
        try:
            events = verify_snapshot(bundle, reference, self.runtime.replica.registry)
        except ProtocolError as problem:
            self.restorations.append(
                Restoration(
                    group_id=group,
                    snapshot_id=reference["snapshotId"],
                    through_sequence=int(reference["throughSequence"]),
                    events=0,
                    refused=problem.code.value,
                )
            )
            # Ask again from the durable Cursor (the bus then signs a snapshot anew), a few
            # times; after that the agent stays behind, and says so (``stuck``).
            refusals = self._refusals[group] = self._refusals.get(group, 0) + 1
            if refusals > MAX_SNAPSHOT_REFUSALS:
                self.stuck.add(group)
                return []
            after = self.runtime.durable_cursors().get(group, 0)
            return [frames.subscribe(self.ids.next(), self._subscription(), {group: after})]
        self._refusals.pop(group, None)
        self.stuck.discard(group)
        released = self.runtime.deliver(events)
        self.runtime.flush()
        self.restorations.append(
            Restoration(
                group_id=group,
                snapshot_id=reference["snapshotId"],
                through_sequence=bundle.through_sequence,
                events=released,
            )
        )
        after = self.runtime.inbox.cursors.get(group, 0)
        return [frames.subscribe(self.ids.next(), self._subscription(), {group: after})]

    def _subscription(self) -> str:
        return f"urn:mwp-local:subscription:{self.runtime.name}:{self.runtime.incarnation}"

    def acknowledge(self, now_us: int) -> dict[str, Any] | None:
        """Commit what was released, then ``ACK`` the durable Cursors that moved."""
        self.runtime.flush()
        cursors = self.runtime.durable_cursors()
        moved = {g: c for g, c in cursors.items() if c > self._last_ack.get(g, 0)}
        if not moved:
            return None
        self._last_ack.update(moved)
        return frames.ack(self.ids.next(), moved, format_utc(now_us))

    def subscribe(self, now_us: int) -> dict[str, Any] | None:
        """``SUBSCRIBE`` after the durable Cursors (None before the first Group Event)."""
        cursors = {g: c for g, c in self.runtime.durable_cursors().items() if c > 0}
        self._last_ack = dict(cursors)
        if not cursors:
            return None
        return frames.subscribe(self.ids.next(), self._subscription(), cursors)


__all__ = ["MAX_SNAPSHOT_REFUSALS", "BusClient", "Restoration"]
