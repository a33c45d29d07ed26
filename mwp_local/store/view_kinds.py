"""The Event kinds and sandbox data schemas the SQL views read, in one place.

The views (``store.views``) spell no kind of their own: each one they read is named here, so a
renamed kind is one edit. The values are the wire spellings; the extension kinds come from the
protocol's enums (``protocol.documents.kinds``). Data only: no SQL, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from ..protocol.documents.kinds import ExtensionEventKind

# -- WorkItems, offers, Artifacts (§10, §13)
WORK_AUTHORIZED = "work.authorized"
WORK_CONTRACT_REVISED = "work.contract.revised"
WORK_OFFER_CREATED = "work.offer.created"
WORK_OFFER_ACCEPTED = "work.offer.accepted"
WORK_STARTED = "work.started"
WORK_UNBLOCKED = "work.unblocked"
WORK_CHECKPOINTED = "work.checkpointed"
WORK_BLOCKED = "work.blocked"
WORK_SUBMITTED = "work.submitted"
WORK_RESULT_ACCEPTED = "work.result.accepted"
WORK_FAILED = "work.failed"
WORK_CANCELLED = "work.cancelled"
EXECUTION_GRANTED = "approval.execution.granted"
MISSION_CHILD_CREATED = "mission.child.created"
#: A lease revoked by policy or an Event; with reason ``session_replaced`` it returns the
#: WorkItem to ``queued`` (§11.3).
LEASE_REVOKED = ExtensionEventKind.WORK_EXECUTION_LEASE_REVOKED.value
ARTIFACT_PUBLISHED = "artifact.published"
MESSAGE_POSTED = "message.posted"
#: §11.5: the charge of a usage delta to a WorkItem and its whole budget ancestry.
RESOURCE_USAGE_RECORDED = ExtensionEventKind.RESOURCE_USAGE_RECORDED.value

# -- Missions, Coordinators, Memberships (§7, §8)
MISSION_CREATED = "mission.created"
MISSION_SUBMITTED_FOR_APPROVAL = "mission.submitted_for_approval"
MISSION_CHANGES_REQUESTED = "mission.changes_requested"
MISSION_APPROVED = "mission.approved"
MISSION_CANCELLED = "mission.cancelled"
MISSION_TERMINATED = "mission.terminated"
MISSION_COORDINATOR_ASSIGNED = "mission.coordinator.assigned"
MEMBERSHIP_CHANGED = "membership.changed"
MEMBERSHIP_ENDED = "membership.ended"

# -- Organization scope (§6)
AGENT_CARD_REGISTERED = ExtensionEventKind.AGENT_CARD_REGISTERED.value
SESSION_OPENED = ExtensionEventKind.SESSION_OPENED.value

#: The state of §7.1 a Mission is in after each lifecycle Event (``mission.cancelled`` covers
#: a cancellation and its propagation from a parent; ``mission.terminated`` a termination and
#: child-failure propagation).
MISSION_STATE_AFTER: Mapping[str, str] = MappingProxyType(
    {
        MISSION_CREATED: "active",
        MISSION_SUBMITTED_FOR_APPROVAL: "awaiting_approval",
        MISSION_CHANGES_REQUESTED: "active",
        MISSION_APPROVED: "approved",
        MISSION_CANCELLED: "cancelled",
        MISSION_TERMINATED: "failed",
    }
)

#: The state of §10.2 a WorkItem is in after each Event that moves it (``work.unblocked`` names
#: its target in ``payload.toState``; ``…work_execution_lease_revoked`` moves it only for a
#: replaced Session).
#: The Group Authority records these as ``from_state``/``to_state``; the audit import of a
#: foreign log (``store.audit_import``) reads them from here.
WORK_STATE_AFTER: Mapping[str, str] = MappingProxyType(
    {
        WORK_AUTHORIZED: "open",
        WORK_OFFER_CREATED: "offered",
        WORK_OFFER_ACCEPTED: "queued",
        EXECUTION_GRANTED: "queued",
        WORK_STARTED: "active",
        WORK_CHECKPOINTED: "queued",
        WORK_BLOCKED: "blocked",
        WORK_SUBMITTED: "submitted",
        WORK_RESULT_ACCEPTED: "verified",
        WORK_FAILED: "failed",
        WORK_CANCELLED: "cancelled",
        MISSION_CHILD_CREATED: "blocked",
    }
)

#: The ``data_ref`` schema of a Worker's structured decline of an offer (§10.3), posted as a
#: ``message.posted`` in the WorkItem Conversation. Its ``data``: ``offerId``, ``reason`` (one
#: of capacity, deadline, capability, authorization, dependency, budget), ``reasons`` (every
#: reason found, in the specification's order) and ``details`` (reason → text).
DECLINE_SCHEMA = "urn:mwp-local:schema:offer-decline"

__all__ = [
    "AGENT_CARD_REGISTERED",
    "ARTIFACT_PUBLISHED",
    "DECLINE_SCHEMA",
    "EXECUTION_GRANTED",
    "LEASE_REVOKED",
    "MEMBERSHIP_CHANGED",
    "MEMBERSHIP_ENDED",
    "MESSAGE_POSTED",
    "MISSION_APPROVED",
    "MISSION_CANCELLED",
    "MISSION_CHANGES_REQUESTED",
    "MISSION_CHILD_CREATED",
    "MISSION_COORDINATOR_ASSIGNED",
    "MISSION_CREATED",
    "MISSION_STATE_AFTER",
    "MISSION_SUBMITTED_FOR_APPROVAL",
    "MISSION_TERMINATED",
    "RESOURCE_USAGE_RECORDED",
    "SESSION_OPENED",
    "WORK_AUTHORIZED",
    "WORK_BLOCKED",
    "WORK_CANCELLED",
    "WORK_CHECKPOINTED",
    "WORK_CONTRACT_REVISED",
    "WORK_FAILED",
    "WORK_OFFER_ACCEPTED",
    "WORK_OFFER_CREATED",
    "WORK_RESULT_ACCEPTED",
    "WORK_STARTED",
    "WORK_STATE_AFTER",
    "WORK_SUBMITTED",
    "WORK_UNBLOCKED",
]
