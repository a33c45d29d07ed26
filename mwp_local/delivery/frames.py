"""The §17 frames the in-process delivery bus exchanges, as real wire documents.

The sandbox has no WebSocket/TLS transport, but the bus between the Group log and each agent
speaks the frame documents of §17: ``SUBSCRIBE`` (per-Group ``afterSequence``), ``EVENT``,
``ACK`` (Cursors), ``PING`` (nonce and echo) and ``ERROR`` (a section-19 Error document, for
``CURSOR_TOO_OLD`` with its signed snapshot reference or ``BACKPRESSURE`` with retry guidance).
Each builder returns a plain JSON value and, when asked, checks it against
``websocket-frame.schema.json`` with our own validators. Frame IDs are derived deterministically
from who sends the frame and a counter, so step mode stays byte-identical for a seed. Pure: no
I/O, no clocks (the caller supplies every time).
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from typing import Any

from ..protocol.documents import validate, validate_shape
from ..protocol.documents.frame import EVENT_FRAME_ENVELOPE
from ..protocol.errors import ProtocolError
from ..protocol.ids import derived_uuid

PROTOCOL_VERSION = "0.1"
FRAME_SCHEMA = "websocket-frame"


class FrameIds:
    """Deterministic frame IDs for one sender of one Organization (``urn:uuid:`` derived from
    the Organization ID, the sender's name and a counter, so no two sandboxes share one)."""

    def __init__(self, organization_id: str, sender: str) -> None:
        self.organization_id = organization_id
        self.sender = sender
        self.count = 0

    def next(self) -> str:
        """A fresh frame ID."""
        self.count += 1
        return derived_uuid(self.organization_id, "frame", self.sender, str(self.count))


def check(frame: dict[str, Any]) -> dict[str, Any]:
    """Validate ``frame`` against ``websocket-frame.schema.json`` and return it."""
    validate(FRAME_SCHEMA, frame)
    return frame


def check_envelope(frame: dict[str, Any]) -> dict[str, Any]:
    """``check`` for a frame whose Event document was validated on its own already (the bus
    checks each Event once, as it is published, and then every frame it sends): an ``EVENT``
    frame is checked with its ``event`` member taken as any object, any other frame in full."""
    if frame.get("frameType") == "EVENT":
        validate_shape(EVENT_FRAME_ENVELOPE, frame, FRAME_SCHEMA)
        return frame
    return check(frame)


def _base(frame_id: str, frame_type: str) -> dict[str, Any]:
    return {"protocolVersion": PROTOCOL_VERSION, "frameId": frame_id, "frameType": frame_type}


def subscribe(frame_id: str, subscription_id: str, positions: Mapping[str, int]) -> dict[str, Any]:
    """``SUBSCRIBE``: replay each Group after its ``afterSequence`` (the receiver's Cursor)."""
    return {
        **_base(frame_id, "SUBSCRIBE"),
        "subscriptionId": subscription_id,
        "groups": [{"groupId": g, "afterSequence": int(s)} for g, s in sorted(positions.items())],
    }


def event(frame_id: str, document: dict[str, Any]) -> dict[str, Any]:
    """``EVENT``: one signed Event document, unchanged."""
    return {**_base(frame_id, "EVENT"), "event": document}


def ack(frame_id: str, cursors: Mapping[str, int], sent_at: str) -> dict[str, Any]:
    """``ACK``: the receiver's durable Cursors (Groups with a Cursor of 0 are left out)."""
    return {
        **_base(frame_id, "ACK"),
        "acknowledgements": [
            {"groupId": g, "sequence": int(s)} for g, s in sorted(cursors.items()) if s > 0
        ],
        "sentAt": sent_at,
    }


def nonce_for(*parts: str) -> str:
    """A deterministic base64url nonce (16 bytes) derived from ``parts``."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def ping(frame_id: str, nonce: str, sent_at: str, *, reply_to: str | None = None) -> dict[str, Any]:
    """``PING``: liveness; a reply echoes the peer's nonce in ``replyToNonce``."""
    frame = {**_base(frame_id, "PING"), "nonce": nonce, "sentAt": sent_at}
    if reply_to is not None:
        frame["replyToNonce"] = reply_to
    return frame


def error(
    frame_id: str, problem: ProtocolError, occurred_at: str, *, group_id: str | None = None
) -> dict[str, Any]:
    """``ERROR``: a section-19 Error document (its details carry e.g. the snapshot reference)."""
    return {
        **_base(frame_id, "ERROR"),
        "error": problem.to_document(occurred_at, group_id=group_id),
    }


def acknowledged(frame: Mapping[str, Any]) -> dict[str, int]:
    """The Cursors an ``ACK`` frame reports, by Group."""
    return {a["groupId"]: int(a["sequence"]) for a in frame["acknowledgements"]}


__all__ = [
    "FRAME_SCHEMA",
    "PROTOCOL_VERSION",
    "FrameIds",
    "ack",
    "acknowledged",
    "check",
    "check_envelope",
    "error",
    "event",
    "nonce_for",
    "ping",
    "subscribe",
]
