"""A receiver's per-Group Event inbox and Cursor (§16, MWP-WRK-029/030).

Delivery is at-least-once: the inbox deduplicates by Event ID, routes by Group before applying
sequence logic, buffers out-of-order Events, and releases them strictly in sequence order. Its
Cursor per Group is the highest contiguous sequence released; it never moves over a gap.
Organization-scoped Events (no Group) are released once each, in arrival order; their pseudo
Cursor ``cursors[ORG]`` counts them. Buffered out-of-order Events are never durable: after a
restart, ``restore`` brings back the Cursors and the Group log re-delivers the rest.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ORG = "__organization__"


@dataclass
class Inbox:
    """Per-Group buffers and Cursors of one receiver."""

    cursors: dict[str, int] = field(default_factory=dict)
    buffered: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    duplicates: int = 0

    def offer(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """Take one delivered Event; return the Events now releasable, in order."""
        event_id = event["eventId"]
        group = event.get("groupId")
        if group is None:
            if event_id in self.seen:
                self.duplicates += 1
                return []
            self.seen.add(event_id)
            self.cursors[ORG] = self.cursors.get(ORG, 0) + 1
            return [event]
        cursor = self.cursors.get(group, 0)
        sequence = int(event["sequence"])
        waiting = self.buffered.setdefault(group, {})
        if sequence <= cursor or sequence in waiting:
            self.duplicates += 1
            return []
        waiting[sequence] = event
        released = []
        while cursor + 1 in waiting:
            cursor += 1
            ready = waiting.pop(cursor)
            released.append(ready)
        self.cursors[group] = cursor
        return released

    def offer_all(self, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Take several delivered Events; return every releasable one, in order."""
        out: list[dict[str, Any]] = []
        for event in events:
            out.extend(self.offer(event))
        return out

    def restore(self, cursors: dict[str, int], organization_event_ids: Iterable[str]) -> None:
        """Start from durably stored Cursors (and the Organization Events already released)."""
        self.cursors = dict(cursors)
        self.buffered = {}
        self.seen = set(organization_event_ids)

    def start(self, group: str, cursor: int) -> None:
        """Start ``group`` at ``cursor`` (a late joiner's visibility start minus one: nothing
        before it is delivered), dropping what is buffered at or below it."""
        self.cursors[group] = max(self.cursors.get(group, 0), cursor)
        waiting = self.buffered.get(group, {})
        for sequence in [s for s in waiting if s <= self.cursors[group]]:
            del waiting[sequence]

    def gaps(self) -> dict[str, list[int]]:
        """Per Group, the sequences buffered beyond a gap (waiting for redelivery)."""
        return {g: sorted(w) for g, w in self.buffered.items() if w}
