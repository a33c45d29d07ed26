"""The committed Event texts of each Group by Event ID, so a late joiner's fetch of what a Context
Package cites reads those Events instead of the whole Group log.

The plain fetch (``Sandbox._fetch_plain``) reads every Event of the package's Group from the log
and hands them to ``gate_cited_events``. The gate only ever looks at the Events the package
cites and at the ``work.authorized`` Events of the package's WorkItem and its dependencies
(``proposals_of``), so ``CommittedEvents.select`` hands it exactly those: the same answer, the
same refusals. The index is fed with what the Sandbox delivers (every committed Event, in step
mode) and, on a miss, with the Group's tail read from the log after the highest sequence it holds
without a gap (threads mode, or anything delivered another way). When it still cannot answer
(an Event the log does not hold, a WorkItem whose authorization it never saw), ``select``
returns None and the caller takes the plain path. Pure: the caller passes the log's records.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..artifacts.context_packages import cited_event_ids
from ..authority.records import EventRecord
from ..authority.state import AuthorityState


@dataclass
class _Group:
    #: Event ID → its signed canonical text.
    texts: dict[str, str] = field(default_factory=dict)
    #: WorkItem ID → the IDs of its ``work.authorized`` Events.
    authorized: dict[str, list[str]] = field(default_factory=dict)
    sequences: set[int] = field(default_factory=set)
    #: The highest sequence held with none missing below it.
    top: int = 0


@dataclass
class CommittedEvents:
    """Per Group, every committed Event it was told about, by Event ID."""

    _groups: dict[str, _Group] = field(default_factory=dict)
    #: Agents' threads fetch (and so feed the index) at the same time in threads mode.
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, event: Mapping[str, Any], text: str) -> None:
        """Remember one committed Event (a duplicate is ignored)."""
        group_id = event.get("groupId")
        if group_id is None:
            return
        work_item = None
        if event["kind"] == "work.authorized":
            work_item = event["payload"]["workItem"]["workItemId"]
        self._add(group_id, int(event["sequence"]), event["eventId"], work_item, text)

    def note_texts(self, events: Iterable[str | Mapping[str, Any]]) -> None:
        """``note`` for each Event given as its canonical text (or as a document, skipped: a
        document is re-encoded by whoever needs its text, and the log read covers it)."""
        for text in events:
            if isinstance(text, str):
                self.note(json.loads(text), text)

    def note_records(self, records: Iterable[EventRecord]) -> None:
        """``note`` for records read from the log."""
        for record in records:
            if record.group_id is None or record.sequence is None:
                continue
            work_item = None
            if record.kind == "work.authorized":
                work_item = json.loads(record.document)["payload"]["workItem"]["workItemId"]
            self._add(record.group_id, record.sequence, record.event_id, work_item, record.document)

    def _add(
        self, group_id: str, sequence: int, event_id: str, work_item: str | None, text: str
    ) -> None:
        with self._lock:
            group = self._groups.setdefault(group_id, _Group())
            if event_id in group.texts:
                return
            group.texts[event_id] = text
            group.sequences.add(sequence)
            while group.top + 1 in group.sequences:
                group.top += 1
            if work_item is not None:
                group.authorized.setdefault(work_item, []).append(event_id)

    def top(self, group_id: str) -> int:
        """The highest sequence of ``group_id`` held with none missing below it."""
        group = self._groups.get(group_id)
        return group.top if group is not None else 0

    def holds(self, package: Mapping[str, Any]) -> bool:
        """Whether every Event ``package`` cites is held."""
        group = self._groups.get(package["groupId"])
        return group is not None and all(e in group.texts for e in cited_event_ids(package))

    def select(
        self, state: AuthorityState, package: Mapping[str, Any]
    ) -> list[dict[str, Any]] | None:
        """Of the package's Group, the Events ``gate_cited_events`` reads (each parsed afresh):
        the cited ones and the ``work.authorized`` of the package's WorkItem and of its
        dependencies in ``state``; None when one of them is not held."""
        with self._lock:
            return self._select(state, package)

    def _select(
        self, state: AuthorityState, package: Mapping[str, Any]
    ) -> list[dict[str, Any]] | None:
        group = self._groups.get(package["groupId"])
        if group is None:
            return None
        wanted = dict.fromkeys(cited_event_ids(package))
        made_for = package.get("workItemId")
        item = state.work_items.get(made_for or "")
        if item is not None:
            for work_item_id in (item.work_item_id, *item.dependencies):
                known = group.authorized.get(work_item_id)
                if known is None:
                    if work_item_id in state.work_items:
                        return None  # authorized, but not (yet) seen here
                    continue
                wanted.update(dict.fromkeys(known))
        texts = group.texts
        if any(e not in texts for e in wanted):
            return None
        return [json.loads(texts[e]) for e in wanted]
