"""Injected clocks: a virtual clock for step mode, a scaled wall clock for threads mode.

Agents and the Authority never read the time themselves; the driver hands them ``now``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Protocol

from ..protocol.timestamps import Timestamp, format_utc, parse_timestamp


class Clock(Protocol):
    """Something that says what time it is, in microseconds since the Unix epoch."""

    def now_us(self) -> int:
        """The current instant."""
        ...


def timestamp(micros: int) -> Timestamp:
    """A protocol timestamp for an instant."""
    return parse_timestamp(format_utc(micros))


@dataclass
class VirtualClock:
    """Time that moves only when the driver moves it (step mode: fully deterministic)."""

    current_us: int

    def now_us(self) -> int:
        """The current virtual instant."""
        return self.current_us

    def advance_to(self, micros: int) -> None:
        """Move forward (never backward)."""
        if micros > self.current_us:
            self.current_us = micros


@dataclass
class ScaledClock:
    """Wall time, sped up: one real second is ``scale`` simulated seconds (threads mode).

    Readings are rounded to whole milliseconds and never go backward across threads.
    """

    start_us: int
    scale: float = 60.0
    _origin: float = field(default_factory=time.monotonic)
    _last: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def now_us(self) -> int:
        """The current scaled instant."""
        elapsed = (time.monotonic() - self._origin) * self.scale
        micros = self.start_us + int(elapsed * 1_000_000) // 1000 * 1000
        with self._lock:
            self._last = max(self._last, micros)
            return self._last

    def real_seconds(self, simulated_us: int) -> float:
        """How long to really wait for ``simulated_us`` of simulated time."""
        return max(0.0, simulated_us / 1_000_000 / self.scale)
