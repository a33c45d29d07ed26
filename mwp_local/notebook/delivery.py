"""The delivery bench of notebook 07: the real delivery bus (``mwp_local.delivery``) with
listening agents, on the signed Events of a Group log (the bus-only parts, ``new_bus``,
``drive``, ``Slow`` and ``schema_verdict``, are ``mwp_local.delivery.by_hand``'s).

``listener`` makes an agent runtime that only listens (its policy never acts) behind a real
``BusClient``; ``Tape`` records every frame a receiver is handed, in arrival order, and every
``ACK`` it answers with; ``frame_html`` draws a §17 frame with its schema verdict;
``projections`` puts a replica's projection rows in a comparable form.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any

from ..agents.base import BasePolicy
from ..agents.bus_client import BusClient
from ..agents.runtime import AgentRuntime
from ..authority.organization import Organization
from ..delivery import frames
from ..delivery.bus import DeliveryBus
from ..delivery.by_hand import SECOND, T0, Slow, drive, new_bus, schema_verdict
from ..delivery.snapshots import SnapshotBundle
from ..render.html import STYLE
from ..store.agent_store import MemoryLocalStore
from ..store.projection_rows import comparable_rows as projections
from .coverage import Html


class Listening(BasePolicy):
    """A policy that only listens: the runtime folds what it is delivered and never acts."""


def listener(org: Organization, name: str, bus: DeliveryBus | None = None) -> BusClient:
    """Agent ``name`` listening behind a real ``BusClient`` (with a local store for its durable
    Cursors); it fetches snapshots from ``bus``."""
    runtime = AgentRuntime(org, org.get(name), Listening(), local=MemoryLocalStore())

    def fetch(snapshot_id: str) -> SnapshotBundle:
        if bus is None:
            raise LookupError("no bus to fetch a snapshot from")
        return bus.snapshot(snapshot_id)

    return BusClient(runtime, fetch=fetch)


@dataclass
class Tape:
    """Wraps a receiver: records what it is handed (``(frameType, Group, sequence)``; None
    for what an Organization Event or a non-EVENT frame lacks) and each ``ACK`` it sends
    (with how many frames it had been handed by then)."""

    inner: BusClient
    handed: list[tuple[str, str | None, int | None]] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)
    acks: list[tuple[int, dict[str, int]]] = field(default_factory=list)

    @property
    def agent_id(self) -> str:
        return self.inner.agent_id

    def receive(
        self, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        event = frame.get("event", {})
        self.handed.append((frame["frameType"], event.get("groupId"), event.get("sequence")))
        self.frames.append(frame)
        return self.inner.receive(frame, now_us, event_text)

    def acknowledge(self, now_us: int) -> dict[str, Any] | None:
        ack = self.inner.acknowledge(now_us)
        if ack is not None:
            self.acks.append((len(self.handed), frames.acknowledged(ack)))
        return ack

    def subscribe(self, now_us: int) -> dict[str, Any] | None:
        return self.inner.subscribe(now_us)

    def arrivals(self, group: str) -> list[int]:
        """The sequences of ``group`` handed, in arrival order (duplicates and reordering
        visible)."""
        return [s for kind, g, s in self.handed if kind == "EVENT" and g == group and s]

    def acked(self, group: str) -> list[int]:
        """The Cursors this receiver acknowledged for ``group``, in order."""
        return [cursors[group] for _, cursors in self.acks if group in cursors]

    def acks_over_a_gap(self, group: str, restored: int = 0) -> list[int]:
        """Acknowledged Cursors of ``group`` higher than the contiguous run of sequences
        handed before them (or restored from a snapshot through ``restored``): none, ever."""
        over = []
        for position, cursors in self.acks:
            if group not in cursors:
                continue
            have = set(range(1, restored + 1))
            have |= {s for k, g, s in self.handed[:position] if k == "EVENT" and g == group and s}
            contiguous = 0
            while contiguous + 1 in have:
                contiguous += 1
            if cursors[group] > contiguous:
                over.append(cursors[group])
        return over


def frame_html(*shown: dict[str, Any], limit: int = 1200) -> Html:
    """Frames as documents, each with its verdict against the official websocket-frame
    schema (long members shortened for reading; the verdict is for the whole frame)."""
    boxes = []
    for frame in shown:
        verdict = schema_verdict(frame)
        colour = "#2ca02c" if verdict == "valid" else "#d62728"
        text = json.dumps(_short(frame), indent=1, ensure_ascii=False)
        if len(text) > limit:
            text = text[:limit] + "\n…"
        boxes.append(
            f'<div style="border-left:4px solid {colour};padding-left:8px;margin:4px 0">'
            f"<b>{escape(frame.get('frameType', '?'))}</b> — websocket-frame.schema.json: "
            f"<b>{escape(verdict)}</b><pre>{escape(text)}</pre></div>"
        )
    return Html(f'{STYLE}<div class="mwp">{"".join(boxes)}</div>')


def _short(value: Any) -> Any:
    """``value`` with an embedded Event reduced to its headline members."""
    if isinstance(value, dict):
        if "eventId" in value and "payload" in value:
            keep = ("eventId", "groupId", "sequence", "kind", "occurredAt")
            return {
                **{k: value[k] for k in keep if k in value},
                "…": "the rest of the signed Event",
            }
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_short(v) for v in value]
    return value


__all__ = [
    "SECOND",
    "T0",
    "Listening",
    "Slow",
    "Tape",
    "drive",
    "frame_html",
    "listener",
    "new_bus",
    "projections",
    "schema_verdict",
]
