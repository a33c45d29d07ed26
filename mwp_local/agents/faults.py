"""Scheduled agent faults of a mission file (``[[faults]]``), as a sans-IO policy wrapper.

A ``pause`` stops an agent from acting for a while (a long garbage-collection pause, a network
partition that swallows its Commands): it sends nothing and renews nothing, so its leases run
out and the Coordinator may reassign its work under a higher Ownership Epoch (§11.5). A
``crash`` stops it for good. Events are still delivered to its runtime: when a paused agent
resumes it acts on what the log says now. Time comes from the driver; nothing here reads a clock.
"""

from __future__ import annotations

from collections.abc import Sequence

from .base import Intent, Policy, PolicyWrapper, View
from .specs import FaultSpec


class FaultyPolicy(PolicyWrapper):
    """``inner``, silenced during ``windows`` (``(from_us, until_us)``; ``None``: for good).

    While down it sends nothing; Events still reach it, outcomes and its slots' hooks are
    ``inner``'s (``PolicyWrapper``).
    """

    def __init__(self, inner: Policy, windows: tuple[tuple[int, int | None], ...]) -> None:
        super().__init__(inner)
        self.windows = windows

    def __repr__(self) -> str:
        return f"FaultyPolicy({self.inner!r}, windows={self.windows})"

    @classmethod
    def scheduled(cls, inner: Policy, faults: Sequence[FaultSpec], start_us: int) -> Policy:
        """``inner`` with the faults of a mission file (``inner`` itself when there are none)."""
        if not faults:
            return inner
        windows = tuple(
            (
                start_us + f.at_s * 1_000_000,
                None if f.kind == "crash" else start_us + (f.at_s + (f.for_s or 0)) * 1_000_000,
            )
            for f in faults
        )
        return cls(inner=inner, windows=windows)

    def down(self, now_us: int) -> bool:
        """Whether the agent is paused or crashed at ``now_us``."""
        return any(a <= now_us and (b is None or now_us < b) for a, b in self.windows)

    def decide(self, view: View, now_us: int) -> list[Intent]:
        """Nothing while down; the agent's own decisions otherwise."""
        return [] if self.down(now_us) else self.inner.decide(view, now_us)

    def next_wakeup(self, view: View, now_us: int) -> int | None:
        """The end of the current pause, or the earlier of the agent's wish and the next fault."""
        if self.down(now_us):
            ends = [b for a, b in self.windows if a <= now_us and b is not None and now_us < b]
            crashed = any(a <= now_us and b is None for a, b in self.windows)
            return None if crashed or not ends else max(ends)
        times = [a for a, _ in self.windows if a > now_us]
        wish = self.inner.next_wakeup(view, now_us)
        if wish is not None:
            times.append(wish)
        return min(times) if times else None
