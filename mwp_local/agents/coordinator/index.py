"""Indexes and memoized facts that keep the Coordinator's and MissionOwner's decisions cheap.

A policy decides on every step, and most of what it reads does not change between steps: the
WorkItems of a Mission (the replica only ever adds WorkItems), the deadline and dependency
policy written in a WorkItem's contract, timestamps repeated across documents. This module
remembers them instead of recomputing them from the whole replica each time:

* ``epoch_us``: a protocol timestamp's microseconds, parsed once per distinct text;
* ``MissionItems``: each Mission's WorkItem IDs in sorted order, extended with the WorkItems
  the replica gained since the last call (it never deletes one), each WorkItem's
  ``ContractFacts``, recomputed only when its contract object changes, and each Mission's
  WorkItems by ID and sorted deadlines, brought up to date from ``ChangedItems``;
* ``Agenda``: which of a Mission's WorkItems the Coordinator must look at on a decision
  (most WorkItems of a large Mission are verified, or wait for their dependencies), classified
  again only when a WorkItem or one of its dependencies changes;
* ``OpenOffers``: the pending offers, without scanning every offer ever made;
* ``ChangedItems``: the WorkItems the replica wrote since the last look (its
  ``work_item_changes`` journal), which ``MissionItems``, ``Agenda``, ``OwnedItems`` and
  ``MatchingItems`` read instead of every WorkItem;
* ``OwnedItems``: each Agent's queued, active and blocked WorkItems (``owned_by_agent``);
* ``MatchingItems``: the WorkItems whose record passes a test (the MissionOwner's queued
  WorkItems not yet approved for execution).

Nothing here decides anything: callers read the same values they would have computed from the
view, only faster.
"""

from __future__ import annotations

import enum
import functools
from bisect import bisect_right, insort
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ...authority.model import OfferRecord, WorkItemRecord
from ...authority.state import AuthorityState
from ...protocol.tables import OfferStatus, WorkItemState
from ...protocol.timestamps import parse_timestamp
from ..dag import DEPENDENCY_POLICIES
from .contracts import ambiguities, dependency_policy, review_of


@functools.lru_cache(maxsize=65_536)
def epoch_us(text: str) -> int:
    """The instant of a protocol timestamp in whole microseconds (memoized by its text)."""
    return parse_timestamp(text).epoch_micros


@dataclass(frozen=True, slots=True)
class ContractFacts:
    """What the Coordinator reads from one WorkItem contract on every decision."""

    #: The contract these facts were read from (compared by identity: records are replaced,
    #: never mutated, so a new contract is a new object).
    contract: Mapping[str, Any]
    #: Its ``deadline`` in microseconds.
    deadline_us: int
    #: Its ``dependencyWorkItemIds``.
    dependencies: tuple[str, ...]
    #: The dependency states its dependency policy accepts (None: a policy nobody knows).
    accepted: frozenset[WorkItemState] | None
    #: Its open ``ambiguities``.
    questions: tuple[str, ...]
    #: What it reviews (``review_of``; do not mutate).
    review_target: Mapping[str, Any] | None

    def satisfied(self, items: Mapping[str, WorkItemRecord]) -> bool:
        """Whether every dependency is in ``items`` in an accepted state (a known policy)."""
        accepted = self.accepted
        assert accepted is not None
        for dep in self.dependencies:
            found = items.get(dep)
            if found is None or found.state not in accepted:
                return False
        return True


def contract_facts(contract: Mapping[str, Any]) -> ContractFacts:
    """Read the facts of ``contract`` (no memo: see ``MissionItems.facts``)."""
    return ContractFacts(
        contract=contract,
        deadline_us=epoch_us(contract["deadline"]),
        dependencies=tuple(contract.get("dependencyWorkItemIds", ())),
        accepted=DEPENDENCY_POLICIES.get(dependency_policy(contract)),
        questions=tuple(ambiguities(contract)),
        review_target=review_of(contract),
    )


@dataclass
class ChangedItems:
    """The WorkItems one replica wrote since the last call, read from its journal
    (``AuthorityState.work_item_changes``: every ``put`` of a WorkItem, in order).

    Correct because WorkItem records are written only through ``put``; a rolled-back write
    leaves an entry whose record did not change, which callers compare by identity anyway. A
    different replica (or a shorter journal) answers None: look at everything once.
    """

    _state: AuthorityState | None = None
    _offset: int = 0

    def since(self, state: AuthorityState) -> list[str] | None:
        """The IDs written since the last call (repeats possible), or None: all of them."""
        journal = state.work_item_changes
        if state is not self._state or len(journal) < self._offset:
            self._state, self._offset = state, len(journal)
            return None
        out = journal[self._offset :]
        self._offset = len(journal)
        return out


@dataclass
class MissionItems:
    """Mission ID → its WorkItem IDs (sorted), kept in step with one replica.

    Correct because a replica's ``work_items`` table only grows (WorkItems are never deleted)
    and a dict keeps insertion order: the WorkItems added since the last call are the entries
    after the ``seen`` first ones. A different replica (or a smaller table) rebuilds the index.
    """

    _state: AuthorityState | None = None
    _seen: int = 0
    _ids: dict[str, list[str]] = field(default_factory=dict)
    #: WorkItem ID → the facts of its current contract.
    _facts: dict[str, ContractFacts] = field(default_factory=dict)
    #: Mission ID → its WorkItems' deadlines, sorted (dropped when one of them changes).
    _deadlines: dict[str, list[int]] = field(default_factory=dict)
    #: WorkItem ID → the contract its deadline in ``_deadlines`` was read from.
    _deadline_contracts: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    #: Mission ID → its WorkItems by ID, in ID order, as ``items`` last returned them.
    _items: dict[str, dict[str, WorkItemRecord]] = field(default_factory=dict)
    #: What the replica wrote since ``_items`` and ``_deadlines`` were brought up to date.
    _changes: ChangedItems = field(default_factory=ChangedItems)

    def _refresh(self, state: AuthorityState) -> None:
        table = state.work_items
        if state is not self._state or len(table) < self._seen:
            self._state, self._seen, self._ids = state, 0, {}
            self._deadlines, self._deadline_contracts, self._items = {}, {}, {}
        if len(table) == self._seen:
            return
        for item in islice(table.values(), self._seen, None):
            insort(self._ids.setdefault(item.mission_id, []), item.work_item_id)
        self._seen = len(table)

    def _sync(self, state: AuthorityState) -> None:
        """Bring ``_items`` and ``_deadlines`` up to date with the WorkItems the replica wrote
        since the last call: a changed record replaces its entry, a new WorkItem (it goes in
        ID order) or a changed contract drops its Mission's entry, rebuilt when next asked."""
        self._refresh(state)
        since = self._changes.since(state)
        if since is None:
            self._deadlines, self._deadline_contracts, self._items = {}, {}, {}
            return
        table = state.work_items
        for wid in since:
            item = table.get(wid)
            if item is None:  # a WorkItem written and rolled back: start again
                self._deadlines, self._deadline_contracts, self._items = {}, {}, {}
                return
            mid = item.mission_id
            held = self._items.get(mid)
            if held is not None:
                if wid in held:
                    held[wid] = item
                else:
                    del self._items[mid]
            if self._deadline_contracts.get(wid) is not item.contract:
                self._deadlines.pop(mid, None)

    def ids(self, state: AuthorityState, mission_id: str) -> list[str]:
        """The IDs of the Mission's WorkItems, sorted (do not mutate)."""
        self._refresh(state)
        return self._ids.get(mission_id, [])

    def items(self, state: AuthorityState, mission_id: str) -> dict[str, WorkItemRecord]:
        """The Mission's WorkItems by ID, in ID order (``items_scan``), kept from the replica's
        journal of changed WorkItems instead of being read again on every call: the same dict
        is returned and brought up to date by the next call (do not mutate or keep it)."""
        self._sync(state)
        held = self._items.get(mission_id)
        if held is None:
            held = self.items_scan(state, mission_id)
            self._items[mission_id] = held
        return held

    def items_scan(self, state: AuthorityState, mission_id: str) -> dict[str, WorkItemRecord]:
        """The Mission's WorkItems by ID, in ID order, read from the replica (the plain path
        ``items`` keeps)."""
        table = state.work_items
        return {wid: table[wid] for wid in self.ids(state, mission_id)}

    def next_deadline_us(self, state: AuthorityState, mission_id: str, now_us: int) -> int | None:
        """The earliest contract deadline of the Mission's WorkItems after ``now_us``.

        The sorted deadlines are kept per Mission and sorted again only when a WorkItem was
        added or one's contract changed (the journal of changed WorkItems names them; a
        contract is compared by identity: contracts are replaced, never mutated)."""
        self._sync(state)
        deadlines = self._deadlines.get(mission_id)
        if deadlines is None:
            table = state.work_items
            items = [table[wid] for wid in self.ids(state, mission_id)]
            for item in items:
                self._deadline_contracts[item.work_item_id] = item.contract
            deadlines = sorted(self.facts(item).deadline_us for item in items)
            self._deadlines[mission_id] = deadlines
        at = bisect_right(deadlines, now_us)
        return deadlines[at] if at < len(deadlines) else None

    def facts(self, item: WorkItemRecord) -> ContractFacts:
        """The facts of ``item``'s contract, read again only when the contract changed."""
        known = self._facts.get(item.work_item_id)
        if known is None or known.contract is not item.contract:
            known = contract_facts(item.contract)
            self._facts[item.work_item_id] = known
        return known


_OWNED_STATES = (WorkItemState.QUEUED, WorkItemState.ACTIVE, WorkItemState.BLOCKED)


@dataclass
class OwnedItems:
    """Each Agent's queued, active and blocked WorkItems, in the replica's order: what
    ``offers.owned_by_agent`` finds by a scan of every WorkItem, kept from ``ChangedItems``."""

    changes: ChangedItems = field(default_factory=ChangedItems)
    #: Owned WorkItem ID → its owner's Agent ID.
    _owner: dict[str, str] = field(default_factory=dict)
    #: WorkItem ID → its place in ``state.work_items`` (insertion order: it only grows).
    _order: dict[str, int] = field(default_factory=dict)

    def owned(self, state: AuthorityState) -> dict[str, list[WorkItemRecord]]:
        """Agent ID → its owned WorkItems (queued, active, blocked), in the replica's order."""
        table = state.work_items
        since = self.changes.since(state)
        if since is None:
            self._owner, self._order = {}, {}
            since = list(table)
        order = self._order
        for wid in since:
            item = table.get(wid)
            if item is None:
                self._owner.pop(wid, None)
                continue
            order.setdefault(wid, len(order))
            if item.owner and item.state in _OWNED_STATES:
                self._owner[wid] = item.owner["agentId"]
            else:
                self._owner.pop(wid, None)
        out: dict[str, list[WorkItemRecord]] = {}
        for wid in sorted(self._owner, key=order.__getitem__):
            item = table[wid]
            out.setdefault(item.owner["agentId"], []).append(item)  # type: ignore[index]
        return out


@dataclass
class MatchingItems:
    """The IDs of the replica's WorkItems whose record passes ``test`` (a function of the
    record alone), kept from ``ChangedItems``: what a scan of every WorkItem with ``test``
    finds, without the scan."""

    test: Callable[[WorkItemRecord], bool]
    changes: ChangedItems = field(default_factory=ChangedItems)
    _ids: set[str] = field(default_factory=set)

    def ids(self, state: AuthorityState) -> set[str]:
        """The IDs of the WorkItems that pass ``test`` now (do not mutate)."""
        table = state.work_items
        since = self.changes.since(state)
        if since is None:
            self._ids = set()
            since = list(table)
        for wid in since:
            item = table.get(wid)
            if item is not None and self.test(item):
                self._ids.add(wid)
            else:
                self._ids.discard(wid)
        return self._ids


class Due(enum.Enum):
    """Whether a WorkItem needs the Coordinator's attention on a decision."""

    #: Visit it on every decision (it may be offered, reassigned, given up, ...).
    ACT = "act"
    #: Nothing to do before its deadline (open, waiting for its dependencies).
    WAIT = "wait"
    #: Nothing to do until it or one of its dependencies changes.
    IDLE = "idle"


#: How the Coordinator classifies a WorkItem, given its Mission's WorkItems.
Classifier = Callable[[WorkItemRecord, Mapping[str, WorkItemRecord]], Due]


@dataclass
class Agenda:
    """One Mission's WorkItems that need attention, kept in step with the replica.

    A WorkItem's ``Due`` depends only on its own record, the records of its dependencies, and
    (for ``WAIT``) the time. Records are immutable and replaced on every change, so comparing
    each WorkItem's record with the one last classified (by identity) finds every change; a
    changed WorkItem and every WorkItem depending on it (``dependents``, as of their last
    classification) are classified again, nothing else. ``submitted`` is kept the same way.
    """

    classify: Classifier
    #: WorkItem ID → the record it was last classified from.
    records: dict[str, WorkItemRecord] = field(default_factory=dict)
    #: WorkItem ID → the dependencies it had when classified.
    depends_on: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: WorkItem ID → the WorkItems that depended on it when they were classified.
    dependents: dict[str, set[str]] = field(default_factory=dict)
    acting: set[str] = field(default_factory=set)
    #: WorkItem ID → its deadline (µs), for ``WAIT``.
    waiting: dict[str, int] = field(default_factory=dict)
    #: Each deadline in ``waiting`` → how many WorkItems wait for it (few distinct values:
    #: ``due`` reads the earliest instead of every waiting WorkItem).
    _deadlines: dict[int, int] = field(default_factory=dict, repr=False, compare=False)
    #: Submitted WorkItems (to review).
    submitted: set[str] = field(default_factory=set)
    #: What the replica wrote since the last update (None: compare every WorkItem).
    changes: ChangedItems | None = None

    def update(
        self,
        items: Mapping[str, WorkItemRecord],
        facts: MissionItems,
        state: AuthorityState | None = None,
    ) -> None:
        """Classify again what changed in ``items`` (the WorkItems of ``state``'s Mission)
        since the last update: with ``state`` and ``changes``, only those it wrote since."""
        records = self.records
        since = self.changes.since(state) if self.changes and state is not None else None
        if since is None:
            changed = [wid for wid, item in items.items() if records.get(wid) is not item]
        else:
            changed = [
                wid
                for wid in dict.fromkeys(since)
                if wid in items and records.get(wid) is not items[wid]
            ]
        if not changed:
            return
        again = set(changed)
        for wid in changed:
            again |= self.dependents.get(wid, set())
            records[wid] = items[wid]
        for wid in again:
            if wid in items:  # (always, unless the records came from another replica)
                self._classify(items[wid], items, facts)

    def _classify(
        self, item: WorkItemRecord, items: Mapping[str, WorkItemRecord], facts: MissionItems
    ) -> None:
        wid = item.work_item_id
        deps = facts.facts(item).dependencies
        if self.depends_on.get(wid) != deps:
            for dep in self.depends_on.get(wid, ()):
                self.dependents.get(dep, set()).discard(wid)
            for dep in deps:
                self.dependents.setdefault(dep, set()).add(wid)
            self.depends_on[wid] = deps
        self.acting.discard(wid)
        was = self.waiting.pop(wid, None)
        if was is not None:
            left = self._deadlines[was] - 1
            if left:
                self._deadlines[was] = left
            else:
                del self._deadlines[was]
        self.submitted.discard(wid)
        if item.state is WorkItemState.SUBMITTED:
            self.submitted.add(wid)
        due = self.classify(item, items)
        if due is Due.ACT:
            self.acting.add(wid)
        elif due is Due.WAIT:
            deadline = facts.facts(item).deadline_us
            self.waiting[wid] = deadline
            self._deadlines[deadline] = self._deadlines.get(deadline, 0) + 1

    def due(self, now_us: int) -> list[str]:
        """The WorkItems to visit now, in ID order."""
        out = set(self.acting)
        if self._deadlines and now_us >= min(self._deadlines):
            out.update(wid for wid, deadline in self.waiting.items() if now_us >= deadline)
        return sorted(out)


@dataclass
class OpenOffers:
    """The replica's pending offers, kept in step with it (for counts and wake-up times).

    Correct because an offer is never deleted, a new offer has a new ID (so it is appended to
    the table, whose dict keeps insertion order), and an offer that stops being pending
    (accepted, withdrawn, lost in a race) never becomes pending again: each call adds the
    offers appended since the last one and forgets those no longer pending. Expiry is not a
    status: callers still compare ``expires_us`` with the time. A different replica (or a
    smaller table) rebuilds it.
    """

    _state: AuthorityState | None = None
    _seen: int = 0
    #: IDs of the offers pending when last looked at (a dict: insertion-ordered set).
    _ids: dict[str, None] = field(default_factory=dict)

    def pending(self, state: AuthorityState) -> list[OfferRecord]:
        """The offers whose status is ``pending``."""
        table = state.offers
        if state is not self._state or len(table) < self._seen:
            self._state, self._seen, self._ids = state, 0, {}
        if len(table) > self._seen:
            self._ids.update(dict.fromkeys(islice(table, self._seen, None)))
            self._seen = len(table)
        out = []
        for offer_id in list(self._ids):
            offer = table[offer_id]
            if offer.status == OfferStatus.PENDING:
                out.append(offer)
            else:
                del self._ids[offer_id]
        return out
