"""Signed Group Snapshots for the bounded online window (§7.4, §16; MWP-WRK-030).

The Group log keeps every Event forever; the delivery bus keeps only a bounded *online window*
of each Group. Events older than the window's retention point are served only through a Group
Snapshot signed by the Group Authority (``group-snapshot.schema.json``): it names the Group, the
sequence it runs through, the IDs of the Events it covers, a policy log, and ``stateHash``, the
``sha256:`` of the snapshot body's RFC 8785 bytes. The body holds the signed Events themselves
(a restored agent folds them exactly as if they had been delivered, so its projections equal
those of an agent that saw every Event).

A ``CURSOR_TOO_OLD`` error carries a *snapshot reference*: the snapshot ID, Group, sequence and
the ``sha256:`` of the signed snapshot document. ``verify_snapshot`` checks, in order, the
reference hash, the snapshot signature (six stages of §6.4, Group Authority as signer), the
body hash against ``stateHash``, the Event IDs and every Event's own signature; any failure is a
section-19 error and nothing is restored. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..authority.organization import Organization
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.hashing import sha256_id
from ..protocol.ids import derived_uuid
from ..protocol.jcs import canonicalize
from ..protocol.registry import Registry
from ..protocol.signing import profile_for, verify_parsed

SNAPSHOT_PROFILE = "group-snapshot"


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotBundle:
    """A signed Group Snapshot and the body its ``stateHash`` names."""

    snapshot: dict[str, Any]
    body: dict[str, Any]

    @property
    def through_sequence(self) -> int:
        """The last Group sequence the snapshot covers."""
        return int(self.snapshot["throughSequence"])

    def reference(self) -> dict[str, Any]:
        """The signed snapshot reference an ``ERROR CURSOR_TOO_OLD`` frame carries."""
        return {
            "snapshotId": self.snapshot["snapshotId"],
            "groupId": self.snapshot["groupId"],
            "throughSequence": self.through_sequence,
            "snapshotHash": sha256_id(canonicalize(self.snapshot)),
        }


def body_of(group_id: str, events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The snapshot body: the Group, its last archived sequence and the signed Events."""
    return {
        "groupId": group_id,
        "throughSequence": int(events[-1]["sequence"]),
        "events": [dict(e) for e in events],
    }


def build_snapshot(
    org: Organization,
    group_id: str,
    events: Sequence[Mapping[str, Any]],
    created_at: str,
    *,
    online_window: int,
) -> SnapshotBundle:
    """Sign a snapshot of ``events`` (sequences k..n of ``group_id``, in order: from 1, or
    from a late joiner's visibility start k) as the Group Authority."""
    first = int(events[0]["sequence"]) if events else 1
    if not events or [int(e["sequence"]) for e in events] != list(
        range(first, first + len(events))
    ):
        raise ValueError("a snapshot covers a Group's Events in sequence without a gap")
    body = body_of(group_id, events)
    through = body["throughSequence"]
    # One from sequence 1 keeps its historical ID; one from a visibility start names it.
    scope = str(through) if first == 1 else f"{first}..{through}"
    authority = org.authority
    unsigned = {
        "snapshotId": derived_uuid(org.organization_id, "group-snapshot", group_id, scope),
        "groupId": group_id,
        "throughSequence": through,
        "eventIds": [e["eventId"] for e in events],
        "stateHash": sha256_id(canonicalize(body)),
        "policyLog": [
            {
                "entryId": derived_uuid(
                    org.organization_id, "group-snapshot-policy", group_id, str(through)
                ),
                "decision": (
                    f"Online retention: Events {first}..{through} of this Group leave the online "
                    "window and are served through this snapshot; the Group log keeps them."
                ),
                "actor": authority.actor,
                "occurredAt": created_at,
                "details": {"onlineWindow": online_window, "throughSequence": through},
            }
        ],
        "createdBy": authority.actor,
        "createdAt": created_at,
    }
    return SnapshotBundle(snapshot=org.sign(SNAPSHOT_PROFILE, authority, unsigned), body=body)


def _violation(text: str, **details: Any) -> ProtocolError:
    return ProtocolError(
        ErrorCode.PROTOCOL_VIOLATION,
        text + " Nothing was restored.",
        details=details,
        rule="§16 the Agent verifies the snapshot's hash and signature before restoring",
    )


def verify_snapshot(
    bundle: SnapshotBundle, reference: Mapping[str, Any], registry: Registry
) -> list[dict[str, Any]]:
    """Check ``bundle`` against the reference and the Registry; return its Events, in order."""
    snapshot, body = bundle.snapshot, bundle.body
    actual = sha256_id(canonicalize(snapshot))
    if actual != reference.get("snapshotHash"):
        raise _violation(
            f"The snapshot's hash is {actual}, not {reference.get('snapshotHash')} as the "
            "CURSOR_TOO_OLD reference says.",
            expected=reference.get("snapshotHash"),
            actual=actual,
        )
    verified = verify_parsed(profile_for(SNAPSHOT_PROFILE), snapshot, registry)
    if verified.principal.type != "service":
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN, "A Group Snapshot is signed by the Group Authority service."
        )
    state_hash = sha256_id(canonicalize(body))
    if state_hash != snapshot["stateHash"]:
        raise _violation(
            f"The snapshot body hashes to {state_hash}, but the signed stateHash is "
            f"{snapshot['stateHash']}: the body was altered.",
            expected=snapshot["stateHash"],
            actual=state_hash,
        )
    events = list(body["events"])
    if [e["eventId"] for e in events] != snapshot["eventIds"] or (
        body["groupId"] != snapshot["groupId"]
        or body["throughSequence"] != snapshot["throughSequence"]
    ):
        raise _violation("The snapshot body does not list the Events the signed snapshot names.")
    profile = profile_for("event")
    for e in events:
        verify_parsed(profile, e, registry)
    return events


__all__ = ["SNAPSHOT_PROFILE", "SnapshotBundle", "body_of", "build_snapshot", "verify_snapshot"]
