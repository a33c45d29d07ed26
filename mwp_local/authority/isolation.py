"""Mission isolation (§13.3, MWP-WRK-028): who may read which Artifact, what may enter a Mission's
context, and the content-free view the Worker's Scheduler gets.

Owns the isolation rules, as pure functions over the Authority's state (which folds the log):

* an Artifact's content is readable by a Principal with a live (provisional or active)
  Membership in the Artifact's Group whose scopes cover it (``group:all``, or ``work:<id>`` for
  the WorkItem it was produced for, one of that WorkItem's ``inputArtifacts``, or the output of
  one of its dependencies); by a member of a Group it was explicitly forwarded to
  (``…knowledge_forward``, see ``authority/handlers/knowledge.py``); or by any Principal of the
  Organization once it is published Organization knowledge (``…knowledge_publish``). Nothing
  else: Group content never enters another Mission by default;
* a Mission's context (Context Packages, say) is built from its own Group's Events and from
  Artifacts that Group may use (``check_context_sources``, ``check_group_artifacts``);
* the Scheduler receives :class:`SchedulingMetadata`, an allowlist of content-free fields.

A refusal is ``AUTH_FORBIDDEN`` and says which rule applies without disclosing whether or where
the Artifact exists. Nothing here reads content or writes: the verified read behind the gate is
``artifacts.manifests.read_artifact``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from ..protocol.errors import ErrorCode, ProtocolError
from ..protocol.profiles import SCHEDULING_PROFILE
from ..protocol.tables import MembershipState
from .model import MembershipRecord, WorkItemRecord
from .reducers.knowledge import forward_key, knowledge_key
from .state import AuthorityState

__all__ = [
    "SCHEDULING_EXTENSION",
    "AccessBasis",
    "ArtifactAccess",
    "SchedulingMetadata",
    "artifact_access",
    "check_context_sources",
    "check_group_artifacts",
    "group_may_use",
    "scheduling_metadata",
    "scope_covers_event",
    "scope_covers_work",
]

_RULE = "§13.3 Group content must not enter another Mission's context by default"


class AccessBasis(StrEnum):
    """Why a Principal may read an Artifact."""

    MEMBER = "member"
    FORWARDED = "forwarded"
    ORGANIZATION_KNOWLEDGE = "organization_knowledge"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactAccess:
    """A granted read: the basis, and the Group whose Membership or grant allowed it."""

    artifact_hash: str
    basis: AccessBasis
    via_group_id: str | None
    #: The event that widened access (forwarding or knowledge publication), if any.
    grant_event_id: str | None = None


def _live(mem: MembershipRecord | None) -> bool:
    return mem is not None and mem.state != MembershipState.ENDED


def _scopes(mem: MembershipRecord) -> tuple[str, ...]:
    return tuple(mem.document.get("scopes", ()))


def _work_scopes(mem: MembershipRecord) -> list[str]:
    return [s[len("work:") :] for s in _scopes(mem) if s.startswith("work:")]


def _scope_covers_artifact(
    state: AuthorityState, mem: MembershipRecord, manifest: Mapping[str, Any]
) -> bool:
    if "group:all" in _scopes(mem):
        return True
    for wid in _work_scopes(mem):
        item = state.work_items.get(wid)
        if item is None:
            continue
        if manifest["workItemId"] == wid or manifest["contentHash"] in item.contract.get(
            "inputArtifacts", ()
        ):
            return True
        if manifest["workItemId"] in item.dependencies:
            return True
    return False


def _forwarded_input(state: AuthorityState, mem: MembershipRecord, artifact_hash: str) -> bool:
    if "group:all" in _scopes(mem):
        return True
    return any(
        artifact_hash in state.work_items[wid].contract.get("inputArtifacts", ())
        for wid in _work_scopes(mem)
        if wid in state.work_items
    )


def _memberships_of(state: AuthorityState, principal_id: str) -> list[MembershipRecord]:
    return sorted(
        (m for (_, pid), m in state.memberships.items() if pid == principal_id and _live(m)),
        key=lambda m: m.group_id,
    )


def artifact_access(state: AuthorityState, principal_id: str, artifact_hash: str) -> ArtifactAccess:
    """Decide whether ``principal_id`` may read the content of ``artifact_hash``.

    Returns the basis of the grant, or raises ``ProtocolError(AUTH_FORBIDDEN)``; the refusal is
    the same whether the Artifact exists elsewhere or not at all.
    """
    manifests = state.manifests_of(artifact_hash)
    if manifests:
        # The same content may back several manifests (in several Groups): a Membership
        # covering any of them covers the content.
        for manifest in manifests:
            source = state.memberships.get((manifest["groupId"], principal_id))
            if (
                source is not None
                and _live(source)
                and _scope_covers_artifact(state, source, manifest)
            ):
                return ArtifactAccess(
                    artifact_hash=artifact_hash,
                    basis=AccessBasis.MEMBER,
                    via_group_id=manifest["groupId"],
                )
        mine = _memberships_of(state, principal_id)
        for mem in mine:
            grant = state.meta.get(forward_key(mem.group_id, artifact_hash))
            if grant is not None and _forwarded_input(state, mem, artifact_hash):
                return ArtifactAccess(
                    artifact_hash=artifact_hash,
                    basis=AccessBasis.FORWARDED,
                    via_group_id=mem.group_id,
                    grant_event_id=grant["eventId"],
                )
        knowledge = state.meta.get(knowledge_key(artifact_hash))
        if knowledge is not None and (mine or principal_id in state.agents):
            return ArtifactAccess(
                artifact_hash=artifact_hash,
                basis=AccessBasis.ORGANIZATION_KNOWLEDGE,
                via_group_id=None,
                grant_event_id=knowledge["eventId"],
            )
    raise ProtocolError(
        ErrorCode.AUTH_FORBIDDEN,
        f"{principal_id} may not read Artifact {artifact_hash}: Artifact content is Group-scoped, "
        "and no live Membership of theirs covers it, it was not forwarded to a Group of theirs, "
        "and it is not published Organization knowledge.",
        details={"artifactHash": artifact_hash},
        rule=_RULE,
    )


def group_may_use(state: AuthorityState, group_id: str, artifact_hash: str) -> bool:
    """Whether an Artifact may appear in ``group_id``'s context: its own, forwarded to it, or
    Organization knowledge."""
    manifests = state.manifests_of(artifact_hash)
    if not manifests:
        return False
    return (
        any(m["groupId"] == group_id for m in manifests)
        or forward_key(group_id, artifact_hash) in state.meta
        or knowledge_key(artifact_hash) in state.meta
    )


def check_group_artifacts(state: AuthorityState, group_id: str, hashes: Iterable[str]) -> None:
    """Refuse (``AUTH_FORBIDDEN``) any Artifact ``group_id`` may not use (see ``group_may_use``)."""
    foreign = sorted(h for h in set(hashes) if not group_may_use(state, group_id, h))
    if foreign:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"{len(foreign)} Artifact(s) are not this Group's to use: they were neither produced "
            "here, forwarded here with permission, nor published as Organization knowledge.",
            details={"artifactHashes": foreign, "groupId": group_id},
            rule=_RULE,
        )


def check_context_sources(group_id: str, events: Iterable[Mapping[str, Any]]) -> None:
    """Refuse (``AUTH_FORBIDDEN``) building ``group_id``'s context from another Group's Events."""
    foreign = sorted({str(e.get("groupId")) for e in events if e.get("groupId") != group_id})
    if foreign:
        raise ProtocolError(
            ErrorCode.AUTH_FORBIDDEN,
            f"A context for Group {group_id} may hold only that Group's Events; "
            f"{len(foreign)} other Group(s) were offered.",
            details={"groupId": group_id},
            rule=_RULE,
        )


def scope_covers_event(
    state: AuthorityState, mem: MembershipRecord, event: Mapping[str, Any]
) -> bool:
    """Whether a Membership's scopes cover an Event of its Group (visibility is checked apart).

    ``group:all`` covers everything; ``work:<id>`` covers Events about that WorkItem and its
    Conversation.
    """
    if "group:all" in _scopes(mem):
        return True
    for wid in _work_scopes(mem):
        item = state.work_items.get(wid)
        if event.get("workItemId") == wid:
            return True
        if item is not None and event.get("conversationId") == item.conversation_id:
            return True
    return False


def scope_covers_work(mem: MembershipRecord | None, work_item_id: str) -> bool:
    """Whether a live Membership's scopes already cover a WorkItem (``group:all``, or
    ``work:<id>`` for it). An offer of a WorkItem its candidate's Membership does not cover
    grants the Membership, or extends its scopes under the next Membership Epoch, with a signed
    Context Package for what the new scope discloses (§8 just-in-time Membership)."""
    if mem is None or not _live(mem):
        return False
    return "group:all" in _scopes(mem) or work_item_id in _work_scopes(mem)


# --------------------------------------------------------------------------- scheduling

#: Optional Work Contract extension where a Coordinator gives a content-free impact rank
#: (``{"impactRank": 0..9}``); without it the rank follows the requested urgency.
SCHEDULING_EXTENSION = SCHEDULING_PROFILE.uri

_URGENCY_RANK = {"routine": 0, "normal": 1, "high": 2, "critical": 3}


@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulingMetadata:
    """What a Worker's Scheduler may see of one WorkItem (§13.3): no Mission content.

    Every field is an identifier, an enumeration, a time or a number; goals, criteria,
    deliverables, business-impact text, Messages and Artifacts never appear.
    """

    group_id: str
    work_item_id: str
    state: str
    urgency: str
    deadline: str
    #: 0 (lowest) to 9; the Coordinator's content-free rank, else the urgency's ordinal.
    impact_rank: int
    #: The contract's side-effect risk class (``none`` … ``destructive``).
    risk_class: str
    #: ``none`` (no approval needed), ``awaiting`` or ``granted``.
    approval_gate: str
    attempts: int
    max_attempts: int
    estimated_start: str | None = None
    estimated_completion: str | None = None
    estimate_confidence: float | None = None
    wall_clock_budget_seconds: float | None = None
    compute_budget_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        """The metadata as a JSON object (``None`` fields omitted)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


def _impact_rank(contract: Mapping[str, Any]) -> int:
    hint = (contract.get("extensions") or {}).get(SCHEDULING_EXTENSION, {}).get("data", {})
    rank = hint.get("impactRank") if isinstance(hint, dict) else None
    if isinstance(rank, int) and not isinstance(rank, bool) and 0 <= rank <= 9:
        return rank
    return _URGENCY_RANK[contract["requestedUrgency"]]


def scheduling_metadata(item: WorkItemRecord) -> SchedulingMetadata:
    """The content-free projection of a WorkItem for the Worker's global Scheduler."""
    contract = item.contract
    approval = contract["executionApproval"]
    gate = (
        "none"
        if approval == "not_required"
        else "granted"
        if item.execution_approved
        else "awaiting"
    )
    estimate = item.schedule_estimate or {}
    budget = contract.get("budget", {})
    return SchedulingMetadata(
        group_id=item.group_id,
        work_item_id=item.work_item_id,
        state=str(item.state),
        urgency=contract["requestedUrgency"],
        deadline=contract["deadline"],
        impact_rank=_impact_rank(contract),
        risk_class=contract["sideEffectRisk"],
        approval_gate=gate,
        attempts=item.attempts,
        max_attempts=int(contract["retryPolicy"]["maxAttempts"]),
        estimated_start=estimate.get("estimatedStart"),
        estimated_completion=estimate.get("estimatedCompletion"),
        estimate_confidence=estimate.get("confidence"),
        wall_clock_budget_seconds=budget.get("wallClockSecondsLimit"),
        compute_budget_seconds=budget.get("computeSecondsLimit"),
    )
