"""What every simulated agent shares: intents, the read-only view it decides from, and the
sans-IO policy interface.

A policy never performs I/O, never reads a clock, never draws unseeded randomness: given its view
(the Group state folded from the Events delivered to it so far) and ``now``, it returns the
Commands it wants to send as ``Intent`` values, and it is told each outcome. Drivers (step mode,
threads mode) do everything else.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..authority.organization import Member
from ..authority.pipeline import Outcome
from ..authority.state import AuthorityState


@dataclass(frozen=True, slots=True, kw_only=True)
class Intent:
    """A Command an agent wants sent: its kind, payload, Group and envelope overrides.

    ``why`` says, in a learner's words, why the agent wants it (shown by the stepper).
    """

    kind: str
    payload: dict[str, Any]
    group: str | None
    why: str = ""
    overrides: dict[str, Any] = field(default_factory=dict)
    tag: str = ""
    #: Artifact content the driver stores (content-addressed) before sending the Command.
    blobs: dict[str, bytes] = field(default_factory=dict)


@dataclass
class View:
    """What an agent may read: its own Principal, the state folded from its delivered Events,
    and a signer for documents it must sign itself (Approvals, manifests, Evidence)."""

    member: Member
    state: AuthorityState
    sign: Callable[[str, dict[str, Any]], dict[str, Any]]

    @property
    def me(self) -> str:
        """This agent's Principal ID."""
        return self.member.id


class Policy(Protocol):
    """A sans-IO agent policy."""

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """The Commands this agent wants to send now (possibly none)."""
        ...

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Learn what became of an Intent (accepted with Events, or rejected with a code)."""
        ...

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """When this agent next wants to act without a new Event (None: only on Events)."""
        ...
