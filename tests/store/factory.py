"""Synthetic log records for store tests: valid-looking strings, any JSON text as documents.

A ``LogFactory`` hands out Events with the next sequence of their Group, so batches it builds
commit cleanly unless a test breaks them on purpose.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mwp_local.authority.records import EventRecord, ReceiptRecord, RejectionRecord
from mwp_local.store.records import Batch, ProjectionDelta

GROUP_A = "urn:mwp:group:acme/Research"
GROUP_B = "https://example.org/groups/b?x=1#frag"
BASE_US = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z


def iso(us: int) -> str:
    """RFC 3339 text of a microsecond timestamp (UTC, 'Z')."""
    seconds, micros = divmod(us, 1_000_000)
    days, rest = divmod(seconds, 86_400)
    # 2026-01-01 is day 0 here; good enough for distinct, ordered, valid-looking text.
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"2026-01-{1 + days % 28:02d}T{hours:02d}:{minutes:02d}:{secs:02d}.{micros:06d}Z"


class LogFactory:
    """Makes Events, receipts and rejections with unique IDs and per-Group sequences."""

    def __init__(self, sequences: Mapping[str, int] | None = None, start: int = 0) -> None:
        self.sequences: dict[str, int] = dict(sequences or {})
        self.counter = start

    def event(
        self,
        group_id: str | None = GROUP_A,
        *,
        kind: str = "message.posted",
        sequence: int | None = None,
        work_item_id: str | None = None,
        from_state: str | None = None,
        to_state: str | None = None,
        payload: Mapping[str, Any] | None = None,
    ) -> EventRecord:
        """The next Event of ``group_id`` (``None``: Organization-scoped)."""
        self.counter += 1
        n = self.counter
        if group_id is not None and sequence is None:
            sequence = self.sequences.get(group_id, 0) + 1
        if group_id is not None and sequence is not None:
            self.sequences[group_id] = max(self.sequences.get(group_id, 0), sequence)
        us = BASE_US + n * 1_000
        body = dict(payload or {"text": f"héllo {n} ✓", "n": n})
        payload_json = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        envelope: dict[str, Any] = {
            "event_id": f"urn:uuid:00000000-0000-4000-8000-{n:012d}",
            "kind": kind,
            "occurred_at": iso(us),
            "payload": body,
        }
        if group_id is not None:
            envelope |= {"group_id": group_id, "sequence": sequence, "aggregate_revision": n}
        document = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return EventRecord(
            event_id=envelope["event_id"],
            group_id=group_id,
            sequence=sequence if group_id is not None else None,
            aggregate_revision=n if group_id is not None else None,
            kind=kind,
            occurred_at=iso(us),
            occurred_at_us=us,
            actor_type="agent",
            actor_id=f"urn:mwp:agent:worker-{n % 3}",
            cause_type="command",
            cause_id=f"urn:uuid:10000000-0000-4000-8000-{n:012d}",
            correlation_id=f"urn:uuid:20000000-0000-4000-8000-{n % 5:012d}",
            work_item_id=work_item_id,
            mission_id="urn:mwp:mission:m1" if group_id is not None else None,
            payload_json=payload_json,
            document=document,
            from_state=from_state,
            to_state=to_state,
        )

    def receipt(
        self,
        events: Sequence[EventRecord] = (),
        *,
        actor_id: str = "urn:mwp:agent:worker-1",
        action_id: str | None = None,
        group_id: str | None = GROUP_A,
    ) -> ReceiptRecord:
        """A receipt for the Command that produced ``events``."""
        self.counter += 1
        action_id = action_id or f"urn:uuid:30000000-0000-4000-8000-{self.counter:012d}"
        return ReceiptRecord(
            actor_id=actor_id,
            action_id=action_id,
            command_hash="sha256:" + f"{self.counter:064x}",
            command_document=json.dumps({"action_id": action_id, "kind": "message.post"}),
            kind="message.post",
            group_id=group_id,
            accepted_at=iso(BASE_US + self.counter * 1_000),
            event_ids=tuple(e.event_id for e in events),
            receipt_json=json.dumps({"action_id": action_id, "status": "accepted"}),
        )

    def rejection(
        self, *, code: str = "STALE_REVISION", details_json: str = "{}"
    ) -> RejectionRecord:
        """A refused Command."""
        self.counter += 1
        return RejectionRecord(
            received_at=iso(BASE_US + self.counter * 1_000),
            actor_id="urn:mwp:agent:worker-2",
            action_id=f"urn:uuid:40000000-0000-4000-8000-{self.counter:012d}",
            kind="work.claim",
            group_id=GROUP_A,
            work_item_id="urn:mwp:work-item:w1",
            code=code,
            explanation="expected revision 3, found 4",
            rule="expected_revision",
            stage="admission",
            reason=None,
            details_json=details_json,
            command_text='{"kind":"work.claim"}',
        )

    def batch(
        self,
        n_events: int = 3,
        group_id: str | None = GROUP_A,
        *,
        receipt: bool = True,
        rejections: int = 0,
        projections: ProjectionDelta | None = None,
    ) -> Batch:
        """A Batch of ``n_events`` Events of one Group with one receipt covering them."""
        events = tuple(self.event(group_id) for _ in range(n_events))
        return Batch(
            events=events,
            receipts=(self.receipt(events, group_id=group_id),) if receipt else (),
            rejections=tuple(self.rejection() for _ in range(rejections)),
            projections=projections or ProjectionDelta(),
        )


def mission_row(mission_id: str, **values: Any) -> dict[str, Any]:
    """A ``proj_missions`` row with a few columns set."""
    return {
        "mission_id": mission_id,
        "group_id": GROUP_A,
        "state": "active",
        "revision": 1,
    } | values


def budget_row(scope_id: str, dimension: str, used: float, limit: float = 10.0) -> dict[str, Any]:
    """A ``proj_budgets`` row (three-column key)."""
    return {
        "scope_type": "work_item",
        "scope_id": scope_id,
        "dimension": dimension,
        "limit_value": limit,
        "used_value": used,
        "remaining_value": limit - used,
    }
