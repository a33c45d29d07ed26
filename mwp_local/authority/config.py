"""Tunable policy of the sandbox's Group Authority (Organization-defined values in the spec)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class RatePolicy:
    """A per-Principal rate limit (§20 "limits on Message and proposal rates"): at most
    ``max_commands`` accepted Commands of one Principal within any ``window_us`` microseconds,
    counting only ``kinds`` when given. Organization control services (bootstrap, policy) are
    not limited. A Command over the limit is refused ``RATE_LIMITED`` (retryable: it may be
    sent again once the window has moved on) and changes nothing."""

    max_commands: int
    window_us: int
    kinds: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.max_commands < 1 or self.window_us <= 0:
            raise ValueError("a rate policy allows at least one Command in a positive window")

    def counts(self, kind: str) -> bool:
        """Whether Commands of ``kind`` count against the limit."""
        return self.kinds is None or kind in self.kinds

    def applies_to(self, principal_id: str, kind: str, services: Collection[str]) -> bool:
        """Whether a Command of ``kind`` from ``principal_id`` is limited (``services``: the
        Organization's control services, which are not)."""
        return self.counts(kind) and principal_id not in services


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthorityConfig:
    """Organization policy values the specification leaves to the deployment.

    All durations are in microseconds of the injected clock.
    """

    #: How far in the past ``issuedAt`` may lie when a Command first arrives (§6.4 freshness).
    freshness_past_us: int = 300_000_000
    #: How far in the future ``issuedAt`` may lie (clock skew).
    freshness_future_us: int = 30_000_000
    #: Default Execution Lease duration when a ``work.start`` does not ask for one.
    execution_lease_us: int = 120_000_000
    #: Longest Execution Lease (or renewal) a Worker may ask for.
    max_execution_lease_us: int = 3_600_000_000
    #: The start-by window of an ownership grant (§11.3): start before this or be replaceable.
    start_by_us: int = 300_000_000
    #: Bounded ownership lease kept after a checkpoint (§10.2 "bounded ownership lease").
    ownership_after_checkpoint_us: int = 600_000_000
    #: Bounded blocked lease (§11.4).
    blocked_lease_us: int = 1_800_000_000
    #: Coordinator lease duration (§7.2).
    coordinator_lease_us: int = 1_800_000_000
    #: Default maximum child-Mission depth (§14), beyond which approval is needed.
    max_child_depth: int = 3
    #: Per-Principal rate policy (§20); ``None`` (the default): no rate limit, so runs are
    #: unchanged.
    rate_policy: RatePolicy | None = None
