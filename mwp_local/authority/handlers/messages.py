"""Conversation Messages (§9): recorded, immutable, and never authority.

A Message is only conversation: it carries ``authority: false`` and changes no structured state
(a Message saying "deploy now" authorizes nothing). Corrections, retractions and redactions are
new Messages and Events that reference the original.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import replace
from typing import Any

from ...protocol.documents import validate
from ...protocol.documents.kinds import CommandKind as C
from ...protocol.documents.kinds import EventKind as E
from ...protocol.errors import ProtocolError
from .. import offline
from ..command import CommandView, Draft
from ..context import Context, forbidden, invalid, payload_field
from ..registry import command

_KIND: dict[str, str] = {
    E.MESSAGE_POSTED: "message",
    E.MESSAGE_CORRECTED: "correction",
    E.MESSAGE_RETRACTED: "retraction",
    E.MESSAGE_REDACTED: "redaction",
}


def _conversation(ctx: Context, cmd: CommandView) -> str:
    group = ctx.group(cmd.group_id)
    conversation = (
        cmd.conversation_id or cmd.payload.get("conversationId") or group.main_conversation_id
    )
    if conversation != group.main_conversation_id and not any(
        i.conversation_id == conversation
        for i in ctx.state.work_items.values()
        if i.group_id == group.group_id
    ):
        raise invalid(f"Conversation {conversation} does not belong to this Group.")
    return str(conversation)


def _message(
    ctx: Context, cmd: CommandView, event_kind: str, conversation: str, target: str | None
) -> dict[str, Any]:
    mission = ctx.mission_of(cmd.group_id)
    message: dict[str, Any] = {
        "messageId": cmd.payload.get("messageId") or ctx.new_id("message"),
        "missionId": mission.mission_id,
        "groupId": cmd.group_id,
        "conversationId": conversation,
        "author": cmd.actor,
        "kind": _KIND[event_kind],
        "authority": False,
        "content": cmd.payload.get("content") or [{"type": "text", "text": str(event_kind)}],
        "committedAt": ctx.now.text,
    }
    if target is not None:
        message["targetMessageId"] = target
    for optional in ("mentions", "references", "reason"):
        if optional in cmd.payload:
            message[optional] = cmd.payload[optional]
    if message["messageId"] in ctx.state.messages:
        raise invalid(f"Message {message['messageId']} already exists.")
    try:
        validate("message", message)
    except ProtocolError as exc:
        raise invalid(f"The Message is not valid: {exc.explanation}") from None
    return message


@command(C.MESSAGE_POST, actors=("agent", "human"), extensions=(offline.BOUNDED_OFFLINE,))
def post(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Post a completed Message to a Conversation of the Group.

    A progress Message a Worker buffered offline (bounded-offline binding, §11.5) must stay in
    its WorkItem's Conversation; its offline usage is charged first, in the same transaction
    (``mwp_local.authority.offline``)."""
    payload_field(cmd, "content", list)
    binding = offline.binding_of(cmd)
    item = offline.check(ctx, cmd, binding)[0] if binding is not None else None
    conversation = _conversation(ctx, cmd)
    if item is not None and conversation != item.conversation_id:
        raise invalid(
            f"Buffered progress for {item.work_item_id} belongs in its WorkItem Conversation "
            f"{item.conversation_id}, not in {conversation}.",
            rule="§11.5 bounded offline execution",
        )
    message = _message(ctx, cmd, E.MESSAGE_POSTED, conversation, None)
    draft = Draft(
        kind=E.MESSAGE_POSTED,
        group_id=cmd.group_id,
        conversation_id=conversation,
        work_item_id=cmd.payload.get("workItemId"),
        payload={"missionId": message["missionId"], "message": message},
    )
    if item is None or binding is None:
        yield draft
        return
    usage = offline.charge(ctx, cmd, item, binding)  # BUDGET_EXCEEDED before any draft
    if usage is not None:
        yield usage
    yield replace(draft, extensions={offline.BOUNDED_OFFLINE: offline.extension_of(cmd)})


def _follow_up(ctx: Context, cmd: CommandView, kind: str) -> Generator[Draft, Any, None]:
    target = payload_field(cmd, "targetMessageId")
    original = ctx.state.messages.get(target)
    if original is None or original["groupId"] != cmd.group_id:
        raise invalid(f"There is no Message {target} in this Group.")
    mission = ctx.mission_of(cmd.group_id)
    if kind == E.MESSAGE_REDACTED:
        if cmd.actor_id not in (mission.owner_id, mission.coordinator_agent_id):
            raise forbidden("Only the MissionOwner or Coordinator may redact (§9.1).")
        payload_field(cmd, "reason")
    elif original["author"]["id"] != cmd.actor_id:
        raise forbidden("Only the author may correct or retract its Message.")
    message = _message(ctx, cmd, kind, original["conversationId"], target)
    yield Draft(
        kind=kind,
        group_id=cmd.group_id,
        conversation_id=original["conversationId"],
        payload={"missionId": mission.mission_id, "message": message},
    )


@command(C.MESSAGE_CORRECT, actors=("agent", "human"))
def correct(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Append a correction of an earlier Message."""
    payload_field(cmd, "content", list)
    yield from _follow_up(ctx, cmd, E.MESSAGE_CORRECTED)


@command(C.MESSAGE_RETRACT, actors=("agent", "human"))
def retract(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Append a retraction of an earlier Message."""
    yield from _follow_up(ctx, cmd, E.MESSAGE_RETRACTED)


@command(C.MESSAGE_REDACT, actors=("agent", "human"))
def redact(ctx: Context, cmd: CommandView) -> Generator[Draft, Any, None]:
    """Append an auditable redaction (with a policy reason)."""
    yield from _follow_up(ctx, cmd, E.MESSAGE_REDACTED)
