"""A verified Command, viewed through typed fields, and the Event drafts handlers return.

``CommandView`` is built only from a document that passed the six stages; ``Draft`` is what a
handler proposes, and the pipeline turns each draft into a signed Group Event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..protocol.timestamps import Timestamp, parse_timestamp


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandView:
    """The members of a verified Command the Authority reads, typed."""

    document: dict[str, Any]
    signing_hash: str
    action_id: str
    actor_type: str
    actor_id: str
    kind: str
    correlation_id: str
    issued_at: Timestamp
    payload: dict[str, Any]
    group_id: str | None = None
    session_epoch: int | None = None
    membership_epoch: int | None = None
    coordinator_epoch: int | None = None
    expected_revision: int | None = None
    work_item_id: str | None = None
    conversation_id: str | None = None

    @classmethod
    def from_document(cls, document: dict[str, Any], signing_hash: str) -> CommandView:
        """View a schema-valid, verified Command document."""
        return cls(
            document=document,
            signing_hash=signing_hash,
            action_id=document["actionId"],
            actor_type=document["actor"]["type"],
            actor_id=document["actor"]["id"],
            kind=document["kind"],
            correlation_id=document["correlationId"],
            issued_at=parse_timestamp(document["issuedAt"]),
            payload=document["payload"],
            group_id=document.get("groupId"),
            session_epoch=document.get("sessionEpoch"),
            membership_epoch=document.get("membershipEpoch"),
            coordinator_epoch=document.get("coordinatorEpoch"),
            expected_revision=document.get("expectedRevision"),
            work_item_id=document.get("workItemId"),
            conversation_id=document.get("conversationId"),
        )

    @property
    def actor(self) -> dict[str, str]:
        """The actor object."""
        return {"type": self.actor_type, "id": self.actor_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Draft:
    """An Event a handler wants appended.

    ``aggregate`` names the aggregate whose revision the Event advances (``("work_item", id)``
    or ``("mission", id)``); ``None`` leaves revisions alone and stamps the Mission's current
    revision. ``group_id=None`` makes an Organization-scoped Event (no sequence, no revision).
    ``cause`` defaults to the Command; ``actor`` defaults to the Command's actor.
    """

    kind: str
    payload: dict[str, Any]
    group_id: str | None
    work_item_id: str | None = None
    conversation_id: str | None = None
    aggregate: tuple[str, str] | None = None
    from_state: str | None = None
    to_state: str | None = None
    cause: tuple[str, str] | None = None
    actor: dict[str, str] | None = None
    extensions: dict[str, Any] = field(default_factory=dict)


def item_draft(
    item: Any,
    kind: str,
    *,
    to: str | None = None,
    group_id: str | None = None,
    cause: tuple[str, str] | None = None,
    actor: dict[str, str] | None = None,
    **payload: Any,
) -> Draft:
    """A Draft about one WorkItem: it advances the item's revision, names the item, and, when
    ``to`` is given, records the move from the item's current state to ``to``. The payload
    always starts with ``missionId`` and ``workItemId``."""
    return Draft(
        kind=kind,
        group_id=group_id or item.group_id,
        work_item_id=item.work_item_id,
        aggregate=("work_item", item.work_item_id),
        from_state=None if to is None else str(item.state),
        to_state=to,
        cause=cause,
        actor=actor,
        payload={"missionId": item.mission_id, "workItemId": item.work_item_id, **payload},
    )
