"""The log replayed to any point, for views that show the past (the Stepper's history, the
graphs that follow it, TimeTravel).

``LogReplay`` reads the signed Event texts of a Group log and folds documents parsed from them
with the Authority's own reducer (``evolve``) into a private ``AuthorityState`` that no one else
holds: the views read the log, never the live Authority. Replaying forward continues from the
last point; going back starts again from the beginning (the quickstart's logs take
milliseconds). What it hands out is a value (issue 20 §4): ``documents()`` parses afresh and
``state_at`` returns a copy, so a caller that changes either changes no later view.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from ..authority.evolve import evolve
from ..authority.state import AuthorityState
from ..protocol.jsontext import parse_strict


class LogReplay:
    """Replays the log of ``target`` (a Sandbox, a bench: anything with a ``log`` GroupLog)."""

    def __init__(self, target: Any) -> None:
        self.log = target.log
        #: Each Event's Group (or None), sequence (0 without a Group) and signed text.
        self._events: list[tuple[str | None, int, str]] = []
        self._state: AuthorityState | None = None
        self._at = 0

    def _read(self) -> list[tuple[str | None, int, str]]:
        """The log's Events (read again when the log has grown)."""
        count = self.log.store.event_count()
        if len(self._events) != count:
            self._events = [
                (e.group_id, e.sequence or 0, e.document) for e in self.log.store.events()
            ]
        return self._events

    def documents(self) -> list[dict[str, Any]]:
        """Every Event document in log order, parsed afresh (the caller's own)."""
        return [parse_strict(text) for _, _, text in self._read()]

    def _fresh(self) -> AuthorityState:
        org = self.log.org
        return AuthorityState(registry=org.registry(), organization_id=org.organization_id)

    def state_at(self, position: int) -> AuthorityState:
        """The state once the first ``position`` Events are folded (position 0: nothing), as a
        copy of this replay's own."""
        events = self._read()
        position = max(0, min(position, len(events)))
        if self._state is None or position < self._at:
            self._state, self._at = self._fresh(), 0
        for _, _, text in events[self._at : position]:
            evolve(self._state, parse_strict(text))
        self._at = position
        return _copy(self._state)

    def position_of_sequence(self, group_id: str, sequence: int) -> int:
        """How many Events precede the Group's Event after ``sequence`` (so ``state_at`` of it
        includes the Group's Events up to ``sequence`` and every earlier Organization Event)."""
        events = self._read()
        for index, (group, at, _) in enumerate(events):
            if group == group_id and at > sequence:
                return index
        return len(events)


def _copy(state: AuthorityState) -> AuthorityState:
    """A copy of ``state`` sharing nothing mutable with it (the Registry is immutable)."""
    tables = {
        f.name: copy.deepcopy(getattr(state, f.name))
        for f in dataclasses.fields(state)
        if f.name not in ("registry", "organization_id")
    }
    return dataclasses.replace(state, **tables)
