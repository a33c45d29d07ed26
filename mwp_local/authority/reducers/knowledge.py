"""Reducers of reusable-knowledge and cross-Group forwarding Events (§13.3, MWP-WRK-028).

The two facts that widen who may read an Artifact's content are kept in ``state.meta`` under
namespaced keys (``knowledge_key``, ``forward_key``), so they fold and roll back like every other
write; ``mwp_local.authority.isolation`` reads them. A ``…knowledge_received`` Event only informs
the target Group; the permission is the ``…knowledge_forwarded`` fact in the source Group.
"""

from __future__ import annotations

from typing import Any

from ...protocol.documents.kinds import ExtensionEventKind as XE
from ..evolve import Fold, reducer
from ..state import AuthorityState

PUBLISHED = XE.KNOWLEDGE_PUBLISHED
FORWARDED = XE.KNOWLEDGE_FORWARDED
RECEIVED = XE.KNOWLEDGE_RECEIVED


def knowledge_key(artifact_hash: str) -> str:
    """The ``state.meta`` key of an Artifact published as Organization knowledge."""
    return f"knowledge:{artifact_hash}"


def forward_key(target_group_id: str, artifact_hash: str) -> str:
    """The ``state.meta`` key of an Artifact forwarded to ``target_group_id``."""
    return f"forwarded:{target_group_id}|{artifact_hash}"


def _fact(event: dict[str, Any]) -> dict[str, Any]:
    return {**event["payload"], "eventId": event["eventId"], "sequence": event["sequence"]}


@reducer(PUBLISHED)
def _published(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    state.put("meta", knowledge_key(event["payload"]["artifactHash"]), _fact(event))


@reducer(FORWARDED)
def _forwarded(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    payload = event["payload"]
    state.put("meta", forward_key(payload["targetGroupId"], payload["artifactHash"]), _fact(event))


@reducer(RECEIVED)
def _received(state: AuthorityState, event: dict[str, Any], fold: Fold) -> None:
    """Informational in the target Group: the grant was folded from the forwarded fact."""
