"""Reducers of Organization-scoped and lease Events, and of Conversation Messages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...protocol.documents.kinds import EventKind as E
from ...protocol.documents.kinds import ExtensionEventKind as XE
from ...protocol.registry import KeyBinding, Principal
from ...protocol.timestamps import parse_timestamp
from ..evolve import Fold, reducer
from ..model import AgentRecord
from ..state import AuthorityState
from .common import item_of, lease_of_type, move


@reducer(XE.AGENT_CARD_REGISTERED)
def _agent_card(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
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


@reducer(XE.SESSION_OPENED)
def _session(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    agent = state.agents[event["payload"]["agentId"]]
    state.put(
        "agents", agent.agent_id, replace(agent, session_epoch=event["payload"]["sessionEpoch"])
    )


@reducer(XE.WORK_EXECUTION_LEASE_REVOKED)
def _lease_revoked(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """A revocation that records a row (a replacement Session's, §11.3) moves the item; the
    revoked lease itself is folded from ``payload.leases``."""
    item = item_of(state, event)
    if fold.step is not None:
        move(
            state,
            event,
            item,
            fold,
            execution_lease_id=None,
            ownership_lease_id=lease_of_type(event, "ownership"),
        )


@reducer(XE.LEASE_EXPIRED)
def _lease_expired(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """Expiry is recorded on the lease itself (``payload.leases``); the state stays."""


@reducer(E.MESSAGE_POSTED, E.MESSAGE_CORRECTED, E.MESSAGE_RETRACTED, E.MESSAGE_REDACTED)
def _message(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    message = event["payload"]["message"]
    state.put("messages", message["messageId"], message)
