"""Tunable policy of the sandbox's Group Authority (Organization-defined values in the spec)."""

from __future__ import annotations

from dataclasses import dataclass


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
