"""A delivery bench for notebook 07: the real delivery bus (``mwp_local.delivery``) with
listening agents, on the signed Events of a Group log.

``listener`` makes an agent runtime that only listens (its policy never acts) behind a real
``BusClient``; ``Tape`` records every frame a receiver is handed, in arrival order, and every
``ACK`` it answers with; ``drive`` publishes Events a few at a time and runs delivery rounds
until the bus has settled (virtual time jumps from wake-up to wake-up: no sleeping); ``Slow``
is a consumer that never acknowledges (for backpressure). ``frame_html`` draws a §17 frame
with its schema verdict.

Notebook support code, not part of the library: it lives beside the notebooks.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from mwp_local.agents.base import BasePolicy
from mwp_local.agents.bus_client import BusClient
from mwp_local.agents.runtime import AgentRuntime
from mwp_local.authority.organization import Organization
from mwp_local.authority.state import AuthorityState
from mwp_local.delivery import frames
from mwp_local.delivery.bus import DeliveryBus
from mwp_local.delivery.config import DeliveryConfig
from mwp_local.delivery.snapshots import SnapshotBundle, build_snapshot
from mwp_local.protocol.documents import validate
from mwp_local.protocol.errors import ProtocolError
from mwp_local.render.html import STYLE
from mwp_local.store.agent_store import MemoryLocalStore
from mwp_local.store.projection_rows import projection_rows

T0 = 1_784_106_000_000_000  # 2026-07-15T09:00:00Z
SECOND = 1_000_000


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


def new_bus(org: Organization, config: DeliveryConfig, *, seed: int = 1) -> DeliveryBus:
    """A delivery bus whose Group Snapshots are signed with ``org``'s Group Authority key."""

    def snapshot(group: str, events: Sequence[dict[str, Any]], at: str) -> SnapshotBundle:
        return build_snapshot(org, group, events, at, online_window=config.online_window or 0)

    return DeliveryBus(
        config, seed=seed, organization_id=org.organization_id, make_snapshot=snapshot
    )


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


@dataclass
class Slow:
    """A consumer that records frames and never acknowledges."""

    agent_id: str
    frames: list[dict[str, Any]] = field(default_factory=list)

    def receive(
        self, frame: dict[str, Any], now_us: int, event_text: str | None = None
    ) -> list[dict[str, Any]]:
        self.frames.append(frame)
        return []

    def acknowledge(self, now_us: int) -> dict[str, Any] | None:
        return None

    def subscribe(self, now_us: int) -> dict[str, Any] | None:
        return None

    def by_group(self) -> dict[str, int]:
        """EVENT frames received per Group (short names)."""
        out: dict[str, int] = {}
        for f in self.frames:
            if f["frameType"] == "EVENT" and f["event"].get("groupId"):
                short = f["event"]["groupId"].rsplit(":", 1)[-1]
                out[short] = out.get(short, 0) + 1
        return out


def drive(
    bus: DeliveryBus, events: Sequence[dict[str, Any]], *, start: int = T0, chunk: int = 3
) -> int:
    """Publish ``events`` ``chunk`` at a time (one virtual second apart, a delivery round
    after each), then run rounds from wake-up to wake-up until every session has acknowledged
    everything; returns the virtual time reached."""
    now = start
    for i in range(0, len(events), chunk):
        bus.publish(copy.deepcopy(list(events[i : i + chunk])), now)
        bus.pump(now)
        now += SECOND
    for _ in range(100_000):
        bus.pump(now)
        if bus.settled():
            return now
        later = bus.next_wakeup(now)
        if later is None:
            break
        now = later
    raise RuntimeError("the bus did not settle")


def projections(state: AuthorityState) -> dict[str, list[str]]:
    """Every projection row of ``state``, order-free (to compare two replicas)."""
    rows = projection_rows(state)
    return {
        t: sorted(json.dumps(r, sort_keys=True, default=str) for r in v) for t, v in rows.items()
    }


def schema_verdict(frame: dict[str, Any]) -> str:
    """``valid`` or the section-19 error of ``websocket-frame.schema.json`` (our validators)."""
    try:
        validate(frames.FRAME_SCHEMA, frame)
    except ProtocolError as error:
        return f"{error.code.value}: {error.explanation}"
    return "valid"


class _Html:
    def __init__(self, html: str) -> None:
        self.html = html

    def _repr_html_(self) -> str:
        return self.html


def frame_html(*shown: dict[str, Any], limit: int = 1200) -> _Html:
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
    return _Html(f'{STYLE}<div class="mwp">{"".join(boxes)}</div>')


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
