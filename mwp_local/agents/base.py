"""What every agent shares: intents, the read-only view it decides from, and the sans-IO policy
interface the drivers rely on.

A policy never performs I/O, never reads a clock, never draws unseeded randomness: given its view
(the Group state folded from the Events delivered to it so far) and ``now``, it returns the
Commands it wants to send as ``Intent`` values, and it is told each outcome. Drivers (step mode,
threads mode) do everything else, and call every hook of ``Policy`` on every policy: a policy
without execution slots answers the slot hooks with nothing (``BasePolicy``'s defaults). A policy
that wraps another (a reviewer's, a scheduled fault's) is a ``PolicyWrapper``, which passes every
hook it does not change on to ``inner``; ``unwrap`` finds the innermost policy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..authority.organization import Member

if TYPE_CHECKING:
    from ..authority.tokens import CapabilityToken
    from .worker.slots import ExternalCall, TokenRequest
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
    """A sans-IO agent policy: what a driver asks of it."""

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """The Commands this agent wants to send now (possibly none)."""
        ...

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Learn what became of an Intent (accepted with Events, or rejected with a code)."""
        ...

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """When this agent next wants to act without a new Event (None: only on Events)."""
        ...

    def observe(self, view: View, event: dict[str, Any]) -> None:
        """Learn from one released Event (after it was folded into the view), in release
        order, replays included."""
        ...

    def token_requests(self, now_us: int) -> Sequence[TokenRequest]:
        """Execution slots that need a capability token for their current Execution Lease."""
        ...

    def grant_token(self, slot_id: str, token: CapabilityToken) -> None:
        """The token the driver obtained for slot ``slot_id``."""
        ...

    def external_calls(self, now_us: int) -> Sequence[ExternalCall]:
        """External operations the slots want performed now."""
        ...

    def on_external(self, call: ExternalCall, *, ok: bool, refused: bool = False) -> None:
        """The driver's answer to an external operation."""
        ...


class BasePolicy:
    """Defaults for every hook of ``Policy``: wants nothing, learns nothing, has no slots.

    Subclass it and override what your agent does; the built-in Coordinator, Worker and
    MissionOwner do.
    """

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Nothing to send."""
        return []

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Nothing to learn."""

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """Wake only on Events."""
        return None

    def observe(self, view: View, event: dict[str, Any]) -> None:
        """Nothing to remember."""

    def token_requests(self, now_us: int) -> Sequence[TokenRequest]:
        """No slots, no tokens."""
        return ()

    def grant_token(self, slot_id: str, token: CapabilityToken) -> None:
        """No slot can take a token."""
        raise ValueError(f"this policy has no execution slot {slot_id}")

    def external_calls(self, now_us: int) -> Sequence[ExternalCall]:
        """No external operations."""
        return ()

    def on_external(self, call: ExternalCall, *, ok: bool, refused: bool = False) -> None:
        """No external operations to hear about."""


class PolicyWrapper(BasePolicy):
    """A policy around ``inner``: every hook goes to ``inner`` unless the subclass changes it."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """``inner``'s Intents."""
        return self.inner.decide(view, now_us)

    def on_outcome(self, view: View, intent: Intent, outcome: Outcome, now_us: int) -> None:
        """Pass the outcome on."""
        self.inner.on_outcome(view, intent, outcome, now_us)

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """``inner``'s."""
        return self.inner.next_wakeup(view, now_us)

    def observe(self, view: View, event: dict[str, Any]) -> None:
        """Pass the Event on."""
        self.inner.observe(view, event)

    def token_requests(self, now_us: int) -> Sequence[TokenRequest]:
        """``inner``'s slots' requests."""
        return self.inner.token_requests(now_us)

    def grant_token(self, slot_id: str, token: CapabilityToken) -> None:
        """To ``inner``'s slot."""
        self.inner.grant_token(slot_id, token)

    def external_calls(self, now_us: int) -> Sequence[ExternalCall]:
        """``inner``'s slots' operations."""
        return self.inner.external_calls(now_us)

    def on_external(self, call: ExternalCall, *, ok: bool, refused: bool = False) -> None:
        """To ``inner``'s slot."""
        self.inner.on_external(call, ok=ok, refused=refused)


def unwrap(policy: Policy) -> Policy:
    """The innermost policy inside any ``PolicyWrapper`` layers."""
    while isinstance(policy, PolicyWrapper):
        policy = policy.inner
    return policy
