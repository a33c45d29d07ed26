"""What the delivery bus injects and bounds, and how a mission file says so.

A mission file's ``[delivery]`` table turns the bus on (without it the Sandbox hands every
committed Event straight to every agent, as before). Every fault is drawn from a generator
seeded from the Sandbox seed, so a step-mode run stays byte-identical for a seed::

    [delivery]
    duplicate = 0.2        # probability an EVENT frame is sent twice
    reorder = 0.3          # probability a round's due frames are shuffled
    delay = 0.2            # probability a frame is held back ...
    max_delay = "20s"      # ... by up to this long
    drop = 0.1             # probability a Group EVENT frame is lost ...
    redeliver_after = "30s"  # ... and resent after this long without an ACK
    online_window = 40     # Events per Group kept online; older ones only via a snapshot
    group_buffer = 64      # unacknowledged frames per Group before BACKPRESSURE
    frames_per_round = 32  # what a receiver takes per delivery round (round-robin by Group)

    [[delivery.disconnects]]   # an agent's connection is down for a while
    agent = "dev"
    at = "30m"
    for = "20m"

    [[delivery.outages]]       # the Group service is unreachable for everyone
    at = "1h"
    for = "5m"
    grace = "10m"              # bounded offline execution: lease-grace period (§11.5)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Members a ``[delivery]`` table may have.
DELIVERY_KEYS = (
    "duplicate",
    "reorder",
    "delay",
    "max_delay",
    "drop",
    "redeliver_after",
    "online_window",
    "group_buffer",
    "frames_per_round",
    "retry_after",
    "disconnects",
    "outages",
    "validate_frames",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Window:
    """A span of virtual time ``[at_us, until_us)``; ``agent`` None means everyone."""

    at_us: int
    until_us: int
    agent: str | None = None
    #: For an outage: how long after its historical lease expiry a Worker may keep working
    #: offline (the bounded lease-grace period of §11.5).
    grace_us: int = 0

    def contains(self, now_us: int) -> bool:
        """Whether ``now_us`` falls in the window."""
        return self.at_us <= now_us < self.until_us


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryConfig:
    """Fault probabilities and bounds of the delivery bus (all zero: a faithful bus)."""

    duplicate: float = 0.0
    reorder: float = 0.0
    delay: float = 0.0
    max_delay_us: int = 5_000_000
    drop: float = 0.0
    redeliver_after_us: int = 10_000_000
    online_window: int | None = None
    group_buffer: int | None = None
    frames_per_round: int | None = None
    retry_after_us: int = 1_000_000
    disconnects: tuple[Window, ...] = ()
    outages: tuple[Window, ...] = ()
    #: Check every frame against ``websocket-frame.schema.json`` as it crosses the bus.
    validate_frames: bool = True

    def outage_at(self, now_us: int) -> Window | None:
        """The Group-service outage in force at ``now_us``, if any."""
        for window in self.outages:  # a plain loop: asked on every step of a run
            if window.contains(now_us):
                return window
        return None


class DeliveryConfigError(ValueError):
    """A ``[delivery]`` table that cannot be used, with what is wrong."""


def parse_delivery(
    raw: dict[str, Any], *, start_us: int, agents: set[str], seconds: Any
) -> DeliveryConfig:
    """Check a mission file's ``[delivery]`` table (``seconds(value, where)`` reads a
    duration such as ``"20s"``); times are offsets from the Sandbox start."""
    unknown = sorted(set(raw) - set(DELIVERY_KEYS))
    if unknown:
        raise DeliveryConfigError(f"delivery: unknown keys {unknown}")

    def probability(key: str) -> float:
        value = raw.get(key, 0.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise DeliveryConfigError(f"delivery: '{key}' is a probability in [0, 1)")
        return float(value)

    def positive(key: str) -> int | None:
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise DeliveryConfigError(f"delivery: '{key}' is a positive integer")
        return value

    def micros(key: str, default: int) -> int:
        return seconds(raw[key], f"delivery.{key}") * 1_000_000 if key in raw else default

    def windows(key: str) -> tuple[Window, ...]:
        out = []
        for i, w in enumerate(raw.get(key, [])):
            where = f"delivery.{key}[{i}]"
            if "at" not in w or "for" not in w:
                raise DeliveryConfigError(f"{where}: needs 'at' and 'for'")
            agent = w.get("agent")
            if agent is not None and agent not in agents:
                raise DeliveryConfigError(f"{where}: '{agent}' is not an Agent")
            at = start_us + seconds(w["at"], where) * 1_000_000
            out.append(
                Window(
                    at_us=at,
                    until_us=at + seconds(w["for"], where) * 1_000_000,
                    agent=agent,
                    grace_us=seconds(w.get("grace", 0), where) * 1_000_000,
                )
            )
        return tuple(out)

    return DeliveryConfig(
        duplicate=probability("duplicate"),
        reorder=probability("reorder"),
        delay=probability("delay"),
        max_delay_us=micros("max_delay", 5_000_000),
        drop=probability("drop"),
        redeliver_after_us=micros("redeliver_after", 10_000_000),
        online_window=positive("online_window"),
        group_buffer=positive("group_buffer"),
        frames_per_round=positive("frames_per_round"),
        retry_after_us=micros("retry_after", 1_000_000),
        disconnects=windows("disconnects"),
        outages=windows("outages"),
        validate_frames=bool(raw.get("validate_frames", True)),
    )


__all__ = ["DELIVERY_KEYS", "DeliveryConfig", "DeliveryConfigError", "Window", "parse_delivery"]
