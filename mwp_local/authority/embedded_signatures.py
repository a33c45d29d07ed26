"""Every Signed Document an Event embeds verifies, by the signer §6.4 expects (issue 26 point 5).

An Event's payload carries whole Signed Documents: an Agent Card (``agentCard``), an Artifact
manifest (``artifact``), Evidence (``evidence``, ``reviewEvidence``), an Approval (``approval``),
a Context Package (``contextPackage``, or a Message part that carries one) and a Group Snapshot
(``snapshot``). The Event's own signature covers them as bytes, not their authenticity: an Agent
Card whose own signature does not verify would put a key in the Registry on the Authority's word
alone. ``check`` verifies each one with its §6.4 profile against the Registry as it stands before
the Event (the six stages), and, for the documents whose signer must be authorized and not only
named (an Agent Card and a Group Snapshot: an Organization control service of this
Organization), that authorization; an Agent Card must also belong to this Organization and be
newer than the registered version (``agent_card``, which the registration handler calls too).

The live Authority runs ``check`` on every Event it appends (``Authority.admit``), so an import
of Events from a file, which goes through the same ``admit``, verifies exactly what a live
decision verified; ``problems`` lists the same findings for ``verify-log``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.signing import profile_for, verify_parsed
from .context import Identity
from .embedded import documents_of
from .state import AuthorityState

__all__ = ["SIGNED", "agent_card", "check", "problems", "signed_documents"]

#: Payload member → the §6.4 profile of the Signed Document it holds (a list holds several).
SIGNED: Mapping[str, str] = {
    "agentCard": "agent-card",
    "artifact": "artifact",
    "evidence": "evidence",
    "reviewEvidence": "evidence",
    "approval": "approval",
    "contextPackage": "context-package",
    "snapshot": "group-snapshot",
}
#: Profiles whose signer must be an Organization control service (§6.4: the Agent Card issuer,
#: the archival service that creates a Group Snapshot).
_SERVICE_SIGNED = frozenset({"agent-card", "group-snapshot"})


def signed_documents(event: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """``(where, profile, document)`` for every Signed Document ``event``'s payload embeds."""
    return documents_of(event, SIGNED)


def _refused(where: str, profile: str, why: str, code: ErrorCode, **details: Any) -> ProtocolError:
    return ProtocolError(
        code,
        f"The {profile} document at {where} {why}. An embedded Signed Document is verified on "
        "its own (§6.4), whoever signed the Event that carries it.",
        details={"at": where, "profile": profile, **details},
        rule="§6.4 every Signed Document verifies by its expected signer",
        stage="embedded-signature",
    )


def _one(
    where: str, profile: str, document: Any, state: AuthorityState, identity: Identity
) -> None:
    try:
        verified = verify_parsed(profile_for(profile), document, state.registry)
    except ProtocolError as exc:
        raise _refused(
            where,
            profile,
            f"does not verify (stage {exc.stage}: {exc.explanation})",
            exc.code,
            stage=exc.stage,
            reason=exc.reason,
        ) from None
    signer = verified.principal
    if profile in _SERVICE_SIGNED and (
        signer.type != "service" or signer.id not in identity.control_services
    ):
        raise _refused(
            where,
            profile,
            f"is signed by {signer.id}, which is not an Organization control service of "
            f"{identity.organization_id} (only such a service may sign one)",
            ErrorCode.AUTH_FORBIDDEN,
            signer=signer.id,
        )
    if profile == "agent-card":
        _card_fits(where, document, state, identity)


def _card_fits(
    where: str, card: Mapping[str, Any], state: AuthorityState, identity: Identity
) -> None:
    if card["organizationId"] != identity.organization_id:
        raise _refused(
            where,
            "agent-card",
            f"belongs to Organization {card['organizationId']}, not to {identity.organization_id}",
            ErrorCode.INVALID_COMMAND,
        )
    known = state.agents.get(card["agentId"])
    if known is not None and card["cardVersion"] <= known.card_version:
        raise _refused(
            where,
            "agent-card",
            f"is version {card['cardVersion']}, not newer than the registered version "
            f"{known.card_version} of {card['agentId']}",
            ErrorCode.INVALID_COMMAND,
        )


def agent_card(card: Any, state: AuthorityState, identity: Identity) -> None:
    """Refuse an Agent Card to register unless it verifies, was issued by an Organization
    control service, belongs to this Organization and is newer than the registered one."""
    _one("payload/agentCard", "agent-card", card, state, identity)


def check(event: Mapping[str, Any], state: AuthorityState, identity: Identity) -> None:
    """Refuse ``event`` (before it is folded) unless every Signed Document it embeds verifies."""
    for where, profile, document in signed_documents(event):
        _one(where, profile, document, state, identity)


def problems(
    event: Mapping[str, Any], state: AuthorityState, identity: Identity
) -> list[tuple[str, str]]:
    """``(where, problem)`` for every embedded Signed Document of ``event`` that ``check`` would
    refuse (``state``: the Authority's state before the Event)."""
    found = []
    for where, profile, document in signed_documents(event):
        try:
            _one(where, profile, document, state, identity)
        except ProtocolError as exc:
            found.append((where, f"{exc.code.value}: {exc.explanation}"))
    return found
