"""The bus side of one subscriber's connection: its replay positions, acknowledged Cursors,
paused Groups, in-flight frames and the windows that take it down, and the receiver protocol
(``client.BusClient``); plus the bus's counters. Plain data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from . import frames
from .config import Window

#: The queue key of Organization-scoped Events (they have no Group and no sequence).
ORG = "__organization__"


class Receiver(Protocol):
    """The receiving end of a session (``mwp_local.agents.bus_client.BusClient``)."""

    @property
    def agent_id(self) -> str:
        """The Agent (or human) the session belongs to."""
        ...

    def receive(
        self, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        """Take one frame; return the frames it answers with (``SUBSCRIBE``, ``PING``). With an
        ``EVENT`` frame comes ``event_text``, the Event's canonical JSON text: the bytes the
        frame carries on a real connection, which the receiver parses into its own copy (the
        frame's ``event`` is the bus's, to read and never to keep)."""
        ...

    def acknowledge(self, now_us: int) -> dict[str, Any] | None:
        """An ``ACK`` of the durable Cursors, or None when there is nothing to report."""
        ...

    def subscribe(self, now_us: int) -> dict[str, Any] | None:
        """A ``SUBSCRIBE`` frame with the receiver's Cursors (None when it has none yet)."""
        ...


@dataclass(slots=True)
class Flight:
    due_us: int
    order: int
    group: str
    sequence: int
    frame: dict[str, Any]
    #: The canonical JSON text of an ``EVENT`` frame's Event (None for other frames).
    text: str | None = None


@dataclass
class Session:
    """The bus side of one subscriber's connection."""

    receiver: Receiver
    #: The IDs of the frames the bus sends on this session (its Organization's scope).
    ids: frames.FrameIds
    connected: bool = True
    #: Highest sequence handed to the transport, and highest acknowledged, per Group.
    sent: dict[str, int] = field(default_factory=dict)
    acked: dict[str, int] = field(default_factory=dict)
    #: When the acknowledged Cursor of a Group last moved (for redelivery after a drop).
    progress_us: dict[str, int] = field(default_factory=dict)
    #: Groups paused by backpressure, with the time delivery may resume.
    paused: dict[str, int] = field(default_factory=dict)
    #: Groups waiting for the receiver to restore a snapshot (CURSOR_TOO_OLD sent).
    awaiting_snapshot: set[str] = field(default_factory=set)
    #: Per Group, the snapshot last named to this session in a ``CURSOR_TOO_OLD`` answer: a
    #: receiver that subscribes from before the retention point again refused it, so the
    #: next answer names a snapshot built anew from the archive (MWP-WRK-030).
    snapshot_named: dict[str, str] = field(default_factory=dict)
    org_sent: int = 0
    queue: list[Flight] = field(default_factory=list)
    #: The outage and disconnect windows that take this session down (the bus finds them when
    #: the session attaches).
    windows: tuple[Window, ...] = ()


@dataclass
class BusStats:
    """What the bus did (for tests and summaries)."""

    frames: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    drops: int = 0
    delays: int = 0
    reorders: int = 0
    redeliveries: int = 0
    disconnects: int = 0
    reconnects: int = 0
    cursor_too_old: int = 0
    backpressure: int = 0
    snapshots: int = 0


__all__ = ["ORG", "BusStats", "Flight", "Receiver", "Session"]
