"""Reducers of Organization-scoped and lease Events, and of Conversation Messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.registry import KeyBinding, Principal
from ...protocol.tables import WorkItemState, WorkTransition
from ...protocol.timestamps import parse_timestamp
from ..evolve import reducer
from ..model import AgentRecord
from ..state import AuthorityState
from .common import item_of, lease_of_type, move

W = WorkItemState
T = WorkTransition


@reducer("ext.missionweaveprotocol.registry.agent_card_registered")
def _agent_card(state: AuthorityState, event: dict[str, Any]) -> None:
    card = event["payload"]["agentCard"]
    known = state.agents.get(card["agentId"])
    state.put(
        "agents",
        card["agentId"],
        AgentRecord(
            agent_id=card["agentId"],
            card_version=card["cardVersion"],
            capabilities=tuple((c["id"], c["version"]) for c in card["capabilities"]),
            max_concurrency=card["maxConcurrency"],
            session_epoch=known.session_epoch if known else 0,
        ),
    )
    registry = state.registry
    for key in card["publicKeys"]:
        if registry.lookup(key["keyId"]) is not None:
            continue
        registry = registry.register(
            KeyBinding(
                key_id=key["keyId"],
                principal=Principal(type="agent", id=card["agentId"]),
                algorithm=key["algorithm"],
                public_key=key["publicKey"],
                valid_from=parse_timestamp(key["validFrom"]),
            )
        )
    if registry is not state.registry:
        state.set_registry(registry)


@reducer("ext.missionweaveprotocol.identity.session_opened")
def _session(state: AuthorityState, event: dict[str, Any]) -> None:
    agent = state.agents[event["payload"]["agentId"]]
    state.put(
        "agents", agent.agent_id, replace(agent, session_epoch=event["payload"]["sessionEpoch"])
    )


@reducer("ext.missionweaveprotocol.core.lease_revoked")
def _lease_revoked(state: AuthorityState, event: dict[str, Any]) -> None:
    item = item_of(state, event)
    if event["payload"].get("reason") == "session_replaced":
        move(
            state,
            event,
            item,
            T.SESSION_REPLACED,
            W.QUEUED,
            execution_lease_id=None,
            ownership_lease_id=lease_of_type(event, "ownership"),
        )


@reducer("ext.missionweaveprotocol.core.lease_expired")
def _lease_expired(state: AuthorityState, event: dict[str, Any]) -> None:
    """Expiry is recorded on the lease itself (``payload.leases``); the state stays."""


@reducer("message.posted", "message.corrected", "message.retracted", "message.redacted")
def _message(state: AuthorityState, event: dict[str, Any]) -> None:
    message = event["payload"]["message"]
    state.put("messages", message["messageId"], message)
