"""Context Packages (§13.3, MWP-WRK-027): signed, versioned, scoped summaries of a Group's log,
and the Membership-gated retrieval of the Events they cite.

Owns ``build_context_package`` (pure: Event documents in, a signed ``context-package`` document
out), ``context_package_from_log`` (the same, reading the Group's Events from a log store),
``check_update`` (an update is the next version of the same scope, with provenance to the
exact previous version), ``verify_context_package`` and ``fetch_cited_events``. A package is a
summary handed to a late-joining Worker or a replacement Coordinator; it is never a replacement
for history and authorizes nothing (§4 invariant 2). Everything in it is derived from the
Group's own Events (decisions from decision Events, constraints from Work Contracts, open
questions from blockers and open proposals) plus what the generator adds, each decision citing
the Events it came from; another Group's Events are refused (MWP-WRK-028).

Provenance between versions: ``previousContextPackageId`` names the previous package and the
noncritical extension ``urn:mwp-local:extension:context-package-provenance`` binds its version
and signing hash, so a swapped predecessor is detected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..authority.isolation import check_context_sources, check_group_artifacts, scope_covers_event
from ..authority.state import AuthorityState
from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.ids import derived_uuid
from ..protocol.profiles import CONTEXT_PROVENANCE_PROFILE
from ..protocol.signing import VerifiedDocument, profile_for, signing_hash, verify_parsed
from ..store.base import LogStore
from .signers import Signer, sign_valid

__all__ = [
    "PROVENANCE_EXTENSION",
    "PackageScope",
    "build_context_package",
    "check_update",
    "cited_event_ids",
    "context_package_from_log",
    "fetch_cited_events",
    "gate_cited_events",
    "mission_level",
    "proposals_of",
    "verify_context_package",
]

#: The noncritical extension binding an update to the exact previous version.
PROVENANCE_EXTENSION = CONTEXT_PROVENANCE_PROFILE.uri
_RULE = "§13.3 a Worker may retrieve cited Events when its Membership permits"
_TEXT_MAX = 4000


@dataclass(frozen=True, slots=True, kw_only=True)
class PackageScope:
    """What a package summarizes: a Mission's Group, optionally one WorkItem of it."""

    mission_id: str
    group_id: str
    work_item_id: str | None = None


def _invalid(explanation: str, rule: str | None = None, **details: Any) -> ProtocolError:
    return ProtocolError(ErrorCode.INVALID_COMMAND, explanation, details=details, rule=rule)


def _short(text: str) -> str:
    return text if len(text) <= _TEXT_MAX else text[: _TEXT_MAX - 1] + "…"


# --------------------------------------------------------------------------- derivation

_Describe = Callable[[Mapping[str, Any]], str]

#: Decision Events and how each reads as a decision (payload → description).
_DECISIONS: Mapping[str, _Describe] = {
    "work.authorized": lambda p: (
        f"WorkItem {p['workItem']['workItemId']} authorized: {p['workItem']['contract']['goal']}"
    ),
    "work.contract.revised": lambda p: (
        f"Work Contract of {p['workItemId']} revised to version "
        f"{p['contract']['contractVersion']} ({p.get('reason', 'revised')})"
    ),
    "work.offer.accepted": lambda p: (
        f"{p['workItemId']} accepted by {p['owner']['agentId']} "
        f"(Ownership Epoch {p['owner']['ownershipEpoch']})"
    ),
    "work.result.accepted": lambda p: f"Result of {p['workItemId']} accepted after review",
    "work.failed": lambda p: f"{p['workItemId']} failed: {p.get('reason', 'failed')}",
    "work.cancelled": lambda p: f"{p['workItemId']} cancelled: {p.get('reason', 'cancelled')}",
    "mission.coordinator.assigned": lambda p: (
        f"Coordinator {p['coordinator']['agentId']} appointed at Coordinator Epoch "
        f"{p['coordinator']['coordinatorEpoch']}"
    ),
    "mission.changes_requested": lambda p: "The MissionOwner requested changes",
    "ext.mwp-local.sandbox.knowledge_received": lambda p: (
        f"Artifact {p['artifactHash']} was forwarded here from Group {p['sourceGroupId']} "
        f"({p['reason']})"
    ),
}


def mission_level(event: Mapping[str, Any]) -> bool:
    """Whether ``event`` records the Mission itself (its creation and contract, its Coordinator,
    its state): what a WorkItem's package cites besides the WorkItem, since a Worker joining
    late needs them to act in the Group at all (the Coordinator Epoch its Commands carry)."""
    return str(event["kind"]).startswith("mission.") and not event.get("workItemId")


def _relevant(events: Sequence[Mapping[str, Any]], scope: PackageScope) -> list[Mapping[str, Any]]:
    if scope.work_item_id is None:
        return list(events)
    conversations = set()
    # The WorkItems it depends on: their outcome and deliverables are its inputs.
    depends: set[str] = set()
    for e in events:
        if e["kind"] == "work.authorized":
            item = e["payload"]["workItem"]
            if item["workItemId"] == scope.work_item_id:
                conversations.add(item["conversationId"])
                depends.update(item["contract"].get("dependencyWorkItemIds", ()))
        elif e["kind"] == "work.contract.revised" and e.get("workItemId") == scope.work_item_id:
            depends.update(e["payload"]["contract"].get("dependencyWorkItemIds", ()))
    proposals = proposals_of(events, {scope.work_item_id, *depends})
    return [
        e
        for e in events
        if e.get("workItemId") == scope.work_item_id
        or e.get("conversationId") in conversations
        or e.get("workItemId") in depends
        or _proposal_of(e) in proposals
        or mission_level(e)
    ]


def _proposal_of(event: Mapping[str, Any]) -> str | None:
    payload = event.get("payload")
    if event.get("workItemId") or not isinstance(payload, dict):
        return None
    proposal = payload.get("proposalId")
    return str(proposal) if proposal else None


def proposals_of(events: Sequence[Mapping[str, Any]], work_item_ids: set[str | None]) -> set[str]:
    """The Work Proposals the given WorkItems were authorized from: their ``work.proposed``
    precedes the authorization, and a replica folds the authorization only after it."""
    return {
        str(e["payload"]["proposalId"])
        for e in events
        if e["kind"] == "work.authorized"
        and e["payload"]["workItem"]["workItemId"] in work_item_ids
        and e["payload"].get("proposalId")
    }


def _derived_constraints(events: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for e in events:
        payload = e["payload"]
        if e["kind"] == "mission.created":
            out.append(f"Mission deadline {payload['mission']['deadline']}")
        elif e["kind"] == "work.authorized":
            item, contract = payload["workItem"], payload["workItem"]["contract"]
            out.append(
                f"{item['workItemId']}: deadline {contract['deadline']}, side-effect risk "
                f"{contract['sideEffectRisk']}, execution approval {contract['executionApproval']}"
            )
    return out


def _derived_questions(events: Sequence[Mapping[str, Any]]) -> list[str]:
    blocked: dict[str, str] = {}
    proposals: dict[str, str] = {}
    for e in events:
        payload = e["payload"]
        if e["kind"] == "work.blocked" and "requiredResolution" in payload:
            blocked[payload["workItemId"]] = payload["requiredResolution"]
        elif e["kind"] in ("work.unblocked", "work.cancelled", "work.failed"):
            blocked.pop(payload["workItemId"], None)
        elif e["kind"] == "work.proposed":
            proposals[payload["proposalId"]] = payload["summary"]
        elif e["kind"] == "work.authorized" and payload.get("proposalId"):
            proposals.pop(payload["proposalId"], None)
    return [f"{wid} is blocked: {why}" for wid, why in blocked.items()] + [
        f"Proposal {pid} awaits a decision: {summary}" for pid, summary in proposals.items()
    ]


def _artifacts(events: Sequence[Mapping[str, Any]]) -> list[str]:
    hashes: dict[str, None] = {}
    for e in events:
        if e["kind"] == "artifact.published":
            hashes[e["payload"]["artifact"]["contentHash"]] = None
        elif e["kind"] == "ext.mwp-local.sandbox.knowledge_received":
            hashes[e["payload"]["artifactHash"]] = None
    return list(hashes)


def _summary(scope: PackageScope, cited: Sequence[Mapping[str, Any]], artifacts: int) -> str:
    kinds: dict[str, int] = {}
    for e in cited:
        kinds[e["kind"]] = kinds.get(e["kind"], 0) + 1
    what = f"WorkItem {scope.work_item_id} of Mission" if scope.work_item_id else "Mission"
    counts = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    return (
        f"{what} {scope.mission_id} (Group {scope.group_id}): {len(cited)} Events from sequence "
        f"{cited[0]['sequence']} to {cited[-1]['sequence']} ({counts}); {artifacts} Artifact(s). "
        "A summary only: the Group log stays authoritative."
    )


# --------------------------------------------------------------------------- building


def build_context_package(
    events: Sequence[Mapping[str, Any]],
    *,
    scope: PackageScope,
    generator: Signer,
    generated_at: str,
    from_sequence: int = 1,
    through_sequence: int | None = None,
    summary: str | None = None,
    decisions: Sequence[tuple[str, Sequence[str]]] = (),
    constraints: Sequence[str] = (),
    unresolved_questions: Sequence[str] = (),
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A signed Context Package of ``scope`` from the Group's Event documents (pure).

    ``decisions`` the generator adds are ``(description, source Event IDs)`` and must cite
    Events the package cites. With ``previous`` the result is its next version (same scope,
    starting where it started, reaching at least as far). Raises ``AUTH_FORBIDDEN`` for another
    Group's Events, ``INVALID_COMMAND`` for an empty range, an uncited decision source or a bad
    update, and ``SCHEMA_VALIDATION_FAILED`` if the result would not conform.
    """
    check_context_sources(scope.group_id, events)
    version = 1
    if previous is not None:
        _same_scope(previous, scope)
        version = int(previous["version"]) + 1
        from_sequence = int(previous["sourceEventRange"]["fromSequence"])
        if through_sequence is not None and through_sequence < int(
            previous["sourceEventRange"]["toSequence"]
        ):
            raise _invalid("An update covers at least the range of the version it replaces.")
    ordered = sorted(events, key=lambda e: int(e["sequence"]))
    in_range = [
        e
        for e in ordered
        if from_sequence <= e["sequence"]
        and (through_sequence is None or e["sequence"] <= through_sequence)
    ]
    cited = _relevant(in_range, scope)
    if not cited:
        raise _invalid("There are no Events in this scope and range to summarize.")
    cited_ids = [e["eventId"] for e in cited]
    extra = []
    for description, sources in decisions:
        unknown = sorted(set(sources) - set(cited_ids))
        if unknown or not sources:
            raise _invalid(
                "A decision must cite Events of this package as its sources.", unknown=unknown
            )
        extra.append(
            {"description": _short(description), "sourceEventIds": list(dict.fromkeys(sources))}
        )
    artifacts = _artifacts(cited)
    doc: dict[str, Any] = {
        "contextPackageId": derived_uuid(
            generator.organization_id,
            "context-package",
            scope.group_id,
            scope.work_item_id or "",
            str(version),
            str(cited[-1]["sequence"]),
            generated_at,
        ),
        "version": version,
        "missionId": scope.mission_id,
        "groupId": scope.group_id,
        "sourceEventRange": {
            "fromSequence": cited[0]["sequence"],
            "toSequence": cited[-1]["sequence"],
            "eventIds": cited_ids,
        },
        "artifactHashes": artifacts,
        "summary": _short(summary) if summary else _summary(scope, cited, len(artifacts)),
        "decisions": [
            {
                "description": _short(_DECISIONS[e["kind"]](e["payload"])),
                "sourceEventIds": [e["eventId"]],
            }
            for e in cited
            if e["kind"] in _DECISIONS
        ]
        + extra,
        "constraints": [_short(c) for c in [*_derived_constraints(cited), *constraints]],
        "unresolvedQuestions": [
            _short(q) for q in [*_derived_questions(cited), *unresolved_questions]
        ],
        "generatedBy": generator.actor,
        "generatedAt": generated_at,
    }
    if scope.work_item_id is not None:
        doc["workItemId"] = scope.work_item_id
    if previous is not None:
        doc["previousContextPackageId"] = previous["contextPackageId"]
        doc["extensions"] = {
            PROVENANCE_EXTENSION: {
                "version": CONTEXT_PROVENANCE_PROFILE.version,
                "critical": CONTEXT_PROVENANCE_PROFILE.critical,
                "data": {
                    "previousVersion": int(previous["version"]),
                    "previousSigningHash": signing_hash(previous),
                },
            }
        }
    return sign_valid("context-package", doc, generator)


def _same_scope(previous: Mapping[str, Any], scope: PackageScope) -> None:
    theirs = (previous["missionId"], previous["groupId"], previous.get("workItemId"))
    if theirs != (scope.mission_id, scope.group_id, scope.work_item_id):
        raise _invalid(
            "An update of a Context Package keeps its scope (Mission, Group, WorkItem); "
            "a different scope is a new package, version 1."
        )


def _events_of(store: LogStore, group_id: str) -> list[dict[str, Any]]:
    return [json.loads(record.document) for record in store.events(group_id)]


def context_package_from_log(
    store: LogStore,
    state: AuthorityState,
    scope: PackageScope,
    *,
    generator: Signer,
    generated_at: str,
    **options: Any,
) -> dict[str, Any]:
    """``build_context_package`` over the scope's Group as the log holds it; every Artifact it
    lists is checked against the Group's isolation rules as well (``check_group_artifacts``)."""
    package = build_context_package(
        _events_of(store, scope.group_id),
        scope=scope,
        generator=generator,
        generated_at=generated_at,
        **options,
    )
    check_group_artifacts(state, scope.group_id, package["artifactHashes"])
    return package


def check_update(previous: Mapping[str, Any], update: Mapping[str, Any]) -> None:
    """Raise ``INVALID_COMMAND`` unless ``update`` is the next version of ``previous``: same
    scope, version + 1, naming it as previous, binding its signing hash."""
    problems = []
    if (update["missionId"], update["groupId"], update.get("workItemId")) != (
        previous["missionId"],
        previous["groupId"],
        previous.get("workItemId"),
    ):
        problems.append("it has another scope")
    if update["version"] != previous["version"] + 1:
        problems.append(f"its version {update['version']} does not follow {previous['version']}")
    if update.get("previousContextPackageId") != previous["contextPackageId"]:
        problems.append("it does not name the previous package")
    bound = (update.get("extensions") or {}).get(PROVENANCE_EXTENSION, {}).get("data", {})
    if bound.get("previousSigningHash") != signing_hash(previous):
        problems.append("it does not bind the previous version's signing hash")
    if problems:
        raise _invalid("Not an update of that Context Package: " + "; ".join(problems) + ".")


# --------------------------------------------------------------------------- retrieval


def verify_context_package(package: Any, state: AuthorityState) -> VerifiedDocument:
    """The six stages of §6.4, then: the generator is (or was) its Group's Coordinator or
    MissionOwner Agent. Raises the stage's code, or ``AUTH_FORBIDDEN``."""
    verified = verify_parsed(profile_for("context-package"), package, state.registry)
    mem = state.memberships.get((package["groupId"], verified.principal.id))
    if mem is None or mem.role not in ("coordinator", "mission_owner"):
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            "This Context Package was not generated by its Group's Coordinator.",
            rule="§7.2 the Coordinator hands out signed Context Packages",
        )
    return verified


def cited_event_ids(package: Mapping[str, Any]) -> list[str]:
    """Every Event ID a package cites (its source range and its decisions), in order."""
    ids = dict.fromkeys(package["sourceEventRange"]["eventIds"])
    for decision in package["decisions"]:
        ids.update(dict.fromkeys(decision["sourceEventIds"]))
    return list(ids)


def fetch_cited_events(
    state: AuthorityState,
    store: LogStore,
    package: Mapping[str, Any],
    requester_id: str,
    event_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """The signed Events a package cites, for ``requester_id``, only as its Membership allows.

    All or nothing: every requested Event (default: all cited) must be cited by the verified
    package, and visible to the requester's live Membership in the package's Group: at or after
    its ``visibilityStartSequence`` and inside its scopes (``group:all``, or ``work:<id>`` for
    that WorkItem's Events and Conversation); or, for a package scoped to a WorkItem the
    Membership covers or that was offered to the requester (the package was made for them,
    MWP-WRK-027), an Event about that WorkItem, about a WorkItem it depends on (or the Work
    Proposal one was authorized from), or the Mission's own (``mission_level``): what a late
    joiner's replica starts from (``agents.runtime``). Raises ``MEMBERSHIP_REQUIRED`` without a live
    Membership, ``INVALID_COMMAND`` for an Event the package does not cite, ``AUTH_FORBIDDEN``
    naming each Event the Membership does not cover; nothing is returned then.
    """
    return gate_cited_events(
        state, _events_of(store, package["groupId"]), package, requester_id, event_ids
    )


def gate_cited_events(
    state: AuthorityState,
    group_events: Sequence[Mapping[str, Any]],
    package: Mapping[str, Any],
    requester_id: str,
    event_ids: Sequence[str] | None = None,
) -> list[dict[str, Any]]:
    """``fetch_cited_events`` over the package's Group's Events as already read (``group_events``),
    so a caller may read the log outside the lock it holds ``state`` under. Pure."""
    verify_context_package(package, state)
    group_id = package["groupId"]
    mem = state.memberships.get((group_id, requester_id))
    if mem is None or mem.state == "ended":
        raise ProtocolError(
            ErrorCode.MEMBERSHIP_REQUIRED,
            f"{requester_id} has no live Membership in Group {group_id}; cited Events are "
            "retrievable only by members.",
            rule=_RULE,
        )
    cited = cited_event_ids(package)
    wanted = list(dict.fromkeys(event_ids)) if event_ids is not None else cited
    uncited = [e for e in wanted if e not in set(cited)]
    if uncited:
        raise _invalid(
            "Only Events the Context Package cites can be retrieved through it.",
            rule=_RULE,
            eventIds=uncited,
        )
    by_id = {e["eventId"]: dict(e) for e in group_events if e["eventId"] in set(wanted)}
    missing = [e for e in wanted if e not in by_id]
    if missing:
        raise _invalid("The Group log holds no such Events.", eventIds=missing)
    start = int(mem.document["visibilityStartSequence"])
    # A package scoped to a WorkItem the requester's Membership covers was made for them (§8:
    # a late joiner receives its Context Package and MAY retrieve the cited source Events):
    # its citations about that WorkItem are theirs even before the visibility start, such as
    # the work.authorized that precedes every offer. Nothing else before the start is.
    # The same holds for a WorkItem offered to them (an offer to a member whose visibility
    # starts after the WorkItem was authorized names such a package too), and for the Mission's
    # own Events (its contract, its Coordinator) that such a package cites.
    made_for = package.get("workItemId")
    granted = made_for is not None and (
        scope_covers_event(state, mem, {"workItemId": made_for})
        or _offered_to(state, made_for, requester_id)
    )
    item = state.work_items.get(made_for or "")
    about: set[str | None] = {made_for, *(item.dependencies if item is not None else ())}
    proposals = proposals_of(group_events, about) if granted else set()
    denied = {}
    for event_id in wanted:
        event = by_id[event_id]
        theirs = (
            event.get("workItemId") in about
            or mission_level(event)
            or _proposal_of(event) in proposals
        )
        if event["sequence"] < start and not (granted and theirs):
            denied[event_id] = f"sequence {event['sequence']} is before your visibility ({start})"
        elif not (granted and theirs) and not scope_covers_event(state, mem, event):
            denied[event_id] = f"outside your scopes {', '.join(mem.document['scopes'])}"
    if denied:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"Your Membership does not cover {len(denied)} of the requested Events; a late "
            "joiner receives only the history its Membership allows (§8).",
            details={"denied": denied},
            rule=_RULE,
        )
    return [by_id[e] for e in wanted]


def _offered_to(state: AuthorityState, work_item_id: str, requester_id: str) -> bool:
    """Whether ``work_item_id`` was offered to (or is owned by) ``requester_id``."""
    item = state.work_items.get(work_item_id)
    if item is None:
        return False
    if item.owner is not None and item.owner.get("agentId") == requester_id:
        return True
    return any(
        state.offers[o].agent_id == requester_id for o in item.offer_ids if o in state.offers
    )
