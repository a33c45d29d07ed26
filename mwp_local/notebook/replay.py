"""The log replayed to any point, for views that show the past (the Stepper's history, the
graphs that follow it, TimeTravel).

``LogReplay`` reads the signed Event documents of a Group log and folds them with the
Authority's own reducer (``evolve``) into a private ``AuthorityState`` that no one else holds:
the views read the log, never the live Authority. Replaying forward continues from the last
point; going back starts again from the beginning (the quickstart's logs take milliseconds).
"""

from __future__ import annotations

from typing import Any

from ..authority.evolve import evolve
from ..authority.state import AuthorityState
from ..protocol.jsontext import parse_strict


class LogReplay:
    """Replays the log of ``target`` (a Sandbox, a bench: anything with a ``log`` GroupLog)."""

    def __init__(self, target: Any) -> None:
        self.log = target.log
        self._documents: list[dict[str, Any]] = []
        self._state: AuthorityState | None = None
        self._at = 0

    def documents(self) -> list[dict[str, Any]]:
        """Every Event document in log order (read again when the log has grown)."""
        count = self.log.store.event_count()
        if len(self._documents) != count:
            self._documents = [parse_strict(e.document) for e in self.log.store.events()]
        return self._documents

    def _fresh(self) -> AuthorityState:
        org = self.log.org
        return AuthorityState(registry=org.registry(), organization_id=org.organization_id)

    def state_at(self, position: int) -> AuthorityState:
        """The state once the first ``position`` Events are folded (position 0: nothing). The
        result is this replay's own; read it before the next call."""
        documents = self.documents()
        position = max(0, min(position, len(documents)))
        if self._state is None or position < self._at:
            self._state, self._at = self._fresh(), 0
        for document in documents[self._at : position]:
            evolve(self._state, document)
        self._at = position
        return self._state

    def position_of_sequence(self, group_id: str, sequence: int) -> int:
        """How many Events precede the Group's Event after ``sequence`` (so ``state_at`` of it
        includes the Group's Events up to ``sequence`` and every earlier Organization Event)."""
        for index, document in enumerate(self.documents()):
            if document.get("groupId") == group_id and document.get("sequence", 0) > sequence:
                return index
        return len(self.documents())
