"""The Command and Event kind vocabularies of sections 15.1 and 15.2, as data.

Owns the core Command kinds and core Event kinds (each a :class:`StrEnum` whose values are the
wire strings, in the order the specification lists them), the extension kinds this
implementation interprets (the reference core's ``ext.missionweaveprotocol.*``, spelled as the
reference implementation spells them, and the sandbox's own ``ext.mwp-local.sandbox.*``, which
its Extension Profile declares), the names the sandbox used before, the Organization-scoped
bootstrap kinds, the kinds whose authority is the Coordinator lease, and the extension-kind
pattern. The Command and Event schemas enumerate exactly the core lists. It must not decide
whether a kind is allowed for an actor (the handlers do) or perform I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class CommandKind(StrEnum):
    """Core Command kinds (section 15.1)."""

    MISSION_CREATE = "mission.create"
    MISSION_ASSIGN_COORDINATOR = "mission.assign_coordinator"
    MISSION_RENEW_COORDINATOR = "mission.renew_coordinator"
    MISSION_SUBMIT_FOR_APPROVAL = "mission.submit_for_approval"
    MISSION_APPROVE = "mission.approve"
    MISSION_REQUEST_CHANGES = "mission.request_changes"
    MISSION_CANCEL = "mission.cancel"
    MISSION_TERMINATE = "mission.terminate"
    MISSION_CREATE_CHILD = "mission.create_child"
    MISSION_CREATE_FOLLOW_UP = "mission.create_follow_up"
    MEMBERSHIP_CHANGE = "membership.change"
    MEMBERSHIP_END = "membership.end"
    MEMBERSHIP_GRANT_DELEGATION = "membership.grant_delegation"
    MESSAGE_POST = "message.post"
    MESSAGE_CORRECT = "message.correct"
    MESSAGE_RETRACT = "message.retract"
    MESSAGE_REDACT = "message.redact"
    WORK_PROPOSE = "work.propose"
    WORK_AUTHORIZE = "work.authorize"
    WORK_OFFER = "work.offer"
    WORK_ACCEPT_OFFER = "work.accept_offer"
    WORK_START = "work.start"
    WORK_CHECKPOINT = "work.checkpoint"
    WORK_BLOCK = "work.block"
    WORK_UNBLOCK = "work.unblock"
    WORK_SUBMIT = "work.submit"
    WORK_ACCEPT_RESULT = "work.accept_result"
    WORK_FAIL = "work.fail"
    WORK_CANCEL = "work.cancel"
    ARTIFACT_PUBLISH = "artifact.publish"
    APPROVAL_GRANT_EXECUTION = "approval.grant_execution"
    POLICY_GRANT_COOPERATION_OVERRIDE = "policy.grant_cooperation_override"


class EventKind(StrEnum):
    """Core Event kinds (section 15.2): the past-tense facts."""

    MISSION_CREATED = "mission.created"
    MISSION_COORDINATOR_ASSIGNED = "mission.coordinator.assigned"
    MISSION_COORDINATOR_RENEWED = "mission.coordinator.renewed"
    MISSION_SUBMITTED_FOR_APPROVAL = "mission.submitted_for_approval"
    MISSION_APPROVED = "mission.approved"
    MISSION_CHANGES_REQUESTED = "mission.changes_requested"
    MISSION_CANCELLED = "mission.cancelled"
    MISSION_TERMINATED = "mission.terminated"
    MISSION_CHILD_CREATED = "mission.child.created"
    MISSION_FOLLOW_UP_CREATED = "mission.follow_up.created"
    MEMBERSHIP_CHANGED = "membership.changed"
    MEMBERSHIP_ENDED = "membership.ended"
    MEMBERSHIP_DELEGATION_GRANTED = "membership.delegation.granted"
    MESSAGE_POSTED = "message.posted"
    MESSAGE_CORRECTED = "message.corrected"
    MESSAGE_RETRACTED = "message.retracted"
    MESSAGE_REDACTED = "message.redacted"
    WORK_PROPOSED = "work.proposed"
    WORK_AUTHORIZED = "work.authorized"
    WORK_OFFER_CREATED = "work.offer.created"
    WORK_OFFER_ACCEPTED = "work.offer.accepted"
    WORK_CONTRACT_REVISED = "work.contract.revised"
    WORK_STARTED = "work.started"
    WORK_PROGRESSED = "work.progressed"
    WORK_CHECKPOINTED = "work.checkpointed"
    WORK_BLOCKED = "work.blocked"
    WORK_UNBLOCKED = "work.unblocked"
    WORK_SUBMITTED = "work.submitted"
    WORK_RESULT_ACCEPTED = "work.result.accepted"
    WORK_FAILED = "work.failed"
    WORK_CANCELLED = "work.cancelled"
    ARTIFACT_PUBLISHED = "artifact.published"
    APPROVAL_EXECUTION_GRANTED = "approval.execution.granted"
    POLICY_COOPERATION_OVERRIDE_GRANTED = "policy.cooperation_override.granted"
    GROUP_SNAPSHOT_CREATED = "group.snapshot.created"
    GROUP_ARCHIVED = "group.archived"


#: The namespace of the extension kinds the MWP 0.1 reference core defines (§15.1, §15.2):
#: Organization-owned Commands and their facts, named as the reference implementation names them.
REFERENCE_NAMESPACE: Final = "ext.missionweaveprotocol."
#: The namespace of the kinds this sandbox invents (§18 ``ext.<organization>.<profile>``): the
#: ``mwp-local`` Organization's ``sandbox`` Extension Profile (``protocol.profiles``).
SANDBOX_NAMESPACE: Final = "ext.mwp-local.sandbox."


class ExtensionCommandKind(StrEnum):
    """The extension Command kinds this implementation interprets (section 18): the reference
    core's (``REFERENCE_NAMESPACE``) and the sandbox profile's (``SANDBOX_NAMESPACE``). The
    Command schema admits them by ``EXTENSION_KIND_PATTERN``, not by enumeration."""

    AGENT_CARD_REGISTER = "ext.missionweaveprotocol.registry.agent_card_register"
    SESSION_OPEN = "ext.missionweaveprotocol.identity.session_open"
    WORK_DEPENDENCY_ADD = "ext.missionweaveprotocol.core.work_dependency_add"
    WORK_EXECUTION_LEASE_RENEW = "ext.missionweaveprotocol.core.work_execution_lease_renew"
    RESOURCE_USAGE_RECORD = "ext.missionweaveprotocol.core.resource_usage_record"
    GROUP_ARCHIVE = "ext.missionweaveprotocol.core.group_archive"
    KNOWLEDGE_PUBLISH = "ext.mwp-local.sandbox.knowledge_publish"
    KNOWLEDGE_FORWARD = "ext.mwp-local.sandbox.knowledge_forward"


class ExtensionEventKind(StrEnum):
    """The extension Event kinds this implementation records (section 18), in the same two
    namespaces."""

    AGENT_CARD_REGISTERED = "ext.missionweaveprotocol.registry.agent_card_registered"
    SESSION_OPENED = "ext.missionweaveprotocol.identity.session_opened"
    WORK_EXECUTION_LEASE_REVOKED = "ext.missionweaveprotocol.core.work_execution_lease_revoked"
    RESOURCE_USAGE_RECORDED = "ext.missionweaveprotocol.core.resource_usage_recorded"
    LEASE_EXPIRED = "ext.mwp-local.sandbox.lease_expired"
    KNOWLEDGE_PUBLISHED = "ext.mwp-local.sandbox.knowledge_published"
    KNOWLEDGE_FORWARDED = "ext.mwp-local.sandbox.knowledge_forwarded"
    KNOWLEDGE_RECEIVED = "ext.mwp-local.sandbox.knowledge_received"


#: The names this sandbox used before it took the reference implementation's (issue 21): a
#: Command or Event of one of them is refused, and the refusal names the reference kind.
FORMER_KINDS: Final = {
    "ext.missionweaveprotocol.core.execution_lease_renew": (
        ExtensionCommandKind.WORK_EXECUTION_LEASE_RENEW.value
    ),
    "ext.missionweaveprotocol.core.dependency_insert": (
        ExtensionCommandKind.WORK_DEPENDENCY_ADD.value
    ),
    "ext.missionweaveprotocol.core.lease_revoked": (
        ExtensionEventKind.WORK_EXECUTION_LEASE_REVOKED.value
    ),
    "ext.missionweaveprotocol.core.lease_expired": (ExtensionEventKind.LEASE_EXPIRED.value),
    "ext.missionweaveprotocol.knowledge.publish": ExtensionCommandKind.KNOWLEDGE_PUBLISH.value,
    "ext.missionweaveprotocol.knowledge.forward": ExtensionCommandKind.KNOWLEDGE_FORWARD.value,
    "ext.missionweaveprotocol.knowledge.published": ExtensionEventKind.KNOWLEDGE_PUBLISHED.value,
    "ext.missionweaveprotocol.knowledge.forwarded": ExtensionEventKind.KNOWLEDGE_FORWARDED.value,
    "ext.missionweaveprotocol.knowledge.received": ExtensionEventKind.KNOWLEDGE_RECEIVED.value,
}


#: Every Command kind this implementation knows (core and extension), by wire value.
COMMAND_KINDS: Final = frozenset(CommandKind) | frozenset(ExtensionCommandKind)
#: Every Event kind this implementation knows (core and extension), by wire value.
EVENT_KINDS: Final = frozenset(EventKind) | frozenset(ExtensionEventKind)

#: Organization-owned bootstrap Commands: no Group ID and no role or session epochs.
AGENT_CARD_REGISTER: Final = ExtensionCommandKind.AGENT_CARD_REGISTER.value
SESSION_OPEN: Final = ExtensionCommandKind.SESSION_OPEN.value
ORGANIZATION_SCOPED_COMMAND_KINDS: Final = (AGENT_CARD_REGISTER, SESSION_OPEN)

#: Organization-scoped facts: no Group ID, Group sequence or aggregate revision.
AGENT_CARD_REGISTERED: Final = ExtensionEventKind.AGENT_CARD_REGISTERED.value
SESSION_OPENED: Final = ExtensionEventKind.SESSION_OPENED.value
ORGANIZATION_SCOPED_EVENT_KINDS: Final = (AGENT_CARD_REGISTERED, SESSION_OPENED)

#: Commands whose authority is the current Coordinator lease: an Agent actor and a
#: ``coordinatorEpoch`` are required (an Agent-issued ``mission.terminate`` also needs one).
COORDINATOR_ONLY_KINDS: Final = (
    CommandKind.MISSION_RENEW_COORDINATOR,
    CommandKind.MISSION_SUBMIT_FOR_APPROVAL,
    CommandKind.MISSION_CREATE_CHILD,
    CommandKind.MEMBERSHIP_GRANT_DELEGATION,
    CommandKind.WORK_ACCEPT_RESULT,
)

#: Commands a human issues before the Group's Membership exists (no Membership Epoch).
GROUP_CREATING_KINDS: Final = (CommandKind.MISSION_CREATE, CommandKind.MISSION_CREATE_FOLLOW_UP)

#: An extension Command or Event kind: ``ext.`` then at least three dotted segments.
EXTENSION_KIND_PATTERN: Final = "^ext\\.[a-z0-9][a-z0-9_-]*(?:\\.[a-z0-9][a-z0-9_-]*){2,}$"
