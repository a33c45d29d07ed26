"""Who receives which Events (§8, §13.3, §17.2; MWP-WRK-028): a Group's Events go to its
members only, from their visibility start; Organization-scoped Events (Agent Cards, Sessions) go
to everyone.

Owns the delivery-side reading of Memberships, folded from the Events themselves (the
``membership.changed`` / ``membership.ended`` documents), so the delivery bus, the direct path
and a replay after a restart all filter alike without asking the Authority:

* a Principal receives a Group's Events from its Membership's ``visibilityStartSequence`` (the
  Event granting the Membership included: it lies at or after the start) through the Event that
  ended it (so it learns the end); what lies before the start it gets only from the Context
  Package the Membership names, whose cited Events it fetches through the isolation gate
  (``fetch_cited_events``): an agent's replica starts from that package (``agents.runtime``);
* a Membership granted again (after it ended) starts again at its own visibility start: what
  happened in the Group in between is not delivered;
* a Principal never a member of a Group receives none of its Events, in any path.

``DirectFeed`` is the path without a bus: the Events published so far and what each recipient
was handed, so each gets its Groups' Events in sequence order with no gaps from its start
(Events published out of order, as threads may, wait until the gap is filled). No I/O; one
lock, so threads may share it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..protocol.documents.kinds import EventKind as E
from ..protocol.jcs import canonicalize

__all__ = ["Audience", "DirectFeed", "visible_history"]

_MEMBERSHIP_KINDS = frozenset({str(E.MEMBERSHIP_CHANGED), str(E.MEMBERSHIP_ENDED)})


@dataclass
class Audience:
    """The Memberships each Group's delivery follows."""

    #: (Group, Principal) → None while the Membership is live, else the sequence of the Event
    #: that ended it (delivery stops after it).
    _horizon: dict[tuple[str, str], int | None] = field(default_factory=dict)
    #: (Group, Principal) → the first sequence delivery hands it (the visibility start of the
    #: Membership that opened its current span).
    _start: dict[tuple[str, str], int] = field(default_factory=dict)

    def note(self, event: dict[str, Any]) -> None:
        """Take one published Event into account (only Membership Events change anything)."""
        if event.get("kind") not in _MEMBERSHIP_KINDS:
            return
        doc = event["payload"]["membership"]
        key = (str(doc["groupId"]), str(doc["member"]["id"]))
        if doc["state"] == "ended":
            self._horizon[key] = int(event["sequence"])
            return
        if key not in self._horizon or self._horizon[key] is not None:
            # A new span (first grant, or granted again after it ended) starts at its own
            # visibility; a change while live (provisional to active) keeps the span's start.
            start = int(doc.get("visibilityStartSequence") or 1)
            self._start[key] = max(1, min(start, int(event["sequence"])))
        self._horizon[key] = None

    def grant(self, principal_id: str, group_id: str) -> None:
        """Count ``principal_id`` a live member of ``group_id`` from sequence 1 without a
        Membership Event (a bench whose Events were not made for its receiver)."""
        self._horizon[(group_id, principal_id)] = None
        self._start[(group_id, principal_id)] = 1

    def member(self, principal_id: str, group_id: str) -> bool:
        """Whether ``principal_id`` was ever granted a Membership in ``group_id``."""
        return (group_id, principal_id) in self._horizon

    def start(self, principal_id: str, group_id: str) -> int:
        """The first sequence of ``group_id`` that ``principal_id`` may be handed (its current
        Membership span's visibility start; 1 for a non-member, who is handed nothing)."""
        return self._start.get((group_id, principal_id), 1)

    def through(self, principal_id: str, group_id: str, latest: int) -> int:
        """The highest sequence of ``group_id`` (whose latest Event is ``latest``) that
        ``principal_id`` may be handed: 0 for a non-member."""
        key = (group_id, principal_id)
        if key not in self._horizon:
            return 0
        ended = self._horizon[key]
        return latest if ended is None else min(ended, latest)


@dataclass
class DirectFeed:
    """Delivery without a bus: each recipient gets the Organization's Events and its Groups'
    Events in order, each as the canonical JSON text the Group log holds."""

    audience: Audience = field(default_factory=Audience)
    _org: list[str] = field(default_factory=list)
    _org_ids: set[str] = field(default_factory=set)
    _groups: dict[str, dict[int, str]] = field(default_factory=dict)
    #: Per Group, the highest sequence published with no gap below it.
    _contiguous: dict[str, int] = field(default_factory=dict)
    #: Per recipient: how many Organization Events and which sequence of each Group it got.
    _org_handed: dict[str, int] = field(default_factory=dict)
    _handed: dict[str, dict[str, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def publish(self, events: Iterable[str | dict[str, Any]]) -> None:
        """Take committed Events (texts or documents; duplicates ignored)."""
        for published in events:
            if isinstance(published, dict):
                event, text = published, canonicalize(published).decode()
            else:
                event, text = json.loads(published), published
            group = event.get("groupId")
            if group is None:
                if event["eventId"] not in self._org_ids:
                    self._org_ids.add(event["eventId"])
                    self._org.append(text)
                continue
            texts = self._groups.setdefault(group, {})
            sequence = int(event["sequence"])
            if sequence in texts:
                continue
            texts[sequence] = text
            self.audience.note(event)
            top = self._contiguous.get(group, 0)
            while top + 1 in texts:
                top += 1
            self._contiguous[group] = top

    def take(self, principal_id: str) -> list[str]:
        """What ``principal_id`` may receive and was not handed yet, Organization Events
        first (Group Events may depend on them), then Group by Group in sequence order."""
        org_at = self._org_handed.get(principal_id, 0)
        out = self._org[org_at:]
        self._org_handed[principal_id] = len(self._org)
        handed = self._handed.setdefault(principal_id, {})
        for group in sorted(self._groups):
            through = self.audience.through(principal_id, group, self._contiguous.get(group, 0))
            # Nothing before the visibility start (a span granted again skips the gap).
            after = max(handed.get(group, 0), self.audience.start(principal_id, group) - 1)
            if through <= after:
                continue
            texts = self._groups[group]
            out += [texts[s] for s in range(after + 1, through + 1)]
            handed[group] = through
        return out

    def restart(self, principal_id: str) -> list[str]:
        """Everything ``principal_id`` may receive, from the start (a runtime rebuilt after a
        crash: its inbox drops what it already holds)."""
        self._org_handed.pop(principal_id, None)
        self._handed.pop(principal_id, None)
        return self.take(principal_id)


def visible_history(principal_id: str, events: Iterable[str]) -> list[str]:
    """Of a Group log's Events (canonical JSON texts, in log order), the ones
    ``principal_id`` may receive, in the order ``DirectFeed`` hands them."""
    feed = DirectFeed()
    feed.publish(events)
    return feed.take(principal_id)
